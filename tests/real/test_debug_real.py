"""The real tier for testsuites/kunit-debug.kunitconfig: KUnit's suites and the kernel series' on a debug kernel
(KASAN, UBSAN, lockdep, DEBUG_ATOMIC_SLEEP, debug objects, kmemleak). One more cold build in CI, the slowest of the
tier: the debug options make the kernel slower to build and to run under TCG. scripts/check-series.sh builds the
same kernel (the tarball plus kernel-patches/ in the default cache), so after it this test only boots."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_real_kernel import FRAMEWORK_CASES, report, run

pytestmark = pytest.mark.real

DEBUG = "testsuites/kunit-debug.kunitconfig"
# The cases that check the series' fixes for what these debug options catch: each fails on a report printed while it
# runs (a use after free, a stack overrun, a sleep in atomic context), as well as on its own expectations.
DEBUG_CHECKS = {
    "kunit_mock.mock_test_odd_sized_returns",
    "kunit_mock.mock_test_streq_on_integer_fails",
    "kunit_mock.mock_test_owner_gone_before_cleanup",
    "kunit_mock.mock_test_sequence_outlives_stack",
    "kunit_mock.mock_test_atomic_context",
    "eeprom_buffer_mock.eeprom_buffer_mock_retries_after_short_write_error",
    "string-stream-test.string_stream_test_append_percent",
}


def test_series_suites_are_clean_on_the_debug_kernel(tmp_path: Path) -> None:
    # The series' own first patch keeps 6.1's PVH entry, through which QEMU boots the vmlinux, free of KASAN checks.
    process, outcomes = run(tmp_path, DEBUG)
    # A sanitizer, lockdep, debug-objects or kmemleak report fails the case it was printed in, or the run; so does a
    # kmemleak final scan that never finished (no leak reported must mean none found).
    assert process.returncode == 0, report(process)
    assert "outside any case" not in process.stdout, report(process)
    assert set(outcomes.values()) <= {"passed", "skipped"}, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES | DEBUG_CHECKS, report(process)
    suites = {name.split(".")[0] for name in outcomes}
    assert {"kunit-seed-resource", "kunit_mock", "eeprom_buffer_mock", "of_base", "of_overlay"} <= suites, report(
        process
    )


UNFIX = "tests/data/unfix-patches"
# What each fix's case does with its fix undone (tests/data/unfix-patches/README.md): the failure the fix prevents.
WITHOUT_ITS_FIX = {
    "string-stream-test.string_stream_test_append_percent": "failure",
    "kunit_mock.mock_test_streq_on_integer_fails": "failure",
    "kunit_mock.mock_test_owner_gone_before_cleanup": "failure",
    "kunit_mock.mock_test_sequence_outlives_stack": "failure",
    "kunit_mock.mock_test_atomic_context": "failure",
    "eeprom_buffer_mock.eeprom_buffer_mock_retries_after_short_write_error": "failure",
    # GCC 12 narrows the inlined 8-byte store to the local's bytes: the overrun the fix removes never happens at run
    # time with this compiler, so the case passes either way.
    "kunit_mock.mock_test_odd_sized_returns": "passed",
}


def test_each_fix_s_case_fails_without_it(tmp_path: Path) -> None:
    selected = " or ".join(name.split(".")[1] for name in WITHOUT_ITS_FIX)
    process, outcomes = run(
        tmp_path, DEBUG, "--kunit-patches=kernel-patches", f"--kunit-patches={UNFIX}", "-k", selected
    )
    assert {name: outcome for name, outcome in outcomes.items() if name in WITHOUT_ITS_FIX} == WITHOUT_ITS_FIX, report(
        process
    )
    for evidence in (
        "string-stream-test.string_stream_test_append_percent FAILED at lib/kunit/string-stream-test.c:57",
        "kunit_mock.mock_test_streq_on_integer_fails CRASHED",
        "BUG: KASAN: null-ptr-deref in strcmp",
        "BUG: KASAN: use-after-free in __kunit_add_resource",
        "BUG: KASAN: stack-out-of-bounds in __kunit_mock_call",
        "BUG: sleeping function called from invalid context",
        "eeprom_buffer_mock.eeprom_buffer_mock_retries_after_short_write_error FAILED at",
    ):
        assert evidence in process.stdout, report(process)
