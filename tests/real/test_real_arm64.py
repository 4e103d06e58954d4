"""The real tier on arm64 guests: the packaged 6.1 tree with the series, cross-built and booted on QEMU's virt machine.

A cold arm64 build costs minutes of CI's 90 (32 minutes on this machine under a load of 16, about a third of that
quiet), so CI builds one arm64 kernel: the framework fragment, which covers the cross toolchain, the series' own suites
(the RFC API, class mocking), the PL011 console, selection and two xdist workers. The fault, OF and all-tests
fragments (the last for the run of every default fragment) need one more cold build each: they run with
PYTEST_KUNIT_REAL_ARM64=all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .test_real_kernel import FAULT_OUTCOMES, FRAMEWORK, FRAMEWORK_CASES, FRAMEWORK_SKIPS, report, run

pytestmark = pytest.mark.real

ARM64 = "--kunit-arch=arm64"
FAULTS = "testsuites/faults/faults.kunitconfig"
OF = "testsuites/of.kunitconfig"
every_fragment = pytest.mark.skipif(
    os.environ.get("PYTEST_KUNIT_REAL_ARM64") != "all",
    reason="one more cold arm64 build: set PYTEST_KUNIT_REAL_ARM64=all",
)


def test_framework_and_series_suites(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, ARM64, FRAMEWORK)
    assert process.returncode == 0, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES, report(process)
    assert {name for name, outcome in outcomes.items() if outcome == "skipped"} == FRAMEWORK_SKIPS, report(process)
    # The RFC API and class mocking, built for arm64.
    suites = {name.split(".")[0] for name in outcomes}
    assert {"kunit-seed-module", "kunit-seed-resource", "kunit_mock", "eeprom_buffer_mock"} <= suites, report(process)
    assert "arch arm64" in process.stdout, report(process)


def test_selection_and_two_workers(tmp_path: Path) -> None:
    run(tmp_path, ARM64, FRAMEWORK)  # built and listed before the figures below
    process, outcomes = run(tmp_path, ARM64, FRAMEWORK, "-k", "example_simple_test")
    assert outcomes == {"example.example_simple_test": "passed"}, report(process)
    assert "kernel builds: 0 " in process.stdout and "guest boots: 1 " in process.stdout, report(process)
    process, outcomes = run(tmp_path, ARM64, FRAMEWORK, "-n", "2")
    assert process.returncode == 0, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES, report(process)
    assert "guest boots: 2 " in process.stdout, report(process)


@every_fragment
def test_fault_suite_loses_nothing(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, ARM64, FAULTS, "--kunit-timeout=10")
    assert outcomes == FAULT_OUTCOMES, report(process)
    text = process.stdout
    for expected in (
        "faults.faults_null_dereference CRASHED",
        # arm64's words for the same faults as x86_64's.
        "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000",
        "faults.faults_bug CRASHED",
        "kernel BUG at pytest-kunit/faults/faults-test.c:",
        "faults.faults_hang_forever TIMED OUT",
        "Kernel panic - not syncing: pytest-kunit fault suite: deliberate panic",
    ):
        assert expected in text, report(process)
    # Decoded with aarch64-linux-gnu-addr2line: decode_stacktrace.sh writes the frame `func+0x24/0x8c` as
    # `func (file:line)`, as on x86_64.
    decoded = r"faults_null_dereference \(pytest-kunit/faults/faults-test\.c:\d+\)"
    assert re.search(decoded, text), report(process)


@every_fragment
def test_of_unittest_on_a_real_device_tree(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, ARM64, OF)
    assert process.returncode == 0, report(process)
    assert set(outcomes.values()) <= {"passed", "skipped"}, report(process)
    assert {name.split(".")[0] for name in outcomes} >= {"of_base", "of_overlay", "of_dynamic"}, report(process)
    # QEMU's device tree is unflattened at boot, so the overlay_base the high-level case splices in exists here (on
    # x86_64, without a firmware tree, the case skips).
    assert outcomes["of_overlay_high_level.of_unittest_overlay_high_level"] == "passed", report(process)


@every_fragment
def test_each_overlay_case_runs_alone(tmp_path: Path) -> None:
    # One boot per case, filtered to it: no case depends on another having run before it.
    process, outcomes = run(tmp_path, ARM64, OF, "-k", "of_overlay and not high_level", "--kunit-isolate=case")
    assert process.returncode == 0, report(process)
    overlay_cases = {name for name in outcomes if name.startswith("of_overlay.")}
    assert len(overlay_cases) >= 12 and {outcomes[name] for name in overlay_cases} <= {"passed", "skipped"}, report(
        process
    )
    assert f"guest boots: {len(overlay_cases)} " in process.stdout, report(process)


@every_fragment
def test_every_default_fragment_passes(tmp_path: Path) -> None:
    # As a user types it: no path, so pytest's testpaths (testsuites/) and its default fragments (framework,
    # all-tests, the device-tree unittest); the manual ones (faults, debug, ...) stay out.
    process, outcomes = run(tmp_path, ARM64)
    assert process.returncode == 0, report(process)
    assert set(outcomes.values()) <= {"passed", "skipped"}, report(process)
    fragments = {name for name in re.findall(r"testsuites/([\w./-]+\.kunitconfig)::", process.stdout)}
    assert fragments == {"kunit.kunitconfig", "all-tests.kunitconfig", "of.kunitconfig"}, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES, report(process)
