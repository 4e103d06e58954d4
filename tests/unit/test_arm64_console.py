"""A console recorded from a real arm64 guest (the framework fragment with the series, 6.1.192 on QEMU's virt machine):
its cases, and the oops KUnit's try-catch test provokes on purpose, in arm64's words."""

from __future__ import annotations

from pathlib import Path

from pytest_kunit import faults, ktap
from pytest_kunit.findings import find_reports
from pytest_kunit.ktap import CaseResult, Status

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
    report = faults.fault_lines(crashing.diagnostics)
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
    assert following.status is Status.PASSED and faults.fault_lines(following.diagnostics) == []


def test_an_arm64_oops_is_no_sanitizer_finding() -> None:
    assert find_reports(RECORDED.read_text().splitlines()) == []
