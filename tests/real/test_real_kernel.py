"""The real tier: build the packaged Debian 6.1 tree with kernel-patches/ and boot it in QEMU (TCG).

Each test runs pytest in a subprocess exactly as a user would, sharing the default cache, so the kernel a test needs
is built once for the whole tier.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import kcidb_io
import pytest

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORK = "testsuites/kunit.kunitconfig"
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


def run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run `pytest --kunit` from the repository; return the process and {suite.case: outcome} from JUnit XML."""
    junit = tmp_path / "junit.xml"
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", "-v", f"--junitxml={junit}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            suite = case.get("classname", "").rsplit(".", 1)[-1]
            name = f"{suite}.{case.get('name')}"
            outcome = "passed"
            for tag in ("failure", "error", "skipped"):
                if case.find(tag) is not None:
                    outcome = tag
            outcomes[name] = outcome
    return process, outcomes


def report(process: subprocess.CompletedProcess[str]) -> str:
    return process.stdout[-6000:] + process.stderr[-3000:]


def test_framework_suites_pass(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, FRAMEWORK)
    assert process.returncode == 0, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES, report(process)
    assert {name for name, outcome in outcomes.items() if outcome == "skipped"} == FRAMEWORK_SKIPS
    assert all(outcome in ("passed", "skipped") for outcome in outcomes.values()), outcomes


def test_warm_selection_boots_only_the_chosen_case(tmp_path: Path) -> None:
    run(tmp_path, FRAMEWORK)  # make sure the kernel is built and listed
    process, outcomes = run(tmp_path, FRAMEWORK, "-k", "example_simple_test")
    assert process.returncode == 0, report(process)
    assert outcomes == {"example.example_simple_test": "passed"}
    assert "kernel builds: 0 " in process.stdout, report(process)
    assert "guest boots: 1 " in process.stdout, report(process)
    assert "boot 1: kunit.filter_glob=example.example_simple_test" in process.stdout, report(process)


def test_failures_come_from_the_console(tmp_path: Path) -> None:
    process, outcomes = run(
        tmp_path,
        FRAMEWORK,
        "--kunit-patches=kernel-patches",
        "--kunit-patches=tests/data/patches/failing",
        "-k",
        "example",
    )
    assert process.returncode == 1, report(process)
    assert outcomes["example.example_simple_test"] == "passed"
    assert outcomes["example.example_failing_test"] == "failure"
    assert outcomes["example.example_assert_failing_test"] == "failure"
    assert outcomes["example.example_params_test"] == "passed"
    assert outcomes["example.example_params_failing_test"] == "failure"
    text = process.stdout
    assert "example.example_failing_test FAILED at lib/kunit/kunit-example-test.c:" in text
    assert "Expected 1 + 1 == 3, but" in text
    assert "example.example_assert_failing_test FAILED at lib/kunit/kunit-example-test.c:" in text
    assert "failing parameters: value 2" in text


def test_two_xdist_workers(tmp_path: Path) -> None:
    run(tmp_path, FRAMEWORK)  # build first, so the comparison below is about booting
    process, outcomes = run(tmp_path, FRAMEWORK, "-n", "2")
    assert process.returncode == 0, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES
    assert {name for name, outcome in outcomes.items() if outcome == "skipped"} == FRAMEWORK_SKIPS
    # Each worker boots its own guest once for its batch of suites.
    assert "guest boots: 2 " in process.stdout, report(process)


def test_workers_with_a_cache_of_their_own_boot_the_controllers_image(tmp_path: Path) -> None:
    """Workers as on other hosts (no tree, no cache): the controller's warm build travels to them, once."""
    run(tmp_path, FRAMEWORK)  # built and listed in the default cache, as on the developer's machine
    workers = tmp_path / "workers"
    process, outcomes = run(tmp_path, FRAMEWORK, "-d", "--tx", f"2*popen//env:XDG_CACHE_HOME={workers}")
    assert process.returncode == 0, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES
    assert {name for name, outcome in outcomes.items() if outcome == "skipped"} == FRAMEWORK_SKIPS
    assert "kernel builds: 0 " in process.stdout, report(process)
    assert "fetched from the controller by hosts that share no cache with it: 1 " in process.stdout, report(process)
    (image,) = (workers / "pytest-kunit" / "images").glob("*/vmlinux")
    assert not (workers / "pytest-kunit" / "build").exists() and not (workers / "pytest-kunit" / "src").exists()
    assert len(list((workers / "pytest-kunit" / "consoles" / image.parent.name).iterdir())) == 2  # a boot each


