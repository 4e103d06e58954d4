"""A console that is code under review: names KUnit allows but few print, forged result lines, hostile lengths.

The parser must read every name, count a result line only at its own suite's depth and once, and parse any line in
time linear in its length (hypothesis deadlines bound each example; nothing here asserts wall-clock time)."""

from __future__ import annotations

import re
import time

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


def test_names_that_read_like_kernel_messages_or_comments_are_listed() -> None:
    # 6.1's list: `suite.case` lines only; a name may hold `: `, start with `#`, hold brackets and quotes.
    lines = [
        "KTAP version 1",
        "net: core.first",
        "random: crng init done",  # no dot: no name, a message between two cases
        "#hash.case [1] 'q'",
        'bad: suite."quoted": case',
    ]
    assert listing(lines) == [
        Listed("net: core", "first"),
        Listed("#hash", "case [1] 'q'"),
        Listed("bad: suite", '"quoted": case'),
    ]


def test_a_suite_line_that_reads_like_a_message_is_a_suite_when_its_cases_follow() -> None:
    # 6.12's list names each suite first: `net: core` is a suite line, `input: ...` between suites a kernel message.
    lines = [
        "KTAP version 1",
        "first",
        "first.a",
        "input: ImExPS/2 Generic Explorer Mouse as /devices/platform/i8042/serio1/input/input2",
        "net: core",
        "net: core.b",
        "# lead",
        "# module: hashes",
        "# lead.c",
    ]
    assert listing(lines) == [
        Listed("first", "a"),
        Listed("net: core", "b"),
        Listed("# lead", "c", (("module", "hashes"),)),
    ]


def empty_suites(lines: list[str]) -> list[ktap.Event]:
    parser = ktap.KtapParser(list_boot=True)
    events = [event for line in lines for event in parser.feed(line)] + parser.finish()
    return [event for event in events if isinstance(event, Listed | Unread | ktap.EmptySuite)]


def test_a_suite_listed_with_no_cases_is_an_empty_suite_not_an_unread_line() -> None:
    # 6.12's all_tests.config on UML: kunit_fault's one case needs CONFIG_KUNIT_FAULT_TEST, which UML lacks.
    lines = [
        "KTAP version 1",
        "kunit_status",
        "kunit_status.kunit_status_set_failure_test",
        "kunit_fault",
        "# module: kunit_test",
        "kunit_device",
        "kunit_device.kunit_device_test",
    ]
    assert empty_suites(lines) == [
        Listed("kunit_status", "kunit_status_set_failure_test"),
        ktap.EmptySuite("kunit_fault", (("module", "kunit_test"),)),
        Listed("kunit_device", "kunit_device_test"),
    ]
    # The first suite of the list may be the empty one: its line is judged once the list shows its suite lines.
    assert empty_suites(["KTAP version 1", "kunit_fault", "kunit_status", "kunit_status.t"]) == [
        ktap.EmptySuite("kunit_fault"),
        Listed("kunit_status", "t"),
    ]
    # A list without suite lines (6.1) has no empty suites: a line naming no case there is unread.
    assert empty_suites(["KTAP version 1", "a.one", "gibberish", "b.two"]) == [
        Listed("a", "one"),
        Unread("gibberish"),
        Listed("b", "two"),
    ]


def test_a_test_boot_prints_an_empty_suite_as_a_skipped_suite() -> None:
    # What the kernel prints for a suite with no cases (lib/kunit/test.c: a plan of 0, kunit_suite_has_succeeded's
    # KUNIT_SKIPPED): the same suite the list named, skipped, with no case.
    lines = ["KTAP version 1", "1..1", "    KTAP version 1", "    # Subtest: kunit_fault", "    1..0"]
    events = list(ktap.parse([*lines, "ok 1 kunit_fault # SKIP "]))
    assert [e for e in events if isinstance(e, ktap.SuiteFinished)] == [
        ktap.SuiteFinished("kunit_fault", Status.SKIPPED)
    ]
    assert not [e for e in events if isinstance(e, CaseResult | ktap.Unfinished)]


def test_a_forged_result_at_any_depth_but_its_suites_passes_no_case() -> None:
    # case_a printk()s `ok 2 case_b` at a depth between the root's and the suite's, or deeper; then the guest panics.
    for indent in ("  ", "      ", "        ", "\t"):
        lines = suite(f"{indent}ok 2 case_b", "    ok 1 case_a", "Kernel panic - not syncing: Fatal exception")
        assert results(lines) == [("s", "case_a", P)], indent
        assert [e.reported for e in ktap.parse(lines) if isinstance(e, ktap.Unfinished)] == [1]
    # Nor does a forged closing line at another depth end the suite early.
    lines = suite("  ok 1 s", "    ok 1 case_a", "    ok 2 case_b", "ok 1 s")
    assert results(lines) == [("s", "case_a", P), ("s", "case_b", P)]


