"""A console recorded from a real arm64 guest (the framework fragment with the series, 6.1.192 on QEMU's virt machine):
its cases, and the oops KUnit's try-catch test provokes on purpose, in arm64's words."""

from __future__ import annotations

from pathlib import Path

from pytest_kunit.console import ktap, oops
from pytest_kunit.console.ktap import CaseResult, Status
from pytest_kunit.findings.sanitizer_reports import find_reports

RECORDED = Path(__file__).resolve().parent.parent / "data" / "kunit-6.1.192-arm64.log"
CRASHING_TRY = ("kunit-try-catch-test", "kunit_test_try_catch_crashing_try_does_catch")


def recorded_cases() -> dict[tuple[str, str], CaseResult]:
    events = ktap.parse(RECORDED.read_text().splitlines())
    return {(event.suite, event.case): event for event in events if isinstance(event, CaseResult)}


def test_every_case_has_the_kernel_s_result() -> None:
    cases = recorded_cases()
    assert len(cases) == 90
    skipped = {name for name, case in cases.items() if case.status is Status.SKIPPED}
    assert skipped == {("example", "example_skip_test"), ("example", "example_mark_skipped_test")}
    assert {case.status for name, case in cases.items() if name not in skipped} == {Status.PASSED}
    # The series' own suites, cross-built.
    assert {"kunit-seed-module", "kunit-seed-resource", "kunit_mock", "eeprom_buffer_mock"} <= {
        suite for suite, _ in cases
    }


def test_an_oops_the_case_catches_stays_its_diagnostics_and_it_passes() -> None:
    cases = recorded_cases()
    crashing = cases[CRASHING_TRY]
    # KUnit caught the fault in the try thread and printed "ok": the kernel's verdict stands.
    assert crashing.status is Status.PASSED
    report = oops.fault_lines(crashing.diagnostics)
    assert report[0] == "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000"
    for line in (
        "Internal error: Oops: 0000000096000045 [#1] SMP",
        "pc : kunit_test_null_dereference+0x20/0x74",
        "Call trace:",
        "---[ end trace 0000000000000000 ]---",
    ):
        assert line in report
    # Nothing of it leaks into the next case.
    following = cases[("kunit-try-catch-test", "kunit_test_try_catch_slow_try_times_out")]
    assert following.status is Status.PASSED and oops.fault_lines(following.diagnostics) == []


def test_an_arm64_oops_is_no_sanitizer_finding() -> None:
    assert find_reports(RECORDED.read_text().splitlines()) == []


FAULTS_RECORDED = RECORDED.parent / "faults-6.1.192-arm64.log"
FAULTS_PANIC_RECORDED = RECORDED.parent / "faults-6.1.192-arm64-panic.log"


def test_the_fault_suite_s_crashes_are_crashes_in_arm64_words() -> None:
    """The fault suite's first boot on an arm64 guest (`--kunit-timeout=10`): a NULL dereference and a BUG() end
    their cases as crashed, with arm64's report, and the cases after each still run."""
    events = list(ktap.parse(FAULTS_RECORDED.read_text().splitlines()))
    results = [event for event in events if isinstance(event, CaseResult)]
    assert [(result.case, result.status) for result in results] == [
        ("faults_pass_first", Status.PASSED),
        ("faults_fail", Status.FAILED),
        ("faults_pass_after_fail", Status.PASSED),
        ("faults_null_dereference", Status.CRASHED),
        ("faults_pass_after_null_dereference", Status.PASSED),
        ("faults_bug", Status.CRASHED),
        ("faults_pass_after_bug", Status.PASSED),
    ]
    null, bug = results[3], results[5]
    report = oops.fault_lines(null.diagnostics)
    assert report[0] == "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000"
    assert "pc : faults_null_dereference+0x24/0x8c" in report
    assert (
        null.diagnostics[-1] == "# faults_null_dereference: internal error occurred preventing test case from "
        "running: -4"
    )
    assert oops.fault_lines(bug.diagnostics)[:2] == [
        "kernel BUG at pytest-kunit/faults/faults-test.c:40!",
        "Internal error: Oops - BUG: 00000000f2000800 [#2] SMP",
    ]
    # The BUG() left interrupts off in a dead thread: the guest warned from its idle loop and went silent before
    # the hanging case started; what it printed is the unfinished suite's log, for the runner to reboot past.
    unfinished = events[-1]
    assert isinstance(unfinished, ktap.Unfinished) and unfinished.suite == "faults"
    assert unfinished.log[1].startswith("WARNING: CPU: 0 PID: 0 at kernel/context_tracking.c:128")


def test_a_panic_ends_the_arm64_console_with_the_case_unfinished() -> None:
    events = list(ktap.parse(FAULTS_PANIC_RECORDED.read_text().splitlines()))
    assert [(e.case, e.status) for e in events if isinstance(e, CaseResult)] == [
        ("faults_pass_after_hang", Status.PASSED)
    ]
    unfinished = events[-1]
    assert isinstance(unfinished, ktap.Unfinished)
    panic = [line for line in unfinished.log if oops.is_panic(line)]
    assert panic == ["Kernel panic - not syncing: pytest-kunit fault suite: deliberate panic"]
    assert find_reports(FAULTS_PANIC_RECORDED.read_text().splitlines()) == []
