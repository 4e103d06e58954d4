"""The real tier on x86_64: the packaged Debian 6.1 tree with kernel-patches/, booted in QEMU (TCG).

One kernel serves this module: the framework fragment and the two out-of-tree suites (faults, misc-example) share it
(conftest.KERNELS["x86_64"]), and each test then runs its fragment alone as a user types it, served by that kernel
with only the fragment's own suites (reuse.py). The all-tests fragment, a kernel of its own, is bench/all_tests.py's
(docs/performance.md); the series' suites it adds (the device-tree unittest among them) run on x86_64 in
test_debug_real."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kcidb_io
import pytest

from .conftest import FAULTS, FRAMEWORK, MISC, NAMES, Kunit

pytestmark = [pytest.mark.real("x86_64"), pytest.mark.xdist_group("x86_64")]

# The 24 cases upstream `kunit.py run --kunitconfig=lib/kunit/.kunitconfig` reports on this tree: 22 pass, 2 skip.
FRAMEWORK_SKIPS = {"example.example_skip_test", "example.example_mark_skipped_test"}
FRAMEWORK_CASES = {
    "kunit_executor_test.parse_filter_test",
    "kunit_executor_test.filter_suites_test",
    "kunit_executor_test.filter_suites_test_glob_test",
    "kunit_executor_test.filter_suites_to_empty_test",
    "kunit-try-catch-test.kunit_test_try_catch_successful_try_no_catch",
    "kunit-try-catch-test.kunit_test_try_catch_unsuccessful_try_does_catch",
    "kunit-resource-test.kunit_resource_test_init_resources",
    "kunit-resource-test.kunit_resource_test_alloc_resource",
    "kunit-resource-test.kunit_resource_test_destroy_resource",
    "kunit-resource-test.kunit_resource_test_remove_resource",
    "kunit-resource-test.kunit_resource_test_cleanup_resources",
    "kunit-resource-test.kunit_resource_test_proper_free_ordering",
    "kunit-resource-test.kunit_resource_test_static",
    "kunit-resource-test.kunit_resource_test_named",
    "kunit-log-test.kunit_log_test",
    "kunit_status.kunit_status_set_failure_test",
    "kunit_status.kunit_status_mark_skipped_test",
    "string-stream-test.string_stream_test_empty_on_creation",
    "string-stream-test.string_stream_test_not_empty_after_add",
    "string-stream-test.string_stream_test_get_string",
    "example.example_simple_test",
    "example.example_skip_test",
    "example.example_mark_skipped_test",
    "example.example_all_expect_macros_test",
}
FAULT_OUTCOMES = {
    "faults.faults_pass_first": "passed",
    "faults.faults_fail": "failure",
    "faults.faults_pass_after_fail": "passed",
    "faults.faults_params_one_fails": "failure",
    "faults.faults_null_dereference": "failure",
    "faults.faults_pass_after_null_dereference": "passed",
    "faults.faults_bug": "failure",
    "faults.faults_pass_after_bug": "passed",
    "faults.faults_hang_forever": "failure",
    "faults.faults_pass_after_hang": "passed",
    "faults.faults_panic": "failure",
    "faults.faults_pass_last": "passed",
}


# The series' cases that cannot check on the framework's kernel skip, saying why: the mock's interrupt-context cases
# without lockdep (PROVE_LOCKING is the debug kernel's, test_debug_real), and the executor's filter case in a boot
# without kunit.filter_glob (a kernel of the fragment's own runs every suite unfiltered; a shared one filters).
LOCKDEP_SKIPS = {"kunit_mock.mock_test_hardirq_context", "kunit_mock.mock_test_softirq_context"}
UNFILTERED_SKIP = "kunit_executor_test.filter_suites_that_ran_outlive_the_run_test"


def assert_framework_green(run_outcomes: dict[str, str], report: str) -> None:
    assert set(run_outcomes) >= FRAMEWORK_CASES | LOCKDEP_SKIPS | {UNFILTERED_SKIP}, report
    skipped = {name for name, outcome in run_outcomes.items() if outcome == "skipped"}
    assert skipped - {UNFILTERED_SKIP} == FRAMEWORK_SKIPS | LOCKDEP_SKIPS, report
    assert all(outcome in ("passed", "skipped") for outcome in run_outcomes.values()), report


def test_framework_suites_pass_in_the_kernel_they_share(kunit: Kunit) -> None:
    shared = kunit.kernel("x86_64")
    for fragment in (FRAMEWORK, FAULTS, MISC):
        assert f"{fragment} runs in the kernel shared by" in shared.stdout, shared.report()
    run = kunit.run(FRAMEWORK)
    assert run.returncode == 0, run.report()
    assert_framework_green(run.outcomes, run.report())
    # Alone, as a user types it: no build, the shared kernel serves it with its own suites only.
    assert "kernel builds: 0 " in run.stdout, run.report()
    assert f"{FRAMEWORK} runs in the kernel built for" in run.stdout, run.report()
    assert not any(name.startswith(("faults.", "misc-example.")) for name in run.outcomes), run.report()
    # The series' own suites: the RFC API, written as the RFC wrote it, and class mocking with its EEPROM example.
    assert {
        "kunit-compat-module",
        "kunit-compat-string-stream",
        "kunit-compat-kunit-stream",
        "kunit-compat-resource",
        "My_fabulous_test_module",
        "kunit_mock",
        "eeprom_buffer_fake",
        "eeprom_buffer_mock",
    } <= {name.split(".")[0] for name in run.outcomes}, run.report()


def test_warm_selection_boots_only_the_chosen_case(kunit: Kunit) -> None:
    kunit.kernel("x86_64")
    run = kunit.run(FRAMEWORK, "-k", "example_simple_test")
    assert run.returncode == 0, run.report()
    assert run.outcomes == {"example.example_simple_test": "passed"}
    assert "kernel builds: 0 " in run.stdout, run.report()
    assert "guest boots: 1 " in run.stdout, run.report()
    assert "boot 1: kunit.filter_glob=example.example_simple_test" in run.stdout, run.report()


def test_two_xdist_workers(kunit: Kunit) -> None:
    kunit.kernel("x86_64")
    run = kunit.run(FRAMEWORK, "-n", "2")
    assert run.returncode == 0, run.report()
    assert_framework_green(run.outcomes, run.report())
    # Each worker boots its own guest once for its batch of suites.
    assert "guest boots: 2 " in run.stdout, run.report()


def test_workers_with_a_cache_of_their_own_boot_the_controllers_image(kunit: Kunit, tmp_path: Path) -> None:
    """Workers as on other hosts (no tree, no cache): the controller's warm build travels to them, once."""
    kunit.kernel("x86_64")
    workers = tmp_path / "workers"
    run = kunit.run(FRAMEWORK, "-d", "--tx", f"2*popen//env:XDG_CACHE_HOME={workers}")
    assert run.returncode == 0, run.report()
    assert_framework_green(run.outcomes, run.report())
    assert "kernel builds: 0 " in run.stdout, run.report()
    assert "fetched from the controller by hosts that share no cache with it: 1 " in run.stdout, run.report()
    (image,) = (workers / "pytest-kunit" / "images").glob("*/vmlinux")
    assert not any((workers / "pytest-kunit" / "build").iterdir())
    assert not any((workers / "pytest-kunit" / "src").iterdir())
    assert len(list((workers / "pytest-kunit" / "consoles" / image.parent.name).iterdir())) == 2  # a boot each


