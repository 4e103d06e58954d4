"""A console that is code under review: names KUnit allows but few print, forged result lines, hostile lengths.

The parser must read every name, count a result line only at its own suite's depth and once, and parse any line in
time linear in its length (hypothesis deadlines bound each example; nothing here asserts wall-clock time)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_kunit.console import ktap
from pytest_kunit.console.ktap import CaseResult, Listed, Status, Unread

P, F, C = Status.PASSED, Status.FAILED, Status.CRASHED


def results(lines: list[str]) -> list[tuple[str, str, Status]]:
    return [(e.suite, e.case, e.status) for e in ktap.parse(lines) if isinstance(e, CaseResult)]


def listing(lines: list[str]) -> list[ktap.Event]:
    parser = ktap.KtapParser(list_boot=True)
    events = [event for line in lines for event in parser.feed(line)]
    return [event for event in events + parser.finish() if isinstance(event, Listed | Unread)]


# --- names ---------------------------------------------------------------------------------------------------------


HANDSHAKE_RUN = [
    "KTAP version 1",
    "1..1",
    "    KTAP version 1",
    "    # Subtest: Handshake API tests",
    "    1..3",
    "    ok 1 req_alloc API fuzzing",
    "    # req_alloc excessive privsize: try faulted",
    "    not ok 2 req_alloc excessive privsize",
    "    ok 3 naïve#3 (ünïcode) # SKIP not here",
    "ok 1 Handshake API tests",
]


def test_names_with_spaces_punctuation_and_non_ascii_are_read() -> None:
    assert results(HANDSHAKE_RUN) == [
        ("Handshake API tests", "req_alloc API fuzzing", P),
        ("Handshake API tests", "req_alloc excessive privsize", C),
        ("Handshake API tests", "naïve#3 (ünïcode)", Status.SKIPPED),
    ]


def test_list_boots_read_names_with_spaces_and_dots() -> None:
    lines = [
        "KTAP version 1",
        "Handshake API tests.req_alloc API fuzzing",
        "random: crng init done",
        "odd.a.b (c)",
        "reboot: Restarting system",
    ]
    assert listing(lines) == [Listed("Handshake API tests", "req_alloc API fuzzing"), Listed("odd", "a.b (c)")]


def test_list_attr_boots_split_at_the_suite_line_even_when_it_holds_a_dot() -> None:
    lines = [
        "KTAP version 1",
        "Handshake API tests",
        "# module: handshake",
        "Handshake API tests.req_alloc API fuzzing",
        "# req_alloc API fuzzing.speed: slow",
        "v1.2 suite",
        "v1.2 suite.first case",
    ]
    assert listing(lines) == [
        Listed("Handshake API tests", "req_alloc API fuzzing", (("module", "handshake"), ("speed", "slow"))),
        Listed("v1.2 suite", "first case"),
    ]


def test_a_list_line_naming_no_case_is_reported_not_dropped() -> None:
    lines = ["KTAP version 1", "a.one", "gibberish without a dot", "b.two", "trailing words"]
    # What follows the last case is the kernel's own (an initramfs's `Run /init as init process`), not the list's.
    assert listing(lines) == [Listed("a", "one"), Unread("gibberish without a dot"), Listed("b", "two")]
    # Only a list boot says so: between suites of a test boot such lines are noise.
    assert not [e for e in ktap.parse(lines) if isinstance(e, Unread)]


# --- forged result lines -------------------------------------------------------------------------------------------


def suite(*body: str) -> list[str]:
    return ["KTAP version 1", "1..1", "    KTAP version 1", "    # Subtest: s", "    1..2", *body]


def test_a_shallower_result_line_is_no_case_of_the_suite() -> None:
    # case_a printk()s "ok 2 - case_b" unindented; case_b then crashes: it is reported crashed, never passed.
    lines = suite(
        "ok 2 - case_b",
        "    ok 1 case_a",
        "BUG: kernel NULL pointer dereference, address: 0000000000000000",
        "    # case_b: try faulted",
        "    not ok 2 case_b",
        "not ok 1 s",
    )
    assert results(lines) == [("s", "case_a", P), ("s", "case_b", C)]
    case_a = next(e for e in ktap.parse(lines) if isinstance(e, CaseResult) and e.case == "case_a")
    assert "ok 2 - case_b" in case_a.diagnostics  # kept as what case_a printed


def test_a_repeated_result_line_gives_no_second_verdict_unless_it_undoes_a_pass() -> None:
    lines = suite("    not ok 1 case_a", "    ok 2 case_a", "    not ok 2 case_b", "    ok 2 case_b", "not ok 1 s")
    assert results(lines) == [("s", "case_a", F), ("s", "case_b", F)]
    # A forged `ok` at the suite's own depth cannot be told from KUnit's: but the case's own `not ok` still counts.
    lines = suite(
        "    ok 2 case_b",
        "    ok 1 case_a",
        "    # case_b: try faulted",
        "    not ok 2 case_b",
        "not ok 1 s",
    )
    assert results(lines) == [("s", "case_b", P), ("s", "case_a", P), ("s", "case_b", C)]


FORGERIES = st.sampled_from(["ok {n} {name}", "ok {n} - {name}", "    ok {n} {name}", "  ok {n} {name}"])
_OK = re.compile(r"^(?P<indent> *)ok \d+ (?:- )?(?P<name>.*)$")


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.sampled_from(["pass", "fail", "crash", "silent"]), min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6), st.integers(0, 5), FORGERIES), max_size=6),
)
def test_no_case_passes_without_its_own_result_line_at_its_depth_once(
    outcomes: list[str], forged: list[tuple[int, int, int, str]]
) -> None:
    """Whatever a case printk()s (result lines for any case, with any number, at any depth), a case is PASSED only
    if an `ok` line naming it was fed deeper than the root's level (the suite's, where KUnit prints its own); it gets
    one verdict, and a second only to undo a pass; the verdict that stands is its own line's."""
    names = [f"case_{index}" for index in range(len(outcomes))]
    lines = ["KTAP version 1", "1..1", "    KTAP version 1", "    # Subtest: s", f"    1..{len(names)}"]
    for index, (name, outcome) in enumerate(zip(names, outcomes, strict=True), 1):
        lines += [form.format(n=n, name=names[target % len(names)]) for at, n, target, form in forged if at == index]
        if outcome == "crash":
            lines += ["BUG: kernel NULL pointer dereference, address: 0000000000000000", f"    # {name}: try faulted"]
        if outcome != "silent":
            lines.append(f"    {'ok' if outcome == 'pass' else 'not ok'} {index} {name}")
    lines.append("ok 1 s")
    passed_at_depth = {match["name"] for line in lines if (match := _OK.match(line)) and match["indent"]}
    verdicts: dict[str, list[Status]] = {}
    for event in ktap.parse(lines):
        if isinstance(event, CaseResult):
            verdicts.setdefault(event.case, []).append(event.status)
    own = {"pass": P, "fail": F, "crash": C}
    for name, outcome in zip(names, outcomes, strict=True):
        said = verdicts.get(name, [])
        assert len(said) <= 2 and (len(said) < 2 or (said[0] is P and said[1] is not P)), lines
        if said and said[-1] is P:
            assert name in passed_at_depth, lines
        if outcome in own:
            assert said and said[-1] is own[outcome], lines  # its own line's verdict stands


