"""Sanitizer reports on recorded consoles: where each begins and ends, and which case (if any) it belongs to."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit.console import ktap
from pytest_kunit.console.ktap import Status
from pytest_kunit.console.transcript import BootRecord, ConsoleMap
from pytest_kunit.findings.outcomes import case_outcomes
from pytest_kunit.findings.sanitizer_reports import Finding, find_reports, place
from pytest_kunit.findings.sanitizer_verdicts import blame, without_reports

DATA = Path(__file__).resolve().parent.parent / "data"
SYNTHETIC = DATA / "synthetic-sanitizer-reports-6.1.log"


def parsed(path: Path) -> tuple[list[str], ConsoleMap, dict[tuple[str, str], ktap.CaseResult]]:
    """The console as the runner holds it: its lines, where each suite and case sits, and the results."""
    lines = path.read_text().splitlines()
    layout = ConsoleMap()
    parser = ktap.KtapParser()
    results = {}
    for index, line in enumerate(lines):
        for event in parser.feed(line):
            layout.note(event, index, line, float(index))
            if isinstance(event, ktap.CaseResult):
                results[(event.suite, event.case)] = event
    return lines, layout, results


def test_every_sanitizer_report_is_found_whole() -> None:
    lines = SYNTHETIC.read_text().splitlines()
    found = find_reports(lines)
    assert [(f.sanitizer, f.headline.split(" in ")[0]) for f in found] == [
        ("lockdep", "WARNING: possible circular locking dependency detected"),
        ("KASAN", "BUG: KASAN: slab-out-of-bounds"),
        ("UBSAN", "UBSAN: shift-out-of-bounds"),
        ("KCSAN", "BUG: KCSAN: data-race"),
        (
            "debug objects",
            "ODEBUG: free active (active state 0) object: 000000002a3e1a5d object type: timer_list hint: "
            "alpha_timer_fn+0x0/0x10",
        ),
        ("atomic sleep", "BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580"),
        ("kmemleak", "unreferenced object 0xffff888003b4d000 (size 64):"),
        ("KASAN", "BUG: KASAN: use-after-free"),
    ]
    first_and_last = [(f.lines[0].split("] ", 1)[1], f.lines[-1].split("] ", 1)[1]) for f in found]
    assert first_and_last == [
        ("======================================================", " </TASK>"),  # lockdep: rule to its stack trace
        ("=" * 66, "=" * 66),  # KASAN: between its two rules, not the taint note after
        ("=" * 80, "=" * 80),
        ("=" * 66, "=" * 66),
        ("------------[ cut here ]------------", "---[ end trace 0000000000000000 ]---"),
        ("BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580", " </TASK>"),
        (
            "kmemleak: unreferenced object 0xffff888003b4d000 (size 64):",
            "kmemleak:     [<ffffffff81345678>] alpha_second+0x4a/0x120",
        ),
        ("=" * 66, "=" * 66),
    ]


def test_reports_go_to_the_case_that_ran_and_the_rest_fail_the_run() -> None:
    lines, layout, _ = parsed(SYNTHETIC)
    placement = place(find_reports(lines), layout)
    assert {case: [f.sanitizer for f in found] for case, found in placement.by_case.items()} == {
        ("alpha", "alpha_second"): ["KASAN"],
        ("alpha", "alpha_third"): ["UBSAN"],
        ("alpha", "alpha_params"): ["KCSAN"],  # inside a parameter
        ("beta", "beta_first"): ["atomic sleep"],
    }
    assert [(o.finding.sanitizer, o.when) for o in placement.outside] == [
        ("lockdep", "before KUnit's first suite started (boot)"),
        ("debug objects", "in suite alpha after its last case (its exit function, or a background task)"),
        # A scan's report is never a case's fault, though it is printed while one runs.
        ("kmemleak", "while beta.beta_second ran, though the leak may be older"),
        ("KASAN", "after the last suite (beta) ended"),
    ]
    assert placement.in_flight == ()


def test_a_report_in_a_case_the_console_ended_inside_is_left_to_its_crash_report() -> None:
    lines = SYNTHETIC.read_text().splitlines()
    cut = next(index for index, line in enumerate(lines) if "ok 2 alpha_second" in line)
    layout = ConsoleMap()
    parser = ktap.KtapParser()
    for index, line in enumerate(lines[:cut]):
        for event in parser.feed(line):
            layout.note(event, index, line, 0.0)
    placement = place(find_reports(lines[:cut]), layout)
    assert [f.sanitizer for f in placement.in_flight] == ["KASAN"]
    assert placement.by_case == {}


def test_between_suites() -> None:
    lines = SYNTHETIC.read_text().splitlines()
    between = lines.index("[    0.500086] ok 1 alpha") + 1
    report = [
        "==================================================================",
        "BUG: KASAN: double-free in x",
        "=" * 66,
    ]
    lines[between:between] = report
    path_lines = lines
    layout = ConsoleMap()
    parser = ktap.KtapParser()
    for index, line in enumerate(path_lines):
        for event in parser.feed(line):
            layout.note(event, index, line, 0.0)
    outside = place(find_reports(path_lines), layout).outside
    assert ("KASAN", "between suites alpha and beta") in [(o.finding.sanitizer, o.when) for o in outside]


def test_a_report_fails_a_case_whose_line_said_ok_and_is_shown_once() -> None:
    lines, layout, results = parsed(SYNTHETIC)
    placement = place(find_reports(lines), layout)
    second = results[("alpha", "alpha_second")]
    assert second.status is Status.PASSED
    assert any("BUG: KASAN" in line for line in second.diagnostics)
    result, said = blame(second, placement.by_case[("alpha", "alpha_second")])
    assert (result.status, said) == (Status.FAILED, Status.PASSED)
    assert not any("BUG: KASAN" in line or "Memory state" in line for line in result.diagnostics)
    assert "Disabling lock debugging due to kernel taint" in result.diagnostics


def test_kunits_own_integration_is_not_counted_twice() -> None:
    lines, layout, results = parsed(SYNTHETIC)
    placement = place(find_reports(lines), layout)
    third = results[("alpha", "alpha_third")]
    assert third.status is Status.FAILED  # UBSAN's kunit_fail_current_test failed it
    result, said = blame(third, placement.by_case[("alpha", "alpha_third")])
    assert (result.status, said) == (Status.FAILED, None)
    assert result.diagnostics == ("# alpha_third: lib/ubsan.c:146: shift-out-of-bounds in lib/alpha-test.c",)


def test_a_parameter_report_fails_the_parameterised_case() -> None:
    lines, layout, results = parsed(SYNTHETIC)
    placement = place(find_reports(lines), layout)
    params = results[("alpha", "alpha_params")]
    assert params.status is Status.PASSED
    assert blame(params, placement.by_case[("alpha", "alpha_params")])[0].status is Status.FAILED


@pytest.mark.parametrize("status", [Status.SKIPPED, Status.XFAIL])
def test_skipped_and_expected_failures_with_a_report_fail(status: Status) -> None:
    report = Finding("KASAN", "BUG: KASAN: x", 0, 0, ("BUG: KASAN: x",))
    result, said = blame(ktap.CaseResult("s", "c", status, diagnostics=("BUG: KASAN: x",)), (report,))
    assert (result.status, said, result.diagnostics) == (Status.FAILED, status, ())


def test_without_reports_keeps_lines_that_only_look_alike() -> None:
    report = Finding("UBSAN", "UBSAN: x", 0, 1, ("[ 1.0] UBSAN: x", "[ 1.0] " + "=" * 80))
    assert without_reports(("=" * 80, "UBSAN: x", "=" * 80), (report,)) == ("=" * 80,)


def test_no_report_in_ordinary_consoles() -> None:
    for name in ("kunit-6.1.192-all.log", "example-failing-6.1.192.log", "synthetic-truncated-oops.log"):
        assert find_reports((DATA / name).read_text().splitlines()) == [], name


def test_an_unterminated_report_stops_at_the_next_result_line() -> None:
    lines = [
        "    KTAP version 1",
        "    # Subtest: s",
        "=" * 66,
        "BUG: KASAN: wild-memory-access in f",
        "x",
        "    ok 1 c",
    ]
    (found,) = find_reports(lines)
    assert (found.start, found.end) == (2, 4)


def test_the_option_names_every_sanitizer_in_the_table() -> None:
    from pytest_kunit.findings.sanitizers import SANITIZERS, parse_names
    from pytest_kunit.optiontypes import SANITIZER_NAMES

    assert ", ".join(SANITIZERS) == SANITIZER_NAMES
    assert parse_names(" UBSAN, kasan,kasan ") == ("kasan", "ubsan")
    with pytest.raises(ValueError, match="asan"):
        parse_names("kasan,asan")


# A real 6.1 KASAN+UBSAN guest: the sanitize suite and the framework fragment.
RECORDED = DATA / "kasan-ubsan-sanitize-6.1.192.log"


def test_a_recorded_kasan_ubsan_console_fails_exactly_the_cases_that_broke_the_rules() -> None:
    lines, layout, results = parsed(RECORDED)
    placement = place(find_reports(lines), layout)
    assert not placement.outside and not placement.in_flight
    judged = {case: blame(results[case], reports) for case, reports in placement.by_case.items()}
    # 6.1's KASAN fails no case itself (its KUnit hook needs CONFIG_KASAN_KUNIT_TEST): the report alone does.
    assert {case: (result.status, said) for case, (result, said) in judged.items()} == {
        ("sanitize", "sanitize_kmalloc_overflow"): (Status.FAILED, Status.PASSED),
        ("sanitize", "sanitize_overflow_in_work"): (Status.FAILED, Status.PASSED),
        ("sanitize", "sanitize_shift_overflow"): (Status.FAILED, None),  # UBSAN's KUnit hook failed it: once
    }
    headlines = {case: [report.headline for report in reports] for case, reports in placement.by_case.items()}
    assert headlines[("sanitize", "sanitize_kmalloc_overflow")] == [
        "BUG: KASAN: slab-out-of-bounds in sanitize_kmalloc_overflow+0x9c/0x110"
    ]
    assert headlines[("sanitize", "sanitize_overflow_in_work")] == [
        "BUG: KASAN: slab-out-of-bounds in overflow_work_fn+0x22/0x30"
    ]
    # The try-catch case that dereferences NULL on purpose: KASAN's report is the first half of its oops, which the
    # case catches; it passes as it does without KASAN.
    crashing = ("kunit-try-catch-test", "kunit_test_try_catch_crashing_try_does_catch")
    assert results[crashing].status is Status.PASSED and crashing not in placement.by_case
    assert sum(1 for result in results.values() if result.status is Status.PASSED) >= 90


def test_a_decoded_report_is_shown_once() -> None:
    """The raw report leaves the case's diagnostics even though its evidence is the decoded report."""
    lines, layout, results = parsed(RECORDED)
    record = BootRecord([], lines, console_map=layout)

    def decode(report: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(line.replace("+0x9c/0x110", " (pytest-kunit/sanitize/sanitize-test.c:19)") for line in report)

    reported = case_outcomes("k", record, results.values(), Path("console"), set(results), decode, {})
    outcome = reported.outcomes[("sanitize", "sanitize_kmalloc_overflow")]
    assert not any("BUG: KASAN" in line for line in outcome.result.diagnostics)
    (report,) = outcome.reports
    assert (
        report.lines[1]
        == "BUG: KASAN: slab-out-of-bounds in sanitize_kmalloc_overflow (pytest-kunit/sanitize/sanitize-test.c:19)"
    )


def test_a_sanitizer_the_arch_kconfig_never_selects_is_refused(tmp_path: Path) -> None:
    from pytest_kunit.findings.sanitizers import unsupported

    (tmp_path / "arch/x86").mkdir(parents=True)
    (tmp_path / "arch/x86/Kconfig").write_text("config X86\n\tselect HAVE_ARCH_KASAN\t\t\tif X86_64\n")
    (tmp_path / "arch/alpha").mkdir(parents=True)
    (tmp_path / "arch/alpha/Kconfig").write_text("config ALPHA\n\tselect HAVE_ARCH_KASAN_VMALLOC\n")
    # A conditional select is Kconfig's to judge (it names HAVE_ARCH_KASAN when it drops KASAN).
    assert unsupported(["kasan", "ubsan"], tmp_path, "x86") == []
    assert unsupported(["kasan", "ubsan", "kcsan"], tmp_path, "alpha") == [
        ("kasan", "HAVE_ARCH_KASAN"),
        ("kcsan", "HAVE_ARCH_KCSAN"),
    ]
    assert unsupported(["kasan"], tmp_path, "m68k") == []  # no such Kconfig: nothing to read