def test_fault_suite_loses_nothing(kunit: Kunit, tmp_path: Path) -> None:
    kunit.kernel("x86_64")
    kcidb = tmp_path / "kcidb.json"
    run = kunit.run(FAULTS, "--kunit-timeout=10", f"--kunit-kcidb={kcidb}")
    assert run.outcomes == FAULT_OUTCOMES, run.report()
    assert "kernel builds: 0 " in run.stdout, run.report()
    text = run.stdout
    for expected in (
        "faults.faults_fail FAILED at pytest-kunit/faults/faults-test.c:",
        "faults.faults_params_one_fails FAILED at pytest-kunit/faults/faults-test.c:",
        "failing parameters: value 2",
        "faults.faults_null_dereference CRASHED",
        "BUG: kernel NULL pointer dereference",
        "faults.faults_bug CRASHED",
        "kernel BUG at pytest-kunit/faults/faults-test.c:",
        "faults.faults_hang_forever TIMED OUT",
        "faults.faults_panic CRASHED",
        "Kernel panic - not syncing: pytest-kunit fault suite: deliberate panic",
    ):
        assert expected in text, run.report()
    # The crash report's frames are decoded to file:line from the build's vmlinux.
    assert re.search(r"faults_null_dereference \(pytest-kunit/faults/faults-test\.c:\d+\)", text), run.report()
    # One boot for the suite; the hang comes after two crashes, so it is run again in a fresh guest, where it hangs
    # again (its verdict); then one boot after that hang and one after the panic.
    assert "guest boots: 4 " in text, run.report()
    assert "cases run again in a fresh guest: 1 " in text, run.report()
    # The same run for KernelCI, valid by kcidb-io's schema: crashed and timed out are ERROR, with their evidence.
    results = json.loads(kcidb.read_text())
    kcidb_io.schema.V5_0.validate_exactly(results)
    tests = {test["path"]: test for test in results["tests"]}
    kcidb_status = {"passed": "PASS", "failure": "FAIL"}
    statuses = {f"kunit.{name}": kcidb_status[outcome] for name, outcome in FAULT_OUTCOMES.items()}
    for crashed in ("null_dereference", "bug", "hang_forever", "panic"):
        statuses[f"kunit.faults.faults_{crashed}"] = "ERROR"
    assert {path: test["status"] for path, test in tests.items()} == statuses
    assert re.search(r"faults-test\.c:\d+", tests["kunit.faults.faults_null_dereference"]["log_excerpt"])
    assert "kernel crash report:" in tests["kunit.faults.faults_bug"]["log_excerpt"]
    (build,) = results["builds"]
    assert "CONFIG_PYTEST_KUNIT_FAULTS_TEST=y" in build["misc"]["kunitconfig"]
    assert results["checkouts"][0]["patchset_hash"]  # our series, applied to the packaged tarball


