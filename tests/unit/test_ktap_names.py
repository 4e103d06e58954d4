"""Names generated at random through a list boot and a test boot: every listed case is read back exactly (an item)
or reported (an error), and no case passes without its own result line.

Names hold what KUnit allows and few print: `: ` (read as kernel messages once), a leading `#` (read as comments
once), brackets, quotes, dots, commas, globs and non-ASCII. Left out are only the kernel's own ambiguities: a suite
named `a.b` beside a suite `a` prints lines no reader can tell apart; before 6.12 a suite's dot is where the list's
line is split, and so it is in 6.12's list until its first suite line is followed by that suite's cases."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_kunit.console import ktap
from pytest_kunit.console import ktap_lines as grammar
from pytest_kunit.console.ktap import CaseResult, EmptySuite, Listed, Status, Unread

# Few letters, so that no name spells a KTAP keyword (`KTAP version`, `# speed:`, `# Subtest:`) by chance. A `#` after
# whitespace opens a result line's comment (`ok 1 name # reason`): a name holding one is cut there, as kunit.py cuts
# it, so its case gets no verdict (an error), which the first property allows and the second does not exercise.
NAME = st.text(alphabet="ab é中:#[]'\".,*-()", min_size=1, max_size=10).filter(
    lambda name: name == name.strip() and grammar.clean(name) == name and not re.search(r"\s#|^- ", name)
)
OUTCOMES = st.sampled_from(["pass", "fail", "skip", "silent"])


@st.composite
def suites(draw: st.DrawFn, suite_lines: bool) -> dict[str, list[str]]:
    names = draw(st.lists(NAME if suite_lines else NAME.filter(lambda name: "." not in name), max_size=5, unique=True))
    names = [name for name in names if not any(name.startswith(other + ".") for other in names if other != name)]
    # Cases `a` and `a.b` of one suite print `s.a` and `s.a.b`, which is also suite `s.a`'s line and its case `b`.
    unnested = st.lists(NAME, max_size=4, unique=True).filter(
        lambda cases: not any(case.startswith(other + ".") for case in cases for other in cases)
    )
    drawn = {name: draw(unnested) for name in names}
    # Until a suite's line is followed by its cases, a list's first lines could be 6.1's `suite.case`s.
    first = next((index for index, cases in enumerate(drawn.values()) if cases), len(drawn))
    return {name: cases for index, (name, cases) in enumerate(drawn.items()) if index >= first or "." not in name}


def list_boot(suites: dict[str, list[str]], suite_lines: bool, messages: list[int]) -> list[str]:
    """What `kunit.action=list` prints (6.12: each suite's line first), with kernel messages between suites."""
    lines = ["Linux version 6.12.0", "KTAP version 1"]
    for index, (suite, cases) in enumerate(suites.items()):
        if index in messages:
            lines.append("random: crng init done")
        lines += [suite] if suite_lines else []
        lines += [f"{suite}.{case}" for case in cases]
    return [*lines, "reboot: Restarting system"]


@settings(max_examples=300, deadline=None, database=None)
@given(st.data(), st.booleans(), st.lists(st.integers(0, 5), max_size=3))
def test_every_listed_case_is_read_back_exactly_or_reported(
    data: st.DataObject, lines_first: bool, at: list[int]
) -> None:
    named = data.draw(suites(lines_first))
    parser = ktap.KtapParser(list_boot=True)
    lines = list_boot(named, lines_first, at)
    events = [event for line in lines for event in parser.feed(line)] + parser.finish()
    listed = [(event.suite, event.case) for event in events if isinstance(event, Listed)]
    unread = [event.line for event in events if isinstance(event, Unread)]
    empty = [event.suite for event in events if isinstance(event, EmptySuite)]
    assert listed == [(suite, case) for suite, cases in named.items() for case in cases], lines
    assert not unread, lines
    # A suite listed with no cases is read as such where the kernel names suites (6.12), unless its name reads as a
    # kernel message and no case follows it to say otherwise: the last suite's own line is the list's end, unread.
    last_with_cases = max((index for index, cases in enumerate(named.values()) if cases), default=-1)
    shown = [
        suite
        for index, (suite, cases) in enumerate(named.items())
        if not cases and not grammar.looks_like_message(suite) and index < last_with_cases
    ]
    assert empty == (shown if lines_first else []), lines


def run_boot(
    named: dict[str, list[str]], outcomes: list[str], forged: list[tuple[int, int]]
) -> tuple[list[str], set[tuple[str, str]], set[tuple[str, str]]]:
    """What a test boot prints: each case's result line at its suite's depth (none for a silent one: the guest
    dies), and result lines a case printk()s for others at any depth; with the cases an `ok` line named at their
    suite's depth (the one place KUnit prints a case's own), and those whose own line said `not ok`."""
    lines = ["KTAP version 1", f"1..{len(named)}"]
    everyone = [case for cases in named.values() for case in cases]
    passed: set[tuple[str, str]] = set()
    failed: set[tuple[str, str]] = set()
    turn = 0
    for number, (suite, cases) in enumerate(named.items(), 1):
        lines += ["    KTAP version 1", f"    # Subtest: {suite}", f"    1..{len(cases)}"]
        for index, case in enumerate(cases, 1):
            for when, target in forged:
                if when == turn and everyone:
                    name = everyone[target % len(everyone)]
                    lines.append(f"{' ' * (target % 9)}ok {index} {name}")
                    if target % 9 == 4 and name in cases:
                        passed.add((suite, name))  # at the suite's own depth: nothing tells it from KUnit's
            outcome = outcomes[turn % len(outcomes)]
            turn += 1
            if outcome == "silent":
                return [*lines, "Kernel panic - not syncing: Fatal exception"], passed, failed
            if outcome == "skip":
                lines.append(f"    ok {index} {case} # SKIP")
            else:
                lines.append(f"    {'ok' if outcome == 'pass' else 'not ok'} {index} {case}")
                (passed if outcome == "pass" else failed).add((suite, case))
        lines.append(f"ok {number} {suite}")
    return lines, passed, failed


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.data(),
    st.lists(OUTCOMES, min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 40)), max_size=5),
)
def test_no_case_passes_without_its_own_result_line(
    data: st.DataObject, outcomes: list[str], forged: list[tuple[int, int]]
) -> None:
    """Whatever result lines the cases printk() (for any case, at any depth), a listed case ends PASSED only if its
    own `ok` line was printed, and never if its own line said `not ok`; a case with no line of its own has no
    verdict, which the runner reports as an error."""
    named = data.draw(suites(True))
    lines, passed, failed = run_boot(named, outcomes, forged)
    verdicts: dict[tuple[str, str], Status] = {}
    for event in ktap.parse(lines):
        if isinstance(event, CaseResult):
            verdicts[(event.suite, event.case)] = event.status
    listed = {(suite, case) for suite, cases in named.items() for case in cases}
    for case_id, status in verdicts.items():
        if case_id in listed and status is Status.PASSED:
            assert case_id in passed, lines
        # A forged `ok` line at the case's own depth and number, before its own `not ok`, is one nothing tells from
        # KUnit's (run_boot counts it as passed): only a `not ok` with no such twin must never pass.
        if case_id in failed - passed:
            assert status is not Status.PASSED, lines


def test_a_number_run_into_a_hash_is_no_result_line() -> None:
    # Hypothesis found it: `ok 3#name` passed a case named `#name` that no line reported with its own result.
    lines = ["KTAP version 1", "1..1", "    # Subtest: s", "    1..2", "    ok 1 a", "    ok 2#b", "ok 1 s"]
    cases = [event for event in ktap.parse(lines) if isinstance(event, ktap.CaseResult)]
    assert [(case.case, case.status) for case in cases] == [("a", ktap.Status.PASSED)]