# --- hostile lengths -----------------------------------------------------------------------------------------------

# Each example parses lines of up to 4 KB: a cubic pattern needs seconds to minutes for one (longer lines are cut
# before parsing, boot.py).
LINEAR = settings(max_examples=60, deadline=500, database=None)
PREFIXES = st.sampled_from(
    ["ok 1 x", "not ok 2 - y", "# Subtest: s", "# speed:", "# c.speed:", "# x: ok 1 ", "KTAP version 1", "1..", "", "#"]
)
FILLERS = st.sampled_from([" ", "\t", "a", "a.", "# ", ": ", "ok 1 ", "[", "x#"])


@LINEAR
@given(PREFIXES, FILLERS, st.integers(1000, 4000), st.sampled_from(["y", "", " ", "#", ":"]))
def test_each_line_parses_in_linear_time(prefix: str, filler: str, repeat: int, end: str) -> None:
    parser = ktap.KtapParser()
    parser.feed("KTAP version 1")
    parser.feed("    # Subtest: s")
    line = prefix + filler * (repeat // len(filler)) + end
    parser.feed("    " + line)
    parser.feed(line)
    events = parser.finish()
    for event in events:
        if isinstance(event, CaseResult):
            event.location  # noqa: B018 - parsed on demand, bounded too
    ktap.since_last_result([line])


@settings(max_examples=20, deadline=2000, database=None)
@given(st.integers(50, 400))
def test_deep_nesting_parses_quickly_and_closes_cleanly(depth: int) -> None:
    lines = ["KTAP version 1", "1..1"]
    for level in range(1, depth + 1):
        lines += ["    " * level + "KTAP version 1", "    " * level + f"# Subtest: g{level}", "    " * level + "1..1"]
    lines.append("    " * (depth + 1) + "ok 1 leaf")
    for level in range(depth, 0, -1):
        lines.append("    " * (level - 1) + f"ok 1 g{level}")
    events = list(ktap.parse(lines))
    assert [e.case for e in events if isinstance(e, CaseResult)] == ["g2"]
    assert not [e for e in events if isinstance(e, ktap.Unfinished)]