def test_a_result_number_of_thousands_of_digits_is_no_result_and_raises_nothing() -> None:
    huge = "9" * 5000
    lines = suite(f"    ok {huge} x", f"    1..{huge}", f"    not ok {huge}", "    ok 1 case_a")
    assert results(lines) == [("s", "case_a", P)]
    assert ktap.since_last_result([f"ok {huge} x"]) == [f"ok {huge} x"]


# --- shapes that once made the parser quadratic or unbounded -----------------------------------------------------
# Each bound is generous: the shape took minutes (or gigabytes) before and takes well under a second now, so a loaded
# machine cannot make these flaky.


def parse_within(lines: list[str], seconds: float) -> list[ktap.Event]:
    began = time.perf_counter()
    events = list(ktap.parse(lines))
    assert time.perf_counter() - began < seconds
    return events


def test_sixteen_thousand_subtests_at_one_indentation_parse_in_seconds() -> None:
    # 380 KiB: each `# Subtest:` pushed a block that every later result line scanned (73 s; 0.4 s now).
    lines = ["KTAP version 1", "1..1", *(f"# Subtest: g{n}" for n in range(16_000)), *(["ok 1 x"] * 16_000)]
    parse_within(lines, 10.0)


def test_wide_deep_long_and_many_plans_parse_in_seconds() -> None:
    wide = ["KTAP version 1", "1..1", "    # Subtest: s", *(f"    ok {n} case_{n}" for n in range(1, 50_001)), "ok 1 s"]
    assert len([e for e in parse_within(wide, 10.0) if isinstance(e, CaseResult)]) == 50_000
    deep = ["KTAP version 1", *(" " * level + f"# Subtest: g{level}" for level in range(1, 5_001))]
    deep += [" " * level + f"ok 1 g{level + 1}" for level in range(5_000, 0, -1)]
    parse_within(deep, 10.0)
    long = ["KTAP version 1", "    # Subtest: s", *(["    # " + "x: " * 1300] * 2_000), "    ok 1 c"]
    parse_within(long, 10.0)
    plans = ["KTAP version 1", "1..1", "    # Subtest: s", *(f"    1..{n}" for n in range(50_000))]
    parse_within(plans, 10.0)


def test_one_plan_line_announces_no_more_than_the_bound() -> None:
    # A replayed 39-byte console once stood for three million unfinished cases (8 s, 887 MiB).
    head = ["KTAP version 1", "1..1", "    # Subtest: s"]
    (unfinished,) = [e for e in ktap.parse([*head, "    1..3000000"]) if isinstance(e, ktap.Unfinished)]
    assert unfinished.planned is None
    (bounded,) = [e for e in ktap.parse([*head, f"    1..{ktap.MAX_PLAN}"]) if isinstance(e, ktap.Unfinished)]
    assert bounded.planned == ktap.MAX_PLAN


def test_result_lines_of_names_that_start_with_a_hash_or_are_a_dash() -> None:
    lines = [
        "KTAP version 1",
        "1..2",
        "    KTAP version 1",
        "    # Subtest: #hash",
        "    1..2",
        "    ok 1 #case [1]",
        "    ok 2 #skipped # SKIP not here",
        "ok 1 #hash",
        "    KTAP version 1",
        "    # Subtest: -",
        "    1..1",
        "    not ok 1 -",
        "not ok 2 -",
    ]
    assert results(lines) == [("#hash", "#case [1]", P), ("#hash", "#skipped", Status.SKIPPED), ("-", "-", F)]
    assert [(e.suite, e.status) for e in ktap.parse(lines) if isinstance(e, ktap.SuiteFinished)] == [
        ("#hash", P),
        ("-", F),
    ]
    # A `#` that a directive follows still opens it, and TAP's dash before a name is still no part of it.
    assert results(suite("    ok 1 # SKIP no name", "    ok 2 - case_b")) == [
        ("s", "", Status.SKIPPED),
        ("s", "case_b", P),
    ]


def test_a_forged_closing_line_between_depths_does_not_close_a_suite_opened_by_its_version_line() -> None:
    # KTAP's own nesting: no `# Subtest:`, the suite named by its closing line alone, at the root's depth.
    lines = ["KTAP version 1", "1..1", "    KTAP version 1", "    1..2", "    ok 1 case_a", "  ok 1 forged"]
    lines += ["    ok 2 case_b", "ok 1 s"]
    assert results(lines) == [("s", "case_a", P), ("s", "case_b", P)]


def test_a_list_line_that_looks_like_ktap_is_a_name_but_a_plan_is_none() -> None:
    lines = ["KTAP version 1", "1..2", "ok 1 s.case", "# Subtest: t.case", "not ok 2 - u.c"]
    assert listing(lines) == [Listed("ok 1 s", "case"), Listed("# Subtest: t", "case"), Listed("not ok 2 - u", "c")]
