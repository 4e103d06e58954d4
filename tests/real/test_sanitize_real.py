"""The real tier for --kunit-sanitize: one KASAN+UBSAN build of the sanitize suite (which also holds the framework
fragment's options, so the same image shows the framework's suites green under the sanitizers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_real_kernel import FRAMEWORK_CASES, FRAMEWORK_SKIPS, report, run

pytestmark = pytest.mark.real

SANITIZE = "testsuites/sanitize/sanitize.kunitconfig"
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
    process, outcomes = run(tmp_path, SANITIZE, "--kunit-sanitize", "kasan,ubsan")
    assert {name: outcome for name, outcome in outcomes.items() if name.startswith("sanitize.")} == (
        SANITIZE_OUTCOMES
    ), report(process)
    framework = {name: outcome for name, outcome in outcomes.items() if not name.startswith("sanitize.")}
    assert set(framework) >= FRAMEWORK_CASES, report(process)
    assert {name for name, outcome in framework.items() if outcome == "skipped"} == FRAMEWORK_SKIPS, report(process)
    assert all(outcome in ("passed", "skipped") for outcome in framework.values()), report(process)
    text = process.stdout
    assert "outside any case" not in text, report(process)
    # 6.1's KASAN fails no case itself (its KUnit hook needs CONFIG_KASAN_KUNIT_TEST): the report alone does, and is
    # the evidence, decoded, shown once (the summary line and the report's own headline).
    kmalloc = failure(text, "sanitize.sanitize_kmalloc_overflow")
    said = "sanitizer report while this case ran (its own result line said passed: KUnit did not see it): "
    assert said + "BUG: KASAN: slab-out-of-bounds in sanitize_kmalloc_overflow" in kmalloc, report(process)
    assert kmalloc.count("BUG: KASAN: slab-out-of-bounds") == 2, kmalloc
    # Decoded: the overflowing line of the suite's source.
    assert re.search(r"sanitize_kmalloc_overflow \(pytest-kunit/sanitize/sanitize-test\.c:\d+", kmalloc), kmalloc
    # In a work item KUnit could not see it whatever KASAN did: the report alone fails the case.
    work = failure(text, "sanitize.sanitize_overflow_in_work")
    assert said + "BUG: KASAN: slab-out-of-bounds in overflow_work_fn" in work, work
    assert work.count("BUG: KASAN: slab-out-of-bounds") == 2, work
    # UBSAN's KUnit hook failed this one itself: failed once, the report as evidence.
    shift = failure(text, "sanitize.sanitize_shift_overflow")
    assert re.search(r"UBSAN: shift-out-of-bounds in \S*pytest-kunit/sanitize/sanitize-test\.c:\d+", shift), shift
    assert shift.count("UBSAN: shift-out-of-bounds") == 2, shift


def failure(text: str, case: str) -> str:
    """The case's section of pytest's FAILURES, up to its captured console."""
    header = re.search(rf"^_+ \S*{re.escape(case)} _+$", text, re.MULTILINE)
    assert header, text[-6000:]
    return text[header.end() :].split("Captured kunit console", 1)[0]