FAULTS = "testsuites/faults/faults.kunitconfig"
FAULT_OUTCOMES = {
    "faults.faults_pass_first": "passed",
    "faults.faults_fail": "failure",
    "faults.faults_pass_after_fail": "passed",
    "faults.faults_null_dereference": "failure",
    "faults.faults_pass_after_null_dereference": "passed",
    "faults.faults_bug": "failure",
    "faults.faults_pass_after_bug": "passed",
    "faults.faults_hang_forever": "failure",
    "faults.faults_pass_after_hang": "passed",
    "faults.faults_panic": "failure",
    "faults.faults_pass_last": "passed",
}


def test_fault_suite_loses_nothing(tmp_path: Path) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", "--collect-only", "-q", FAULTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert listed.returncode == 0, report(listed)
    kcidb = tmp_path / "kcidb.json"
    process, outcomes = run(tmp_path, FAULTS, "--kunit-timeout=10", f"--kunit-kcidb={kcidb}")
    assert outcomes == FAULT_OUTCOMES, report(process)
    text = process.stdout
    for expected in (
        "faults.faults_fail FAILED at pytest-kunit/faults/faults-test.c:",
        "faults.faults_null_dereference CRASHED",
        "BUG: kernel NULL pointer dereference",
        "faults.faults_bug CRASHED",
        "kernel BUG at pytest-kunit/faults/faults-test.c:",
        "faults.faults_hang_forever TIMED OUT",
        "faults.faults_panic CRASHED",
        "Kernel panic - not syncing: pytest-kunit fault suite: deliberate panic",
    ):
        assert expected in text, report(process)
    # The crash report's frames are decoded to file:line from the build's vmlinux.
    assert re.search(r"faults_null_dereference \(pytest-kunit/faults/faults-test\.c:\d+\)", text), report(process)
    # One boot for the suite; the hang comes after two crashes, so it is run again in a fresh guest, where it hangs
    # again (its verdict); then one boot after that hang and one after the panic.
    assert "guest boots: 4 " in text, report(process)
    assert "cases run again in a fresh guest: 1 " in text, report(process)
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
    assert build["config_name"] == FAULTS and "CONFIG_KUNIT=y" in build["misc"]["kunitconfig"]
    assert results["checkouts"][0]["patchset_hash"]  # our series, applied to the packaged tarball


MISC = "testsuites/misc-example/misc-example.kunitconfig"


def test_out_of_tree_misc_example(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, MISC)
    assert outcomes == {
        "misc-example.misc_example_add_test_basic": "passed",
        "misc-example.misc_example_test_failure": "failure",
    }, report(process)
    assert "misc-example.misc_example_test_failure FAILED at pytest-kunit/misc-example/example-test.c:" in (
        process.stdout
    )
    assert "This test never passes." in process.stdout


def test_series_suites_run_in_the_framework_fragment(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, FRAMEWORK)
    suites = {name.split(".")[0] for name in outcomes}
    # The RFC API, written as the RFC wrote it, and class mocking with its EEPROM example.
    assert {
        "kunit-seed-module",
        "kunit-seed-string-stream",
        "kunit-seed-kunit-stream",
        "kunit-seed-resource",
        "My_fabulous_test_module",
        "kunit_mock",
        "eeprom_buffer_fake",
        "eeprom_buffer_mock",
    } <= suites, report(process)
    assert process.returncode == 0, report(process)


@pytest.mark.parametrize("fragment", ["testsuites/all-tests.kunitconfig", "testsuites/of.kunitconfig"])
def test_default_fragments_pass(tmp_path: Path, fragment: str) -> None:
    process, outcomes = run(tmp_path, fragment)
    assert process.returncode == 0, report(process)
    assert len(outcomes) >= 30, report(process)
    assert set(outcomes.values()) <= {"passed", "skipped"}, report(process)
    if fragment.endswith("of.kunitconfig"):
        assert {name.split(".")[0] for name in outcomes} >= {"of_base", "of_overlay", "of_dynamic"}