def test_out_of_tree_misc_example(kunit: Kunit) -> None:
    kunit.kernel("x86_64")
    run = kunit.run(MISC)
    assert run.outcomes == {
        "misc-example.misc_example_add_test_basic": "passed",
        "misc-example.misc_example_test_failure": "failure",
    }, run.report()
    assert "misc-example.misc_example_test_failure FAILED at pytest-kunit/misc-example/example-test.c:" in run.stdout
    assert "This test never passes." in run.stdout


SUITE = "pytest-kunit names with spaces"
NAMED = {
    f"{SUITE}.a case with spaces": "passed",
    f"{SUITE}.punctuation (parens) [brackets] & more": "passed",
    f"{SUITE}.non-ASCII naïve café": "passed",
    f"{SUITE}.a failing case with spaces": "failure",
    f"{SUITE}.parameters with spaces": "passed",
}


def test_names_with_spaces_are_collected_selected_filtered_and_reported(kunit: Kunit) -> None:
    """What net/handshake's suite ("Handshake API tests") needs, on a suite of our own in the shared kernel: every
    name KUnit can print is an item, selected with -k and by node id, filtered in the guest exactly, in JUnit."""
    kunit.kernel("x86_64")
    run = kunit.run(NAMES)
    assert run.outcomes == NAMED, run.report()
    assert f"{SUITE}.a failing case with spaces FAILED at pytest-kunit/names/names-test.c:" in run.stdout, run.report()
    selected = kunit.run(NAMES, "-k", "failing")
    assert selected.outcomes == {f"{SUITE}.a failing case with spaces": "failure"}, selected.report()
    assert "guest boots: 1 " in selected.stdout, selected.report()
    assert f'kunit.filter_glob="{SUITE}.a failing case with spaces"' in selected.stdout, selected.report()
    by_id = kunit.run(f"{NAMES}::{SUITE}::non-ASCII naïve café")
    assert by_id.outcomes == {f"{SUITE}.non-ASCII naïve café": "passed"}, by_id.report()
    assert by_id.returncode == 0, by_id.report()
