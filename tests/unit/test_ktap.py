"""The console parser against every recorded and synthetic console, plus hand-written edge cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_kunit.console import ktap, oops
from pytest_kunit.console import ktap_lines as grammar
from pytest_kunit.console.ktap import (
    CaseResult,
    KtapStarted,
    Location,
    ParamResult,
    Status,
    SuiteFinished,
    SuiteStarted,
    Unfinished,
)

DATA = Path(__file__).resolve().parent.parent / "data"

P = Status.PASSED
F = Status.FAILED
S = Status.SKIPPED
C = Status.CRASHED
T = Status.TIMED_OUT
X = Status.XFAIL


def lines_of(name: str) -> list[str]:
    return (DATA / name).read_text(errors="replace").splitlines()


def events_of(name: str) -> list[ktap.Event]:
    return list(ktap.parse(lines_of(name)))


def parse_text(text: str) -> list[ktap.Event]:
    return list(ktap.parse(text.splitlines()))


def cases(events: list[ktap.Event]) -> list[CaseResult]:
    return [event for event in events if isinstance(event, CaseResult)]


def statuses(events: list[ktap.Event]) -> list[tuple[str, str, Status]]:
    return [(case.suite, case.case, case.status) for case in cases(events)]


def case(events: list[ktap.Event], suite: str, name: str) -> CaseResult:
    found = [event for event in cases(events) if (event.suite, event.case) == (suite, name)]
    assert len(found) == 1, found
    return found[0]


def listed(lines: list[str]) -> list[tuple[str, str]]:
    """The (suite, case) pairs a `kunit.action=list` boot printed, in execution order."""
    return [(event.suite, event.case) for event in ktap.parse(lines) if isinstance(event, ktap.Listed)]


def skeleton(events: list[ktap.Event]) -> list[tuple[str, ...]]:
    """The event stream without diagnostics: the order of starts, results, finishes."""
    shape: list[tuple[str, ...]] = []
    for event in events:
        if isinstance(event, KtapStarted):
            shape.append(("start",))
        elif isinstance(event, SuiteStarted):
            shape.append(("suite", event.suite))
        elif isinstance(event, SuiteFinished):
            shape.append(("end", event.suite, event.status.value))
        elif isinstance(event, CaseResult):
            shape.append(("case", event.suite, event.case, event.status.value))
        elif isinstance(event, ktap.Listed):
            shape.append(("listed", event.suite, event.case))
        elif isinstance(event, ktap.Unread):
            shape.append(("unread", event.line))
        else:
            shape.append(("unfinished", event.suite))
    return shape


ALL_LOGS = sorted(path.name for path in DATA.glob("*.log"))


# --- recorded consoles ---------------------------------------------------------------------------------------------

KUNIT_ALL_CASES = [
    ("kunit_executor_test", "parse_filter_test"),
    ("kunit_executor_test", "filter_suites_test"),
    ("kunit_executor_test", "filter_suites_test_glob_test"),
    ("kunit_executor_test", "filter_suites_to_empty_test"),
    ("kunit-try-catch-test", "kunit_test_try_catch_successful_try_no_catch"),
    ("kunit-try-catch-test", "kunit_test_try_catch_unsuccessful_try_does_catch"),
    ("kunit-resource-test", "kunit_resource_test_init_resources"),
    ("kunit-resource-test", "kunit_resource_test_alloc_resource"),
    ("kunit-resource-test", "kunit_resource_test_destroy_resource"),
    ("kunit-resource-test", "kunit_resource_test_remove_resource"),
    ("kunit-resource-test", "kunit_resource_test_cleanup_resources"),
    ("kunit-resource-test", "kunit_resource_test_proper_free_ordering"),
    ("kunit-resource-test", "kunit_resource_test_static"),
    ("kunit-resource-test", "kunit_resource_test_named"),
    ("kunit-log-test", "kunit_log_test"),
    ("kunit_status", "kunit_status_set_failure_test"),
    ("kunit_status", "kunit_status_mark_skipped_test"),
    ("string-stream-test", "string_stream_test_empty_on_creation"),
    ("string-stream-test", "string_stream_test_not_empty_after_add"),
    ("string-stream-test", "string_stream_test_get_string"),
    ("example", "example_simple_test"),
    ("example", "example_skip_test"),
    ("example", "example_mark_skipped_test"),
    ("example", "example_all_expect_macros_test"),
]


def test_parse_list_gives_the_24_cases_in_order() -> None:
    assert listed(lines_of("kunit-6.1.192-list.log")) == KUNIT_ALL_CASES


def test_parse_list_ignores_lines_before_ktap_and_strips_timestamps() -> None:
    lines = [
        "early.noise_before_ktap",
        "[    0.100000] KTAP version 1",
        "[    0.200000] suite-a.case_one",
        "  suite-a.case_two\r",
        "input: ImExPS/2 Generic Explorer Mouse as /devices/platform/i8042/serio1/input/input2",
        "1..2",
        "random: crng init done.",
        "# hash suite.x",
        "suite-b.case.three",
    ]
    # Split at the first dot, as the kernel splits kunit.filter_glob: a case name may hold dots; a suite's name may
    # start with `#` (a list boot prints no comments), so only a message with no dot is no case.
    assert listed(lines) == [
        ("suite-a", "case_one"),
        ("suite-a", "case_two"),
        ("# hash suite", "x"),
        ("suite-b", "case.three"),
    ]


def parsed_list_boot(lines: list[str]) -> list[ktap.Event]:
    parser = ktap.KtapParser(list_boot=True)
    return [event for line in lines for event in parser.feed(line)] + parser.finish()


def test_what_follows_a_list_s_last_case_is_the_kernel_s_not_the_list_s() -> None:
    """A kernel with an initramfs goes on after KUnit's list (`Run /init as init process`, then its reboot): no part
    of the list, never an unread line; a line naming no case between two that do is one."""
    head = ["KTAP version 1", "example.example_simple_test"]
    tail = ["Run /init as init process", "reboot: Restarting system"]
    events = parsed_list_boot([*head, "example.example_skip_test", *tail])
    assert not [event for event in events if isinstance(event, ktap.Unread)]
    assert [(e.suite, e.case) for e in events if isinstance(e, ktap.Listed)] == [
        ("example", "example_simple_test"),
        ("example", "example_skip_test"),
    ]
    inside = parsed_list_boot([*head, "Run /init as init process", "example.example_skip_test", *tail])
    assert [event.line for event in inside if isinstance(event, ktap.Unread)] == ["Run /init as init process"]


def test_parse_list_without_ktap_header_finds_nothing() -> None:
    assert listed(["example.example_simple_test"]) == []


def test_all_suites_console() -> None:
    events = events_of("kunit-6.1.192-all.log")
    assert [(c.suite, c.case) for c in cases(events)] == KUNIT_ALL_CASES
    expected_status = {
        ("example", "example_skip_test"): S,
        ("example", "example_mark_skipped_test"): S,
    }
    assert statuses(events) == [(s, c, expected_status.get((s, c), P)) for s, c in KUNIT_ALL_CASES]
    assert isinstance(events[0], KtapStarted)
    assert sum(isinstance(event, KtapStarted) for event in events) == 1
    suites = ["kunit_executor_test", "kunit-try-catch-test", "kunit-resource-test", "kunit-log-test"]
    suites += ["kunit_status", "string-stream-test", "example"]
    assert [e.suite for e in events if isinstance(e, SuiteStarted)] == suites
    assert [(e.suite, e.status) for e in events if isinstance(e, SuiteFinished)] == [(s, P) for s in suites]
    assert not [e for e in events if isinstance(e, Unfinished)]
    # Lines the test logged at column 0 inside the suite are that case's diagnostics.
    assert case(events, "kunit-log-test", "kunit_log_test").diagnostics == (
        "put this in log.",
        "this too.",
        "add to suite log.",
        "along with this.",
    )
    skipped = case(events, "example", "example_skip_test")
    assert skipped.reason == "this test should be skipped"
    assert skipped.diagnostics == (
        "# example_skip_test: initializing",
        "# example_skip_test: You should not see a line below.",
    )
    assert case(events, "kunit_executor_test", "parse_filter_test") == CaseResult(
        "kunit_executor_test", "parse_filter_test", P
    )


def test_filtered_console() -> None:
    events = events_of("kunit-6.1.192-filter-simple.log")
    assert skeleton(events) == [
        ("start",),
        ("suite", "example"),
        ("case", "example", "example_simple_test", "passed"),
        ("end", "example", "passed"),
    ]


def test_failing_example_console() -> None:
    events = events_of("example-failing-6.1.192.log")
    assert statuses(events) == [
        ("example", "example_simple_test", P),
        ("example", "example_skip_test", S),
        ("example", "example_mark_skipped_test", S),
        ("example", "example_all_expect_macros_test", P),
        ("example", "example_failing_test", F),
        ("example", "example_assert_failing_test", F),
        ("example", "example_params_test", P),
        ("example", "example_params_failing_test", F),
    ]
    assert [(e.suite, e.status) for e in events if isinstance(e, SuiteFinished)] == [("example", F)]

    failing = case(events, "example", "example_failing_test")
    assert failing.location == Location("lib/kunit/kunit-example-test.c", 129)
    assert failing.reason == ""
    assert failing.diagnostics == (
        "# example_failing_test: initializing",
        "# example_failing_test: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:129",
        "Expected 1 + 1 == 3, but",
        "    1 + 1 == 2",
        "# example_failing_test: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:130",
        'Expected "kunit" == "pytest", but',
    )
    asserting = case(events, "example", "example_assert_failing_test")
    assert asserting.location == Location("lib/kunit/kunit-example-test.c", 135)

    params = case(events, "example", "example_params_test")
    assert [(p.name, p.status, p.reason) for p in params.params] == [
        ("value 1", P, ""),
        ("value 2", P, ""),
        ("value 3", P, ""),
    ]
    assert params.location is None

    failing_params = case(events, "example", "example_params_failing_test")
    assert [(p.name, p.status) for p in failing_params.params] == [("value 1", P), ("value 2", F), ("value 3", P)]
    assert failing_params.location == Location("lib/kunit/kunit-example-test.c", 159)
    assert failing_params.params[1].diagnostics[:3] == (
        "# example_params_failing_test: initializing",
        "# example_params_failing_test: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:159",
        "Expected *value != 2, but",
    )
    assert failing_params.diagnostics[-1] == "# example_params_failing_test: pass:2 fail:1 skip:0 total:3"
    # Passing cases carry no location.
    assert case(events, "example", "example_simple_test").location is None


def test_param_diagnostics_keep_relative_indentation_like_plain_cases() -> None:
    failing_params = case(events_of("example-failing-6.1.192.log"), "example", "example_params_failing_test")
    # The console holds "    Expected *value != 2, but" then "        *value == 2": a plain case keeps the 4-space step
    # ("    1 + 1 == 2" above), a parameter's diagnostics should too.
    assert failing_params.params[1].diagnostics[2:] == ("Expected *value != 2, but", "    *value == 2")


# --- synthetic consoles --------------------------------------------------------------------------------------------


def test_tap14_dialect_with_dashes() -> None:
    events = events_of("synthetic-tap14-dialect.log")
    assert skeleton(events) == [
        ("start",),
        ("suite", "list-kunit-test"),
        ("case", "list-kunit-test", "list_test_list_init", "passed"),
        ("case", "list-kunit-test", "list_test_list_add", "failed"),
        ("case", "list-kunit-test", "list_test_list_del", "skipped"),
        ("case", "list-kunit-test", "list_test_list_splice", "passed"),
        ("end", "list-kunit-test", "failed"),
        ("suite", "sysctl_test"),
        ("case", "sysctl_test", "sysctl_test_api_dointvec_null_tbl_data", "passed"),
        ("case", "sysctl_test", "sysctl_test_api_dointvec_table_maxlen_unset", "passed"),
        ("end", "sysctl_test", "passed"),
        ("suite", "example"),
        ("case", "example", "example_params_test", "passed"),
        ("case", "example", "example_skip_test", "skipped"),
        ("end", "example", "passed"),
    ]
    add = case(events, "list-kunit-test", "list_test_list_add")
    assert add.location == Location("lib/list-test.c", 87)
    assert add.diagnostics == (
        "# list_test_list_add: EXPECTATION FAILED at lib/list-test.c:87",
        "Expected list.next == &b, but",
        "    list.next == 0000000000000000",
        "    &b == ffff888003e8fd10",
    )
    assert case(events, "list-kunit-test", "list_test_list_del").reason == "not applicable here"
    assert case(events, "example", "example_skip_test").reason == "this test should be skipped"
    # 5.11-5.15 printed parameters as diagnostics of their case: they are its parameters, and stay diagnostics too.
    old_params = case(events, "example", "example_params_test")
    assert old_params.params == (ParamResult("value 1", P, "", ()), ParamResult("value 2", P, "", ()))
    assert old_params.diagnostics == (
        "# example_params_test: ok 1 - value 1",
        "# example_params_test: ok 2 - value 2",
    )


def test_timestamps_on_every_line() -> None:
    events = events_of("synthetic-timestamps.log")
    assert skeleton(events) == [
        ("start",),
        ("suite", "ts-suite"),
        ("case", "ts-suite", "ts_pass", "passed"),
        ("case", "ts-suite", "ts_fail", "failed"),
        ("case", "ts-suite", "ts_skip", "skipped"),
        ("case", "ts-suite", "ts_params", "failed"),
        ("end", "ts-suite", "failed"),
        ("suite", "ts-second"),
        ("case", "ts-second", "ts_second_case", "passed"),
        ("end", "ts-second", "passed"),
    ]
    failing = case(events, "ts-suite", "ts_fail")
    assert failing.location == Location("lib/ts-test.c", 42)
    # Timestamps are gone and the indentation below the case's own level survives.
    assert failing.diagnostics == (
        "# ts_fail: EXPECTATION FAILED at lib/ts-test.c:42",
        "Expected a == b, but",
        "    a == 1",
        "    b == 2",
    )
    assert case(events, "ts-suite", "ts_skip").reason == "needs hardware"
    params = case(events, "ts-suite", "ts_params")
    assert [(p.name, p.status, p.reason) for p in params.params] == [
        ("param-0", P, ""),
        ("param-1", F, ""),
        ("param-2", S, "unsupported"),
    ]
    assert params.location == Location("lib/ts-test.c", 77)
    assert not any("[" in line for c in cases(events) for line in c.diagnostics)


def test_no_indentation_at_all() -> None:
    events = events_of("synthetic-no-indent.log")
    assert skeleton(events) == [
        ("start",),
        ("suite", "flat-suite"),
        ("case", "flat-suite", "flat_init", "passed"),
        ("case", "flat-suite", "flat_fail", "failed"),
        ("case", "flat-suite", "flat_params", "passed"),
        ("case", "flat-suite", "flat_skip", "skipped"),
        ("end", "flat-suite", "failed"),
        ("suite", "flat-other"),
        ("case", "flat-other", "flat_other_case", "passed"),
        ("end", "flat-other", "passed"),
    ]
    failing = case(events, "flat-suite", "flat_fail")
    assert failing.location == Location("drivers/flat/flat-test.c", 10)
    assert failing.diagnostics == (
        "# flat_fail: initializing",
        "# flat_fail: EXPECTATION FAILED at drivers/flat/flat-test.c:10",
        "Expected x == 0, but",
        "x == 3",
    )
    assert [(p.name, p.status) for p in case(events, "flat-suite", "flat_params").params] == [("one", P), ("two", P)]
    assert case(events, "flat-suite", "flat_skip").reason == "not today"


def test_interleaved_printk_noise() -> None:
    events = events_of("synthetic-printk-noise.log")
    assert skeleton(events) == [
        ("start",),
        ("suite", "noisy"),
        ("case", "noisy", "noisy_first", "passed"),
        ("case", "noisy", "noisy_second", "failed"),
        ("case", "noisy", "noisy_params", "passed"),
        ("case", "noisy", "noisy_fourth", "passed"),
        ("end", "noisy", "failed"),
        ("suite", "quiet"),
        ("case", "quiet", "quiet_case", "passed"),
        ("end", "quiet", "passed"),
    ]
    second = case(events, "noisy", "noisy_second")
    assert second.location == Location("lib/noisy-test.c", 31)
    # Noise printed while a case runs is kept with that case's diagnostics, in console order.
    assert second.diagnostics == (
        "# noisy_second: initializing",
        "Freeing unused kernel image (initmem) memory: 1024K",
        "# noisy_second: EXPECTATION FAILED at lib/noisy-test.c:31",
        "  input: noise with odd indentation",
        "Expected ret == 0, but",
        "    ret == -22",
    )
    params = case(events, "noisy", "noisy_params")
    assert [(p.name, p.status) for p in params.params] == [("alpha", P), ("beta", P)]
    assert params.params[1].diagnostics == (
        "Write protecting the kernel read-only data: 2048k",
        "# noisy_params: initializing",
    )


def test_truncated_console_reports_unfinished_suite_with_the_oops() -> None:
    lines = lines_of("synthetic-truncated-oops.log")
    events = list(ktap.parse(lines))
    assert skeleton(events) == [
        ("start",),
        ("suite", "before"),
        ("case", "before", "before_case", "passed"),
        ("end", "before", "passed"),
        ("suite", "oops-suite"),
        ("case", "oops-suite", "oops_fine", "passed"),
        ("unfinished", "oops-suite"),
    ]
    unfinished = events[-1]
    assert isinstance(unfinished, Unfinished)
    assert unfinished.log[0] == "# oops_null_deref: initializing"
    assert unfinished.log[1] == "BUG: kernel NULL pointer dereference, address: 0000000000000000"
    assert unfinished.log[-1] == "---[ end Kernel panic - not syncing: Fatal exception ]---"
    assert len(unfinished.log) == 22
    assert "<TASK>" in unfinished.log
    report = oops.fault_lines(unfinished.log)
    assert report[0] == "BUG: kernel NULL pointer dereference, address: 0000000000000000"
    assert len(report) == 21
    assert any(oops.is_panic(line) for line in lines)
    assert sum(oops.is_panic(line) for line in lines) == 2
    assert not oops.is_panic("BUG: kernel NULL pointer dereference, address: 0000000000000000")


def test_unfinished_only_once_and_parser_reusable_after_finish() -> None:
    parser = ktap.KtapParser()
    for line in ["KTAP version 1", "1..1", "    # Subtest: s", "    1..2", "    ok 1 a", "    # b: initializing"]:
        parser.feed(line)
    # The suite's plan and how much of it was reported: what a replayed console's stand-in cases are made from.
    assert parser.finish() == [Unfinished("s", ("# b: initializing",), planned=2, reported=1)]
    assert parser.finish() == []


def test_unfinished_inside_a_parameterised_case_names_the_suite() -> None:
    events = parse_text(
        "KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n    1..1\n"
        "        KTAP version 1\n        # Subtest: pcase\n        ok 1 p0\n    # pcase: initializing\n"
        "Oops: 0000 [#1] SMP\n"
    )
    assert events[-1] == Unfinished("s", ("# pcase: initializing", "Oops: 0000 [#1] SMP"), planned=1, reported=0)
    assert statuses(events) == []


def test_crashed_and_timed_out_diagnostics() -> None:
    events = events_of("synthetic-crash-timeout.log")
    assert statuses(events) == [
        ("fragile", "fragile_ok", P),
        ("fragile", "fragile_crash", C),
        ("fragile", "fragile_hang", T),
        ("fragile", "fragile_slow", T),
        ("fragile", "fragile_params", C),
        ("fragile", "fragile_skipped", S),
    ]
    assert [(e.suite, e.status) for e in events if isinstance(e, SuiteFinished)] == [("fragile", F)]
    crashed = case(events, "fragile", "fragile_crash")
    assert crashed.diagnostics[-1] == "# fragile_crash: test case crashed"
    report = oops.fault_lines(crashed.diagnostics)
    assert report[0] == "BUG: kernel NULL pointer dereference, address: 0000000000000008"
    assert report[-1] == "# fragile_crash: test case crashed"
    assert crashed.location is None
    assert oops.fault_lines(case(events, "fragile", "fragile_hang").diagnostics) == []
    params = case(events, "fragile", "fragile_params")
    assert [(p.name, p.status) for p in params.params] == [("p0", P), ("p1", C), ("p2", T)]
    assert case(events, "fragile", "fragile_skipped").reason == ""


@pytest.mark.parametrize("name", ALL_LOGS)
def test_every_console_streams_line_by_line_like_parse(name: str) -> None:
    lines = lines_of(name)
    parser = ktap.KtapParser()
    streamed: list[ktap.Event] = []
    for line in lines:
        streamed.extend(parser.feed(line))
    streamed.extend(parser.finish())
    assert streamed == list(ktap.parse(lines))
    # Feeding with the line terminators still attached changes nothing.
    assert list(ktap.parse(line + "\r\n" for line in lines)) == streamed


@pytest.mark.parametrize("name", ALL_LOGS)
def test_every_console_every_passed_case_has_its_ok_line(name: str) -> None:
    lines = lines_of(name)
    for result in cases(list(ktap.parse(lines))):
        if result.status is P:
            ok_line = re.compile(rf"(?:^|\]\s*)ok \d+ (?:- )?{re.escape(result.case)}(?: #(?!\s*SKIP).*)?$")
            assert any(ok_line.search(line.strip()) for line in lines), result


def test_results_stream_as_soon_as_their_line_arrives() -> None:
    parser = ktap.KtapParser()
    assert parser.feed("KTAP version 1") == [KtapStarted()]
    assert parser.feed("1..1") == []
    assert parser.feed("    KTAP version 1") == []
    assert parser.feed("    # Subtest: example") == [SuiteStarted("example")]
    assert parser.feed("    1..1") == []
    assert parser.feed("    # example_simple_test: initializing") == []
    assert parser.feed("    ok 1 example_simple_test") == [
        CaseResult("example", "example_simple_test", P, "", ("# example_simple_test: initializing",))
    ]
    assert parser.feed("ok 1 example") == [SuiteFinished("example", P)]
    assert parser.finish() == []


# --- printk prefixes, nesting forms, parameters, attributes, directives ----------------------------------------------


def test_caller_id_prefixes_on_every_line() -> None:
    events = events_of("synthetic-caller-prefix-6.12.log")
    assert skeleton(events) == [
        ("start",),
        ("suite", "caller-suite"),
        ("case", "caller-suite", "caller_first", "passed"),
        ("case", "caller-suite", "caller_fail", "failed"),
        ("case", "caller-suite", "caller_params", "passed"),
        ("case", "caller-suite", "caller_slow", "passed"),
        ("end", "caller-suite", "failed"),
        ("suite", "caller-init"),
        ("case", "caller-init", "caller_init_case", "passed"),
        ("end", "caller-init", "passed"),
    ]
    failing = case(events, "caller-suite", "caller_fail")
    assert failing.location == Location("lib/caller-test.c", 21)
    # The line printed from interrupt context ([ C0]) is noise among the case's lines, without its prefix.
    assert failing.diagnostics == (
        "clocksource: timekeeping watchdog on CPU0: Marking clocksource 'tsc' as unstable",
        "# caller_fail: EXPECTATION FAILED at lib/caller-test.c:21",
        "Expected x == 1, but",
        "    x == 0",
    )
    # 6.12 and later print the parameter block's own plan: it is no parameter.
    params = case(events, "caller-suite", "caller_params")
    assert [(p.name, p.status, p.reason) for p in params.params] == [
        ("zero", P, ""),
        ("one", P, ""),
        ("two", S, "odd value"),
    ]


@pytest.mark.parametrize(
    "prefix", ["[    0.060000] ", "[    0.060000][    T1] ", "[    0.060000][    C0] ", "[    T12] ", "[  C3] ", ""]
)
def test_printk_prefix_forms(prefix: str) -> None:
    text = ["KTAP version 1", "    KTAP version 1", "    # Subtest: s", "    1..1", "    ok 1 c", "ok 1 s"]
    events = list(ktap.parse(prefix + line for line in text))
    assert skeleton(events) == [("start",), ("suite", "s"), ("case", "s", "c", "passed"), ("end", "s", "passed")]


def test_only_a_prefix_at_the_start_of_the_line_is_printk_s() -> None:
    events = parse_text(
        "KTAP version 1\n    # Subtest: s\n    [  1.0] ok 1 c\n[T12345]     ok 2 d\n[ X1]     ok 3 e\nok 1 s\n"
    )
    # The caller id is right-aligned in six columns: a six-digit thread id has no padding.
    assert statuses(events) == [("s", "d", P)]


def test_suites_nested_by_version_lines_alone_are_named_by_their_closing_line() -> None:
    events = events_of("synthetic-ktap-spec-nesting.log")
    assert skeleton(events) == [
        ("start",),
        ("suite", "bare-suite"),
        ("case", "bare-suite", "bare_pass", "passed"),
        ("case", "bare-suite", "bare_fail", "failed"),
        ("end", "bare-suite", "failed"),
        ("suite", "nested-suite"),
        ("case", "nested-suite", "nested_params", "failed"),
        ("case", "nested-suite", "nested_more", "passed"),
        ("case", "nested-suite", "nested_leaf", "skipped"),
        ("end", "nested-suite", "passed"),
        ("suite", "subtest-first"),
        ("case", "subtest-first", "order_case", "passed"),
        ("end", "subtest-first", "passed"),
    ]
    assert case(events, "bare-suite", "bare_fail").location == Location("lib/bare-test.c", 8)
    nested = case(events, "nested-suite", "nested_params")
    assert [(p.name, p.status) for p in nested.params] == [("inner_a", P), ("inner_b", F)]
    assert [(p.name, p.status) for p in case(events, "nested-suite", "nested_more").params] == [
        ("inner_c", S),
        ("inner_d", P),
    ]
    # "# Subtest:" at the parent's level, then the block's own indented version line and attributes (TAP 14 order).
    assert case(events, "subtest-first", "order_case").attributes == (("module", "order_test"),)


def test_unnamed_suite_is_announced_with_its_cases_when_its_closing_line_arrives() -> None:
    parser = ktap.KtapParser()
    assert parser.feed("KTAP version 1") == [KtapStarted()]
    for line in ["1..1", "  KTAP version 1", "  1..2", "  ok 1 first", "  # second: initializing", "  not ok 2 second"]:
        assert parser.feed(line) == []
    assert parser.feed("not ok 1 late-named") == [
        SuiteStarted("late-named"),
        CaseResult("late-named", "first", P),
        CaseResult("late-named", "second", F, "", ("# second: initializing",)),
        SuiteFinished("late-named", F),
    ]


def test_suite_named_empty_is_not_unnamed() -> None:
    parser = ktap.KtapParser()
    parser.feed("KTAP version 1")
    assert parser.feed("    # Subtest: ") == [SuiteStarted("")]
    assert parser.feed("    ok 1 c") == [CaseResult("", "c", P)]
    assert parser.feed("ok 1") == [SuiteFinished("", P)]


def test_unnamed_suite_cut_short_reports_nothing_but_unfinished() -> None:
    events = parse_text("KTAP version 1\n1..1\n  KTAP version 1\n  1..2\n  ok 1 first\n  # second: initializing\n")
    assert events == [KtapStarted(), Unfinished("", ("# second: initializing",), planned=2, reported=1)]


def test_unnamed_parameter_block_inside_an_unnamed_suite_left_open_is_dropped_not_passed() -> None:
    events = parse_text("KTAP version 1\n  KTAP version 1\n  ok 1 a\n    KTAP version 1\n    ok 1 p\nok 1 outer\n")
    # `ok 1 outer` is at the root's level: it closes the suite, not the block that never got its closing line.
    assert skeleton(events) == [
        ("start",),
        ("suite", "outer"),
        ("case", "outer", "a", "passed"),
        ("end", "outer", "passed"),
    ]


def test_old_style_parameters() -> None:
    events = events_of("synthetic-old-params-5.15.log")
    assert statuses(events) == [
        ("old-params", "old_pass", P),
        ("old-params", "old_fail", F),
        ("old-params", "old_plain", P),
        ("dash-params", "dash_case", F),
    ]
    old_pass = case(events, "old-params", "old_pass")
    assert old_pass.params == (
        ParamResult("alpha", P, "", ("# old_pass: initializing",)),
        ParamResult("beta", P, "", ("# old_pass: initializing",)),
    )
    old_fail = case(events, "old-params", "old_fail")
    assert [(p.name, p.status) for p in old_fail.params] == [("alpha", P), ("beta", F), ("gamma", P)]
    assert old_fail.params[1].diagnostics == (
        "# old_fail: initializing",
        "# old_fail: EXPECTATION FAILED at lib/old-test.c:40",
        "Expected v != 2, but",
        "    v == 2",
    )
    assert old_fail.location == Location("lib/old-test.c", 40)
    # A parameter line naming another case is only a diagnostic.
    assert case(events, "old-params", "old_plain").params == ()
    dash = case(events, "dash-params", "dash_case")
    assert [(p.name, p.status) for p in dash.params] == [("first", P), ("second", F)]


def test_old_style_case_fails_when_a_parameter_failed_whatever_its_line_says() -> None:
    events = parse_text(
        "TAP version 14\n    # Subtest: s\n    # pc: ok 1 - a\n    # pc: not ok 2 - b\n    # pc: test case crashed\n"
        "    # pc: not ok 3 - c\n    ok 1 - pc\nok 1 - s\n"
    )
    result = case(events, "s", "pc")
    assert [(p.name, p.status) for p in result.params] == [("a", P), ("b", F), ("c", C)]
    assert result.status is C


def test_parameter_block_with_a_plan_and_deeper_nesting() -> None:
    events = parse_text(
        "KTAP version 1\n    KTAP version 1\n    # Subtest: s\n    1..1\n        KTAP version 1\n"
        "        # Subtest: pc\n        1..2\n            KTAP version 1\n            # Subtest: inner\n"
        "            ok 1 x\n            not ok 2 y\n        not ok 1 inner\n        ok 2 plain\n    not ok 1 pc\n"
        "not ok 1 s\n"
    )
    # A parameter with parameters of its own is one parameter of the case, never a case of the suite.
    assert statuses(events) == [("s", "pc", F)]
    assert [(p.name, p.status) for p in case(events, "s", "pc").params] == [("inner", F), ("plain", P)]


def test_parameter_block_that_ran_nothing_is_skipped() -> None:
    events = parse_text(
        "TAP version 14\n1..1\n  # Subtest: suite\n  1..2\n    # Subtest: empty\n  ok 1 - empty\n"
        "    # Subtest: empty_failed\n  not ok 2 - empty_failed\nnot ok 1 - suite\n"
    )
    assert statuses(events) == [("suite", "empty", S), ("suite", "empty_failed", F)]
    assert case(events, "suite", "empty").reason == "no parameter ran"


def test_totals_lines_are_never_cases() -> None:
    events = parse_text(
        "KTAP version 1\n    # Subtest: s\n    ok 1 a\n    # Totals: pass:1 fail:0 skip:0 total:1\n"
        "# Totals: pass:1 fail:0 skip:0 total:1\n# s: pass:1 fail:0 skip:0 total:1\nok 1 s\n"
        "# Totals: pass:9 fail:9 skip:9 total:27\n"
    )
    assert statuses(events) == [("s", "a", P)]
    assert [case.case for case in cases(events_of("synthetic-caller-prefix-6.12.log"))] == [
        "caller_first",
        "caller_fail",
        "caller_params",
        "caller_slow",
        "caller_init_case",
    ]


def test_attributes_of_suites_and_cases() -> None:
    events = events_of("synthetic-caller-prefix-6.12.log")
    finished = [(e.suite, e.attributes) for e in events if isinstance(e, SuiteFinished)]
    assert finished == [
        ("caller-suite", (("module", "caller_test"),)),
        ("caller-init", (("speed", "slow"), ("module", "caller_init_test"), ("is_init", "true"))),
    ]
    # A case's attributes are its own, else its suite's: what KUnit filters on.
    assert case(events, "caller-suite", "caller_first").attributes == (("module", "caller_test"),)
    assert case(events, "caller-suite", "caller_slow").attributes == (("module", "caller_test"), ("speed", "very_slow"))
    params = case(events, "caller-suite", "caller_params")
    assert params.attributes == (("module", "caller_test"), ("speed", "slow"))
    # Attribute lines are no diagnostics; the per-case totals line is one.
    assert params.diagnostics == ("# caller_params: pass:2 fail:0 skip:1 total:3",)
    init = case(events, "caller-init", "caller_init_case")
    assert dict(init.attributes) == {"speed": "slow", "module": "caller_init_test", "is_init": "true"}


def test_attribute_lines_that_are_not_attributes() -> None:
    events = parse_text(
        "KTAP version 1\n    KTAP version 1\n    # Subtest: s\n    1..2\n    # module: after the plan\n"
        "    # other.speed: slow\n    ok 1 a\n    # speed: initializing\n    ok 2 b\nok 1 s\n"
    )
    # After the plan, `# module:` is a case's diagnostic; `# other.speed:` names another case.
    assert case(events, "s", "a").attributes == ()
    assert case(events, "s", "a").diagnostics == ("# module: after the plan", "# other.speed: slow")
    assert case(events, "s", "b").diagnostics == ("# speed: initializing",)
    assert [e.attributes for e in events if isinstance(e, SuiteFinished)] == [()]


def test_list_attr_console() -> None:
    events = events_of("synthetic-list-attr-6.12.log")
    assert [e for e in events if isinstance(e, ktap.Listed)] == [
        ktap.Listed("attr-suite", "attr_plain", (("speed", "slow"), ("module", "attr_test"))),
        ktap.Listed("attr-suite", "attr_fast", (("speed", "normal"), ("module", "attr_test"))),
        ktap.Listed("attr-suite", "attr_slowest", (("speed", "very_slow"), ("module", "attr_test"))),
        ktap.Listed("init-suite", "init_case", (("module", "init_test"), ("is_init", "true"))),
    ]
    assert listed(lines_of("synthetic-list-attr-6.12.log")) == [
        ("attr-suite", "attr_plain"),
        ("attr-suite", "attr_fast"),
        ("attr-suite", "attr_slowest"),
        ("init-suite", "init_case"),
    ]


def test_listed_case_is_emitted_once_its_attribute_lines_are_read() -> None:
    parser = ktap.KtapParser()
    parser.feed("KTAP version 1")
    assert parser.feed("s") == []
    assert parser.feed("s.first") == []
    assert parser.feed("# first.speed: slow") == []
    assert parser.feed("s.second") == [ktap.Listed("s", "first", (("speed", "slow"),))]
    assert parser.feed("# other.speed: slow") == [ktap.Listed("s", "second")]
    assert parser.feed("t") == []
    assert parser.feed("t.third") == []
    assert parser.finish() == [ktap.Listed("t", "third")]


def test_directives() -> None:
    events = events_of("synthetic-directives.log")
    assert [(c.case, c.status, c.reason) for c in cases(events)] == [
        ("skip_reason", S, "no device"),
        ("skip_bare", S, ""),
        ("skip_not_ok", S, "not ok but skipped"),
        ("todo_failing", X, "known broken"),
        ("todo_passing", P, "fixed already"),
        ("xfail_ok", X, "fails as expected"),
        ("timeout", T, "30 seconds"),
        ("error", F, "no memory"),
        ("rcode", P, "rcode=0"),
    ]


@pytest.mark.parametrize(
    ("line", "status", "reason"),
    [
        ("    ok 1 c # SKIPPED spelled out", S, "spelled out"),
        ("    ok 1 c # xfail lower", X, "lower"),
        ("    not ok 1 c # XFAIL", X, ""),
        ("    not ok 1 c # todo", X, ""),
        ("    ok 1 c # TIMEOUT although ok", T, "although ok"),
        ("    ok 1 c # ERROR although ok", F, "although ok"),
        ("    not ok 1 c # TODOLIST not a directive", F, "TODOLIST not a directive"),
        ("    ok 1 c #", P, ""),
    ],
)
def test_directive_forms(line: str, status: Status, reason: str) -> None:
    events = list(ktap.parse(["KTAP version 1", "    # Subtest: s", line]))
    assert cases(events) == [CaseResult("s", "c", status, reason)]


def test_odd_shapes_with_carriage_returns() -> None:
    raw = (DATA / "synthetic-odd-shapes.log").read_bytes().decode().split("\n")
    assert raw[1] == "KTAP version 1\r"
    events = list(ktap.parse(raw))
    assert skeleton(events) == [
        ("start",),
        ("suite", "echoed"),
        ("case", "echoed", "echoed_case", "passed"),
        ("case", "echoed", "after_silent", "passed"),
        ("end", "echoed", "passed"),
        # broken-suite failed its suite_init: its result line, outside any suite, is no case.
        ("suite", "truncated"),
        ("case", "truncated", "truncated_fi", "passed"),
        ("case", "truncated", "truncated_second", "passed"),
        ("end", "truncated", "passed"),
        # A module's tests start a second KTAP document: the parser carries on.
        ("suite", "from-module"),
        ("case", "from-module", "module_case", "passed"),
        ("end", "from-module", "passed"),
    ]
    # The case that printed no result line is never reported; its lines go to the next case.
    assert case(events, "echoed", "after_silent").diagnostics == ("# silent_case: initializing",)
    assert ("echoed", "silent_case") not in {(c.suite, c.case) for c in cases(events)}


# --- edge cases ----------------------------------------------------------------------------------------------------


def test_nothing_before_the_version_line_counts() -> None:
    events = parse_text("ok 1 early\n    # Subtest: early_suite\n    ok 1 x\nok 1 early_suite\n")
    assert events == []


def test_second_version_line_does_not_restart() -> None:
    events = parse_text("KTAP version 1\n    # Subtest: s\n    ok 1 a\nok 1 s\nTAP version 14\n")
    assert sum(isinstance(event, KtapStarted) for event in events) == 1


def test_leaf_case_named_like_its_suite_indented() -> None:
    events = parse_text(
        "KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: same\n    1..2\n"
        "    ok 1 same\n    not ok 2 other\nnot ok 1 same\n"
    )
    assert skeleton(events) == [
        ("start",),
        ("suite", "same"),
        ("case", "same", "same", "passed"),
        ("case", "same", "other", "failed"),
        ("end", "same", "failed"),
    ]


def test_leaf_case_named_like_its_suite_without_indentation() -> None:
    events = parse_text(
        "KTAP version 1\n1..1\nKTAP version 1\n# Subtest: same\n1..2\nok 1 same\nnot ok 2 other\nnot ok 1 same\n"
    )
    assert statuses(events) == [("same", "same", P), ("same", "other", F)]


def test_param_named_like_its_case_is_a_param() -> None:
    events = parse_text(
        "KTAP version 1\n    # Subtest: s\n        # Subtest: pc\n        ok 1 pc\n        not ok 2 p2\n"
        "    not ok 1 pc\nnot ok 1 s\n"
    )
    result = case(events, "s", "pc")
    assert result.status is F
    assert [(p.name, p.status) for p in result.params] == [("pc", P), ("p2", F)]


def test_duplicated_result_lines_give_one_verdict_and_do_not_derail_the_suite() -> None:
    events = parse_text(
        "KTAP version 1\n1..2\n    # Subtest: dup\n    1..2\n    ok 1 a\n    ok 1 a\n    not ok 2 b\n"
        "    not ok 2 b\nnot ok 1 dup\nnot ok 1 dup\n    # Subtest: next\n    ok 1 c\nok 2 next\n"
    )
    assert skeleton(events) == [
        ("start",),
        ("suite", "dup"),
        ("case", "dup", "a", "passed"),
        ("case", "dup", "b", "failed"),
        ("end", "dup", "failed"),
        ("suite", "next"),
        ("case", "next", "c", "passed"),
        ("end", "next", "passed"),
    ]


def test_duplicated_subtest_header_is_harmless() -> None:
    events = parse_text(
        "KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n    # Subtest: s\n    1..2\n"
        "    ok 1 a\n    ok 2 b\nok 1 s\n"
    )
    assert statuses(events) == [("s", "a", P), ("s", "b", P)]
    assert not [event for event in events if isinstance(event, Unfinished)]


def test_garbage_lines_are_ignored_or_kept_as_diagnostics() -> None:
    garbage = [
        "ok",
        "not ok",
        "ok x name",
        "okay 1 name",
        "# Subtestt: nope",
        "1..",
        "\x00\x1b[0m\ufffd",
        "    #",
        "",
    ]
    text = ["KTAP version 1", "1..1", "    # Subtest: s", "    1..1", *garbage, "    not ok 1 real", "ok 1 s"]
    events = list(ktap.parse(text))
    assert statuses(events) == [("s", "real", F)]
    assert case(events, "s", "real").diagnostics == (
        "ok",
        "not ok",
        "ok x name",
        "okay 1 name",
        "# Subtestt: nope",
        "1..",
        "\x00\x1b[0m\ufffd",
        "#",
        "",
    )
    assert [(e.suite, e.status) for e in events if isinstance(e, SuiteFinished)] == [("s", P)]


def test_result_line_without_name_and_results_outside_any_suite() -> None:
    events = parse_text("KTAP version 1\nok 1 stray\n    # Subtest: s\n    ok 1\nok 1 s\nok 2 stray_too\n")
    # A result at the top level belongs to no suite and is no case.
    assert skeleton(events) == [("start",), ("suite", "s"), ("case", "s", "", "passed"), ("end", "s", "passed")]


@pytest.mark.parametrize(
    ("line", "status", "reason"),
    [
        ("    ok 1 c", P, ""),
        ("    ok 1 - c", P, ""),
        ("    not ok 1 - c", F, ""),
        ("    ok 1 c # SKIP", S, ""),
        ("    ok 1 c # SKIP some reason", S, "some reason"),
        ("    ok 1 c #SKIP tight", S, "tight"),
        ("    ok 1 c # skip lower case", S, "lower case"),
        ("    not ok 1 c # SKIP skipped even though not ok", S, "skipped even though not ok"),
        ("    ok 1 - c # SKIP with dash", S, "with dash"),
        ("    ok 1 c # TODO not done", P, "not done"),
        ("    ok 1 c   ", P, ""),
        ("\t\tok 1 c", P, ""),
        ("[    7.000001]     ok 1 c", P, ""),
        ("[12345.123456]     not ok 1 c", F, ""),
        ("[    7.000001]    ok 1 c # SKIP ts no space", S, "ts no space"),
    ],
)
def test_result_line_forms(line: str, status: Status, reason: str) -> None:
    # At its suite's own depth (a result line counts only there), whatever the indentation is made of.
    cleaned = grammar.clean(line)
    depth = cleaned[: len(cleaned) - len(cleaned.lstrip())]
    events = list(ktap.parse(["KTAP version 1", f"{depth}# Subtest: s", line]))
    assert cases(events) == [CaseResult("s", "c", status, reason)]


def test_skipped_suite_and_all_skipped_params() -> None:
    events = parse_text(
        "KTAP version 1\n1..2\n    # Subtest: off\n    1..0\nok 1 off # SKIP no hardware\n"
        "    # Subtest: s\n        # Subtest: pc\n        ok 1 a # SKIP x\n        ok 2 b # SKIP y\n"
        "    ok 1 pc # SKIP all params skipped\nok 2 s\n"
    )
    assert skeleton(events) == [
        ("start",),
        ("suite", "off"),
        ("end", "off", "skipped"),
        ("suite", "s"),
        ("case", "s", "pc", "skipped"),
        ("end", "s", "passed"),
    ]
    result = case(events, "s", "pc")
    assert result.reason == "all params skipped"
    assert result.params == (ParamResult("a", S, "x", ()), ParamResult("b", S, "y", ()))


def test_param_case_line_ok_but_a_param_failed_is_failed() -> None:
    events = parse_text(
        "KTAP version 1\n    # Subtest: s\n        # Subtest: pc\n        ok 1 a\n        not ok 2 b\n"
        "    ok 1 pc\nok 1 s\n"
    )
    assert statuses(events) == [("s", "pc", F)]


def test_faulted_in_the_series_and_upstream_words() -> None:
    # The series' crash report, and upstream's since 2024 (with the last line seen, from 6.10), both say "try
    # faulted"; a try-catch that faults inside a passing case (KUnit's own fault test) is still a pass.
    events = events_of("synthetic-crash-faulted.log")
    assert statuses(events) == [
        ("series", "series_ok", P),
        ("series", "series_null", C),
        ("series", "series_try_catch", P),
        ("upstream", "upstream_null", C),
        ("upstream", "upstream_hang", T),
    ]
    crashed = case(events, "upstream", "upstream_null")
    assert crashed.diagnostics[-2] == "# upstream_null: try faulted: last line seen lib/kunit/upstream-test.c:42"
    assert oops.fault_lines(case(events, "series", "series_null").diagnostics)[0].startswith("BUG: kernel NULL")


def test_param_case_with_crashed_param_is_crashed_whatever_its_line_says() -> None:
    events = parse_text(
        "KTAP version 1\n    # Subtest: s\n        # Subtest: pc\n    # pc: test case crashed\n"
        "        not ok 1 a\n        ok 2 b\n    ok 1 pc\nok 1 s\n"
    )
    result = case(events, "s", "pc")
    assert result.status is C
    assert [(p.name, p.status) for p in result.params] == [("a", C), ("b", P)]


def test_crash_beats_timeout_and_timeout_beats_failure() -> None:
    events = parse_text(
        "KTAP version 1\n    # Subtest: s\n    # a: EXPECTATION FAILED at x.c:1\n    # a: try timed out\n"
        "    not ok 1 a\n    # b: try timed out\n    # b: test case crashed\n    not ok 2 b\n"
        "    # c: try timed out\n    ok 3 c\nok 1 s\n"
    )
    # An `ok` line is a pass whatever diagnostics came before it.
    assert statuses(events) == [("s", "a", T), ("s", "b", C), ("s", "c", P)]
    assert case(events, "s", "a").location == Location("x.c", 1)


def test_location_is_the_first_failure() -> None:
    result = CaseResult(
        "s",
        "c",
        F,
        diagnostics=(
            "# c: initializing",
            "# c: EXPECTATION FAILED at drivers/a+b/x-y_z.c:12",
            "# c: ASSERTION FAILED at lib/other.c:99",
        ),
    )
    assert result.location == Location("drivers/a+b/x-y_z.c", 12)
    assert CaseResult("s", "c", F, diagnostics=("nothing here",)).location is None


def test_fault_lines_and_is_panic() -> None:
    lines = ["# c: initializing", "general protection fault, probably for non-canonical address", "RIP: x", "end"]
    assert oops.fault_lines(lines) == lines[1:]
    assert oops.fault_lines(["kernel BUG at mm/slub.c:1:", "x"]) == ["kernel BUG at mm/slub.c:1:", "x"]
    assert oops.fault_lines(["fine", "all good"]) == []
    assert oops.fault_lines([]) == []
    assert oops.is_panic("[    3.1] Kernel panic - not syncing: Fatal exception")
    assert not oops.is_panic("Oops: 0002 [#1] PREEMPT SMP NOPTI")
