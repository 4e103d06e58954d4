"""The real tier for --kunit-sanitize: one KASAN+UBSAN build of the sanitize suite (which also holds the framework
fragment's options, so the same image shows the framework's suites green under the sanitizers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .pending import never_run_yet
from .test_real_kernel import FRAMEWORK_CASES, FRAMEWORK_SKIPS, report, run

pytestmark = [pytest.mark.real, never_run_yet]

SANITIZE = "testsuites/sanitize/sanitize.kunitconfig"
# 6.1's PVH entry code is KASAN-instrumented and faults before the shadow is mapped: the series plus its fix.
PVH_KASAN = ("--kunit-patches=kernel-patches", "--kunit-patches=tests/data/patches/pvh-kasan")
SANITIZE_OUTCOMES = {
    "sanitize.sanitize_pass_first": "passed",
    "sanitize.sanitize_leak": "passed",  # a leak fails the run (kmemleak's scan), never a case
    "sanitize.sanitize_kmalloc_overflow": "failure",
    "sanitize.sanitize_pass_after_overflow": "passed",
    "sanitize.sanitize_overflow_in_work": "failure",
    "sanitize.sanitize_shift_overflow": "failure",
    "sanitize.sanitize_pass_last": "passed",
}


def test_each_report_fails_its_own_case_and_the_framework_stays_green(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, SANITIZE, "--kunit-sanitize", "kasan,ubsan", *PVH_KASAN)
    assert {name: outcome for name, outcome in outcomes.items() if name.startswith("sanitize.")} == (
        SANITIZE_OUTCOMES
    ), report(process)
    framework = {name: outcome for name, outcome in outcomes.items() if not name.startswith("sanitize.")}
    assert set(framework) >= FRAMEWORK_CASES, report(process)
    assert {name for name, outcome in framework.items() if outcome == "skipped"} == FRAMEWORK_SKIPS, report(process)
    assert all(outcome in ("passed", "skipped") for outcome in framework.values()), report(process)
    text = process.stdout
    assert "outside any case" not in text, report(process)
    # In the test's thread KASAN's KUnit integration fails the case too; the report is the evidence, shown once.
    kmalloc = text.split("sanitize.sanitize_kmalloc_overflow FAILED", 1)[1].split("Captured kunit console", 1)[0]
    assert "sanitizer report while this case ran: BUG: KASAN: slab-out-of-bounds in overflow" in kmalloc, report(
        process
    )
    assert kmalloc.count("BUG: KASAN: slab-out-of-bounds") == 2, report(process)  # the summary line and the report
    # Decoded: the overflowing line of the suite's source.
    assert re.search(r"overflow\S* \(pytest-kunit/sanitize/sanitize-test\.c:\d+\)", kmalloc), report(process)
    # In a work item KUnit sees nothing and the case's own line says ok: the report alone fails it.
    work = text.split("sanitize.sanitize_overflow_in_work FAILED", 1)[1].split("Captured kunit console", 1)[0]
    assert "(its own result line said passed: KUnit did not see it): BUG: KASAN: slab-out-of-bounds" in work, report(
        process
    )
    shift = text.split("sanitize.sanitize_shift_overflow FAILED", 1)[1].split("Captured kunit console", 1)[0]
    assert "UBSAN: shift-out-of-bounds in pytest-kunit/sanitize/sanitize-test.c" in shift, report(process)
