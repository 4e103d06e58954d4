"""Hypothesis fuzzing of the console parser with mangled versions of real and synthetic consoles.

Two properties: the parser never raises, and it never reports a case PASSED unless a line fed to it was an `ok`
result line naming exactly that case.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_kunit import ktap

DATA = Path(__file__).resolve().parent.parent / "data"
CONSOLES = [(DATA / path.name).read_text(errors="replace").splitlines() for path in sorted(DATA.glob("*.log"))]
# Only the KUnit part of each console (from the first version line on) plus a little boot noise: more interesting.
KTAP_PARTS = [
    lines[max(0, next((i for i, line in enumerate(lines) if "TAP version" in line), 0) - 3) :] for lines in CONSOLES
]
CORPUS = sorted({line for lines in CONSOLES for line in lines})
KTAP_WORDS = ["ok", "not ok", "1", "2", "-", "#", "SKIP", "# Subtest:", "KTAP version 1", "TAP version 14", "1..3"]
KTAP_WORDS += ["example", "example_simple_test", "value 1", "    ", "\t", "[    1.000000]", "\r", "test case crashed"]

# No example database: the run leaves nothing behind in the repository.
FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

_STAMP = re.compile(r"^\[\s*\d+\.\d+\]")
_OK = re.compile(r"ok (\S+)(.*)", re.DOTALL)


def ok_names(line: str) -> set[str]:
    """The case names an `ok` result line could name, decided independently of the parser (deliberately lenient:
    it errs towards accepting, so a failure is a real pass reported without its `ok` line)."""
    text = line.replace("\r", "").rstrip("\n")
    stamp = _STAMP.match(text)
    if stamp:
        text = text[stamp.end() :]
    text = text.lstrip()
    match = _OK.fullmatch(text)
    if not match:
        return set()
    rest = match[2].split("#", 1)[0].strip()
    return {rest, rest.removeprefix("-").strip()}


def passed_without_ok_line(lines: list[str]) -> list[ktap.CaseResult]:
    events = list(ktap.parse(lines))
    named = set().union(*(ok_names(line) for line in lines)) if lines else set()
    return [
        event
        for event in events
        if isinstance(event, ktap.CaseResult) and event.status is ktap.Status.PASSED and event.case not in named
    ]


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
    ktap.parse_list(lines)
    ktap.fault_lines(lines)
    assert passed_without_ok_line(lines) == []


# --- the oracle itself must be able to say no --------------------------------------------------------------------


def test_oracle_accepts_ok_lines_and_rejects_everything_else() -> None:
    assert ok_names("    ok 3 example_simple_test") >= {"example_simple_test"}
    assert ok_names("[    1.2] ok 1 - old_style # SKIP why") >= {"old_style"}
    assert ok_names("    not ok 2 example_failing_test") == set()
    assert ok_names("    # example: ok 1 - value 1") == set()
    assert ok_names("okay 1 x") == set()


def test_oracle_catches_a_pass_with_no_ok_line() -> None:
    # A `not ok` line only: nothing may pass.  Feed an `ok` line for a *different* case to be sure names are compared.
    lines = ["KTAP version 1", "    # Subtest: s", "    ok 1 other", "    not ok 2 target", "ok 1 s"]
    assert passed_without_ok_line(lines) == []
    forged = [ktap.CaseResult("s", "target", ktap.Status.PASSED)]
    named = set().union(*(ok_names(line) for line in lines))
    assert [event for event in forged if event.case not in named] == forged


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
        char = draw(st.sampled_from(list(" #-.0123456789okntSKIP\t\r[]:") + ["\x00", "\u00e9"]))
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
@given(st.permutations(next(lines for lines in KTAP_PARTS if any("example_params_failing_test" in l for l in lines))))
def test_reordered_failing_console(lines: list[str]) -> None:
    check(list(lines))
