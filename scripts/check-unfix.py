#!/usr/bin/env python3
"""Each fix of the kernel series checked on the debug kernel fails with its fix undone (tests/data/unfix-patches):
the series plus the patches that undo each fix, testsuites/kunit-debug.kunitconfig run through pytest-kunit, and each
fix's case must end as WITHOUT_ITS_FIX says, with its evidence on the console. A cold debug build of a tree of its
own, so scripts/check-series.sh runs it (its last step) rather than command two. Exit status 0 when all hold."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What each fix's case does with its fix undone (tests/data/unfix-patches/README.md): the failure the fix prevents.
WITHOUT_ITS_FIX = {
    "string-stream-test.string_stream_test_append_percent": "failure",
    "kunit_mock.mock_test_streq_on_integer_fails": "failure",
    "kunit_mock.mock_test_odd_sized_store_stays_in_bounds": "failure",
    "kunit_mock.mock_test_owner_gone_before_cleanup": "failure",
    "kunit_mock.mock_test_sequence_outlives_stack": "failure",
    "kunit_mock.mock_test_atomic_context": "failure",
    "eeprom_buffer_mock.eeprom_buffer_mock_retries_after_short_write_error": "failure",
    "kunit_executor_test.filter_suites_that_ran_outlive_the_run_test": "failure",
    "kunit-resource-test.kunit_resource_test_cleanup_keeps_running_test": "failure",
    "kunit_mock.mock_test_copy_beyond_buffer_fails": "failure",
    "eeprom_buffer_mock.eeprom_buffer_mock_keeps_bytes_taken_on_write_error": "failure",
    "eeprom_buffer_mock.eeprom_buffer_mock_exit_after_failed_init": "failure",
    "kunit_mock.mock_test_hardirq_context": "failure",
    "of_overlay_high_level.of_unittest_overlay_bus_depopulated": "failure",
    "kunit-compat-kunit-stream.compat_kunit_stream_exit_after_failed_init": "failure",
    "kunit-compat-resource.compat_resource_exit_after_failed_init": "failure",
    "My_fabulous_test_module.my_exit_after_failed_init": "failure",
    "kunit_mock.mock_test_copy_object_beyond_size_fails": "failure",
    "kunit_mock.mock_test_copy_size_from_pointer_fails": "failure",
    "string-stream-test.string_stream_test_append_keeps_no_copy": "failure",
}
# Cases that need a boot of their own: the hardirq case fails on a lockdep report, and an oops earlier in the same
# boot (the crashed cases above) turns lockdep off for good.
ALONE = ("kunit_mock.mock_test_hardirq_context",)
EVIDENCE = (
    "string-stream-test.string_stream_test_append_percent FAILED at lib/kunit/string-stream-test.c:57",
    "kunit_mock.mock_test_streq_on_integer_fails CRASHED",
    "BUG: KASAN: null-ptr-deref in strcmp",
    "kunit_mock.mock_test_odd_sized_store_stays_in_bounds FAILED at lib/kunit/kunit-mock-test.c:",
    "BUG: KASAN: use-after-free in __kunit_add_resource",
    "BUG: KASAN: stack-out-of-bounds in __kunit_mock_call",
    "BUG: sleeping function called from invalid context",
    "eeprom_buffer_mock.eeprom_buffer_mock_retries_after_short_write_error FAILED at",
    "the suites that ran were freed under their debugfs files",
    "kunit-resource-test.kunit_resource_test_cleanup_keeps_running_test FAILED at lib/kunit/kunit-test.c:",
    "kunit_mock.mock_test_copy_beyond_buffer_fails FAILED at lib/kunit/kunit-mock-test.c:",
    "eeprom_buffer_mock.eeprom_buffer_mock_keeps_bytes_taken_on_write_error FAILED at",
    "eeprom_buffer_mock.eeprom_buffer_mock_exit_after_failed_init CRASHED",
    "inconsistent lock state",
    "lock debugging found a problem: see the kernel log",
    "left by the of_overlay suite",
    "reported under the spinlock",
    "kunit-compat-kunit-stream.compat_kunit_stream_exit_after_failed_init CRASHED",
    "kunit-compat-resource.compat_resource_exit_after_failed_init CRASHED",
    "My_fabulous_test_module.my_exit_after_failed_init CRASHED",
    "the object it points to has 2 bytes",
    "should give the buffer's size, is a pointer\" missing from log",
    "kunit_mock.mock_test_copy_size_from_pointer_fails FAILED at lib/kunit/kunit-mock-test.c:",
    "string-stream-test.string_stream_test_append_keeps_no_copy FAILED at lib/kunit/string-stream-test.c:",
)


def run(selected: str) -> tuple[dict[str, str], str]:
    """The debug fragment on the series and the unfix patches, the cases `selected` (-k): each case's outcome and
    the console."""
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "--kunit", f"--junitxml={junit}"]
        command += ["testsuites/kunit-debug.kunitconfig", "--kunit-patches=kernel-patches"]
        command += ["--kunit-patches=tests/data/unfix-patches", "-k", selected]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        outcomes = {}
        for case in ET.parse(junit).getroot().iter("testcase") if junit.exists() else ():
            tag = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
            outcomes[f"{case.get('classname', '').rsplit('.', 1)[-1]}.{case.get('name')}"] = tag
    return outcomes, done.stdout


def main() -> int:
    together = [name.split(".")[1] for name in WITHOUT_ITS_FIX if name not in ALONE]
    outcomes, stdout = run(" or ".join(together))
    for name in ALONE:  # the same kernel: no build
        alone, console = run(name.split(".")[1])
        outcomes[name] = alone.get(name, "missing")
        stdout += console
    wrong = {name: outcomes.get(name) for name, outcome in WITHOUT_ITS_FIX.items() if outcomes.get(name) != outcome}
    missing = [said for said in EVIDENCE if said not in stdout]
    for name, outcome in WITHOUT_ITS_FIX.items():
        print(f"{'ok  ' if name not in wrong else 'FAIL'} {name}: {outcomes.get(name)} (expected {outcome})")
    for said in missing:
        print(f"FAIL evidence missing: {said}")
    if wrong or missing:
        print(stdout[-4000:])
    return 1 if wrong or missing else 0


if __name__ == "__main__":
    sys.exit(main())
