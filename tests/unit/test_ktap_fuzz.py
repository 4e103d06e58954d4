"""Hypothesis fuzzing of the console parser with mangled versions of real and synthetic consoles.

Two properties: the parser never raises, and it never reports a case PASSED unless a line fed to it was an `ok`
result line naming exactly that case (for a parameter, also a 5.11-5.15 `# case: ok N - param` line).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_kunit.console import ktap, ktap_results, oops

DATA = Path(__file__).resolve().parent.parent / "data"
CONSOLES = [(DATA / path.name).read_text(errors="replace").splitlines() for path in sorted(DATA.glob("*.log"))]
# Only the KUnit part of each console (from the first version line on) plus a little boot noise: more interesting.
KTAP_PARTS = [
    lines[max(0, next((i for i, line in enumerate(lines) if "TAP version" in line), 0) - 3) :] for lines in CONSOLES
]
CORPUS = sorted({line for lines in CONSOLES for line in lines})
KTAP_WORDS = ["ok", "not ok", "1", "2", "-", "#", "SKIP", "# Subtest:", "KTAP version 1", "TAP version 14", "1..3"]
KTAP_WORDS += ["example", "example_simple_test", "value 1", "    ", "\t", "[    1.000000]", "\r", "test case crashed"]
KTAP_WORDS += ["[    0.5][    T1]", "# example_simple_test.speed: slow", "# module: m", "# XFAIL", "# TODO"]

# No example database: the run leaves nothing behind in the repository.
FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

_STAMP = re.compile(r"^(?:\[\s*\d+\.\d+\])?(?:\[\s*[TC]\d+\])?")
_OK_NUMBER = re.compile(r"ok \d+", re.DOTALL)
_DIRECTIVE = re.compile(r"#\s*(\w+)")
_OLD_PARAM_PREFIX = re.compile(r"#\s*\S+: ")


def passing_name(line: str) -> str | None:
    """The name an `ok` line without a SKIP directive gives its test, or None if the line is no such line.

    Written from the KTAP/TAP grammar (`ok N name`, `ok N - name`, `# DIRECTIVE reason`), independently of the
    parser's regular expressions, after the same console clean-up the parser documents: carriage returns dropped,
    one leading printk prefix (`[ seconds.fraction]`, `[ T1]`/`[ C0]` caller id, or both) removed, leading spaces and
    tabs ignored.
    """
    text = line.rstrip("\r\n").replace("\r", "")
    text = _STAMP.sub("", text, count=1).lstrip(" \t")
    number = _OK_NUMBER.match(text)
    if not number:
        return None
    rest = text[number.end() :]
    # A comment opens at a `#` that starts the rest or follows whitespace; a name may hold a `#` of its own.
    hashes = [i for i, char in enumerate(rest) if char == "#" and (i == 0 or rest[i - 1].isspace())]
    body, hash_, tail = (rest[: hashes[0]], "#", rest[hashes[0] + 1 :]) if hashes else (rest, "", "")
    if hash_:
        directive = _DIRECTIVE.match(hash_ + tail)
        if directive and directive[1].upper() == "SKIP":
            return None
    if body.strip() == "":
        return ""
    if body.startswith(" - ") or body.rstrip() == " -":
        return body[3:].strip()
    if body.startswith(" "):
        return body[1:].strip()
    return None  # "ok 1foo", "ok 1\tfoo": not a result line


def old_style_param_name(line: str) -> str | None:
    """The parameter a 5.11-5.15 `# case: ok N - param` diagnostic passes, or None."""
    text = _STAMP.sub("", line.rstrip("\r\n").replace("\r", ""), count=1).lstrip(" \t")
    prefix = _OLD_PARAM_PREFIX.match(text)
    return passing_name(text[prefix.end() :]) if prefix else None


def passed_without_ok_line(lines: list[str]) -> list[ktap.CaseResult | ktap.ParamResult]:
    """Every case or parameter reported PASSED although no line fed was a non-SKIP `ok` line with its exact name."""
    named = {passing_name(line) for line in lines}
    param_named = named | {old_style_param_name(line) for line in lines}
    events = list(ktap.parse(lines))
    results = [event for event in events if isinstance(event, ktap.CaseResult)]
    offenders: list[ktap.CaseResult | ktap.ParamResult] = []
    offenders += [r for r in results if r.status is ktap.Status.PASSED and r.case not in named]
    params = [param for result in results for param in result.params]
    offenders += [p for p in params if p.status is ktap.Status.PASSED and p.name not in param_named]
    return offenders


def check(lines: list[str]) -> None:
    parser = ktap.KtapParser()
    events: list[ktap.Event] = []
    for line in lines:
        events.extend(parser.feed(line))
    events.extend(parser.finish())
    for event in events:
        if isinstance(event, ktap.CaseResult):
            event.location  # noqa: B018 - must not raise either
            assert isinstance(event.status, ktap.Status)
    oops.fault_lines(lines)
    assert passed_without_ok_line(lines) == []


# --- the oracle itself must be able to say no --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("    ok 3 example_simple_test", "example_simple_test"),
        ("ok 1 - old_style", "old_style"),
        ("[    1.200000]     ok 2 - stamped # TODO later", "stamped"),
        ("\tok 7 value 1\r", "value 1"),
        ("ok 1", ""),
        ("ok 1 -", ""),
        ("ok 1 -foo", "-foo"),
        ("    ok 1 foo # SKIP why", None),
        ("    ok 1 foo #skip", None),
        ("    not ok 2 example_failing_test", None),
        ("[    0.060000][    T1]     ok 1 caller", "caller"),
        ("[    C0] ok 1 cpu", "cpu"),
        ("    # example: ok 1 - value 1", None),
        ("okay 1 x", None),
        ("ok x name", None),
        ("ok 1foo", None),
    ],
)
def test_oracle_names(line: str, name: str | None) -> None:
    assert passing_name(line) == name


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("    # example_params_test: ok 1 - value 1", "value 1"),
        ("[    1.5]     # pc: ok 2 - value 2 # TODO x", "value 2"),
        ("    # pc: not ok 2 - value 2", None),
        ("    # pc: ok 3 - skipped # SKIP", None),
        ("    ok 1 value 1", None),
    ],
)
def test_oracle_old_style_param_names(line: str, name: str | None) -> None:
    assert old_style_param_name(line) == name


def test_oracle_catches_a_pass_with_no_ok_line(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ["KTAP version 1", "    # Subtest: s", "    ok 1 other", "    not ok 2 target", "ok 1 s"]
    assert passed_without_ok_line(lines) == []
    # A parser that turned every result into a pass must be caught, for cases and parameters alike.
    real_verdict = ktap_results.verdict
    monkeypatch.setattr(ktap_results, "verdict", lambda ok, directive, diagnostics: real_verdict(True, None, ()))
    assert [(r.suite, r.case) for r in passed_without_ok_line(lines) if isinstance(r, ktap.CaseResult)] == [
        ("s", "target")
    ]
    params = ["KTAP version 1", "    # Subtest: s", "        # Subtest: pc", "        not ok 1 p", "    ok 1 pc"]
    assert [r.name for r in passed_without_ok_line(params) if isinstance(r, ktap.ParamResult)] == ["p"]


# --- strategies ----------------------------------------------------------------------------------------------------

random_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)
word_salad = st.lists(st.sampled_from(KTAP_WORDS), min_size=1, max_size=6).map(" ".join)
any_line = st.one_of(st.sampled_from(CORPUS), random_text, word_salad)


@st.composite
def garbled(draw: st.DrawFn, line: str) -> str:
    """Insert, delete or replace a few characters."""
    chars = list(line)
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(chars)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(st.sampled_from([*" #-.0123456789okntSKIP\t\r[]:", "\x00", "\u00e9"]))
        if action == "insert" or not chars:
            chars.insert(position, char)
        elif position < len(chars):
            if action == "delete":
                del chars[position]
            else:
                chars[position] = char
    return "".join(chars)


@st.composite
def mangled_console(draw: st.DrawFn) -> list[str]:
    lines = list(draw(st.sampled_from(KTAP_PARTS)))
    # Truncate somewhere (a guest that died), maybe also drop the start.
    end = draw(st.integers(0, len(lines)))
    start = draw(st.integers(0, min(end, 5)))
    lines = lines[start:end]
    for _ in range(draw(st.integers(0, 12))):
        action = draw(st.sampled_from(["interleave", "garble", "duplicate", "swap", "delete", "random"]))
        if action == "interleave" or not lines:
            lines.insert(draw(st.integers(0, len(lines))), draw(any_line))
            continue
        index = draw(st.integers(0, len(lines) - 1))
        if action == "garble":
            lines[index] = draw(garbled(lines[index]))
        elif action == "duplicate":
            lines.insert(draw(st.integers(0, len(lines))), lines[index])
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        elif action == "delete":
            del lines[index]
        else:
            lines[index] = draw(random_text)
    return lines


@st.composite
def two_consoles_interleaved(draw: st.DrawFn) -> list[str]:
    first = list(draw(st.sampled_from(KTAP_PARTS)))
    second = list(draw(st.sampled_from(KTAP_PARTS)))
    rng = draw(st.randoms(use_true_random=False))
    merged: list[str] = []
    while first or second:
        source = first if (first and (not second or rng.random() < 0.5)) else second
        merged.append(source.pop(0))
    return merged


# --- properties ----------------------------------------------------------------------------------------------------


@FUZZ
@given(mangled_console())
def test_mangled_consoles(lines: list[str]) -> None:
    check(lines)


@FUZZ
@given(two_consoles_interleaved())
def test_two_consoles_interleaved(lines: list[str]) -> None:
    check(lines)


@FUZZ
@given(st.lists(any_line, max_size=60))
def test_lines_drawn_at_random(lines: list[str]) -> None:
    check(["KTAP version 1", *lines])


@FUZZ
@given(st.lists(st.one_of(word_salad, st.sampled_from(CORPUS)).flatmap(garbled), max_size=25))
def test_garbled_ktap_words(lines: list[str]) -> None:
    check(["KTAP version 1", "    # Subtest: s", *lines])


@FUZZ
@given(st.permutations(next(part for part in KTAP_PARTS if any("example_params_failing_test" in x for x in part))))
def test_reordered_failing_console(lines: list[str]) -> None:
    check(list(lines))
