"""The real tier's debug kernel: KUnit's suites and the kernel series' on KASAN, UBSAN, lockdep, DEBUG_ATOMIC_SLEEP,
debug objects and kmemleak (testsuites/kunit-debug.kunitconfig), one kernel shared with the sanitize suite
(testsuites/sanitize/, on the same lines) and built with GCOV for test_coverage_real.py (conftest.KERNELS's
"instrumented").
Every run here asks for coverage (which it then need not read), as that kernel was built with it; each boot is a
filtered one (the kernel serves two fragments), which kmemleak finds clean since the series' patch 5.

Each fix of the series checked here also fails with its fix undone (tests/data/unfix-patches): that needs another
cold debug build of another tree, so scripts/check-series.sh runs it (its last step), not command two."""

from __future__ import annotations

import re

import pytest

from .conftest import DEBUG, Kunit, debug_with_coverage, sanitize_selection
from .test_real_kernel import FRAMEWORK_CASES, FRAMEWORK_SKIPS

pytestmark = [pytest.mark.real("instrumented"), pytest.mark.xdist_group("instrumented")]

# The cases that check the series' fixes for what these debug options catch: each fails on a report printed while it
# runs (a use after free, a stack overrun, a sleep in atomic context), as well as on its own expectations.
DEBUG_CHECKS = {
    "kunit_mock.mock_test_odd_sized_returns",
    "kunit_mock.mock_test_odd_sized_store_stays_in_bounds",
    "kunit_mock.mock_test_copy_beyond_buffer_fails",
    "kunit-resource-test.kunit_resource_test_cleanup_keeps_running_test",
    "eeprom_buffer_mock.eeprom_buffer_mock_keeps_bytes_taken_on_write_error",
    "eeprom_buffer_mock.eeprom_buffer_mock_exit_after_failed_init",
    "kunit_mock.mock_test_streq_on_integer_fails",
    "kunit_mock.mock_test_owner_gone_before_cleanup",
    "kunit_mock.mock_test_sequence_outlives_stack",
    "kunit_mock.mock_test_atomic_context",
    "eeprom_buffer_mock.eeprom_buffer_mock_retries_after_short_write_error",
    "string-stream-test.string_stream_test_append_percent",
    "kunit_executor_test.filter_suites_that_ran_outlive_the_run_test",
    # A failing mock call from interrupt context (lockdep's "inconsistent lock state" without its fix), and the
    # overlay test bus its suite leaves populated.
    "kunit_mock.mock_test_hardirq_context",
    "kunit_mock.mock_test_softirq_context",
    "of_overlay_high_level.of_unittest_overlay_bus_depopulated",
}


def test_series_suites_are_clean_on_the_debug_kernel(kunit: Kunit) -> None:
    shared = kunit.kernel("instrumented")
    assert f"{DEBUG} runs in the kernel shared by" in shared.stdout, shared.report()
    # The series' own first patch keeps 6.1's PVH entry, through which QEMU boots the vmlinux, free of KASAN checks.
    run, _ = debug_with_coverage(kunit)
    # A sanitizer, lockdep, debug-objects or kmemleak report fails the case it was printed in, or the run; so does a
    # kmemleak final scan that never finished (no leak reported must mean none found).
    assert run.returncode == 0, run.report()
    assert "kernel builds: 0 " in run.stdout, run.report()
    assert "outside any case" not in run.stdout, run.report()
    assert set(run.outcomes.values()) <= {"passed", "skipped"}, run.report()
    assert set(run.outcomes) >= FRAMEWORK_CASES | DEBUG_CHECKS, run.report()
    suites = {name.split(".")[0] for name in run.outcomes}
    expected = {"kunit-compat-resource", "kunit_mock", "eeprom_buffer_mock", "of_base", "of_overlay"}
    assert expected <= suites, run.report()
    assert "sanitize" not in suites, run.report()


SANITIZE_OUTCOMES = {
    "sanitize.sanitize_pass_first": "passed",
    "sanitize.sanitize_leak": "passed",  # a leak fails the run (kmemleak's scan), never a case
    "sanitize.sanitize_kmalloc_overflow": "failure",
    "sanitize.sanitize_pass_after_overflow": "passed",
    "sanitize.sanitize_overflow_in_work": "failure",
    "sanitize.sanitize_shift_overflow": "failure",
    "sanitize.sanitize_pass_last": "passed",
}


def test_each_report_fails_its_own_case_and_the_framework_stays_green(kunit: Kunit) -> None:
    """The sanitize suite's cases and the example suite's in one boot: a report fails the case it was printed in and
    no other (passing cases run between the failing ones, and the example suite after them)."""
    # --kunit-sanitize adds nothing the fragment lacks: the instrumented kernel serves it as it is.
    run, _ = sanitize_selection(kunit)
    assert "kernel builds: 0 " in run.stdout, run.report()
    sanitize = {name: outcome for name, outcome in run.outcomes.items() if name.startswith("sanitize.")}
    assert sanitize == SANITIZE_OUTCOMES, run.report()
    framework = {name: outcome for name, outcome in run.outcomes.items() if not name.startswith("sanitize.")}
    example = {name for name in FRAMEWORK_CASES if name.startswith("example.")}
    assert set(framework) == example and example, run.report()
    assert {name for name, outcome in framework.items() if outcome == "skipped"} == FRAMEWORK_SKIPS, run.report()
    assert all(outcome in ("passed", "skipped") for outcome in framework.values()), run.report()
    text = run.stdout
    # The leak: kmemleak's final scan (the fragment has the debug kernel's kmemleak) finds it after the last suite,
    # outside any case, and fails the run; no other report is outside a case.
    outside = [line for line in text.splitlines() if "while no test case ran" in line]
    assert outside and all("kmemleak: unreferenced object 0x" in line for line in outside), run.report()
    assert run.returncode == 1, run.report()
    # 6.1's KASAN fails no case itself (its KUnit hook needs CONFIG_KASAN_KUNIT_TEST): the report alone does, and is
    # the evidence, decoded, shown once (the summary line and the report's own headline).
    kmalloc = failure(text, "sanitize.sanitize_kmalloc_overflow")
    said = "sanitizer report while this case ran (its own result line said passed: KUnit did not see it): "
    assert said + "BUG: KASAN: slab-out-of-bounds in sanitize_kmalloc_overflow" in kmalloc, run.report()
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
