"""The real tier on arm64 guests: the packaged 6.1 tree with the series, cross-built and booted on QEMU's virt machine.

One arm64 kernel (a cold cross build costs minutes of CI's 90): the framework fragment and the fault suite share it
(conftest.KERNELS["arm64"]), which covers the cross toolchain, the series' own suites (the RFC API, class mocking),
the PL011 console, selection, two xdist workers, and crash reports decoded with the cross binutils. The device-tree
unittest on QEMU's own device tree and every default fragment at once take two more cold arm64 builds: bench/
runs them (docs/performance.md)."""

from __future__ import annotations

import re

import pytest

from .conftest import FAULTS, FRAMEWORK, Kunit
from .test_real_kernel import FAULT_OUTCOMES, assert_framework_green

pytestmark = [pytest.mark.real("arm64"), pytest.mark.xdist_group("arm64")]

ARM64 = "--kunit-arch=arm64"


def test_framework_and_series_suites(kunit: Kunit) -> None:
    kunit.kernel("arm64")
    run = kunit.run(ARM64, FRAMEWORK)
    assert run.returncode == 0, run.report()
    assert_framework_green(run.outcomes, run.report())
    # The RFC API and class mocking, built for arm64.
    suites = {name.split(".")[0] for name in run.outcomes}
    assert {"kunit-compat-module", "kunit-compat-resource", "kunit_mock", "eeprom_buffer_mock"} <= suites, run.report()
    assert "arch arm64" in run.stdout and "kernel builds: 0 " in run.stdout, run.report()


def test_selection_and_two_workers(kunit: Kunit) -> None:
    kunit.kernel("arm64")
    run = kunit.run(ARM64, FRAMEWORK, "-k", "example_simple_test")
    assert run.outcomes == {"example.example_simple_test": "passed"}, run.report()
    assert "kernel builds: 0 " in run.stdout and "guest boots: 1 " in run.stdout, run.report()
    run = kunit.run(ARM64, FRAMEWORK, "-n", "2")
    assert run.returncode == 0, run.report()
    assert_framework_green(run.outcomes, run.report())
    assert "guest boots: 2 " in run.stdout, run.report()


def test_fault_suite_loses_nothing(kunit: Kunit) -> None:
    kunit.kernel("arm64")
    run = kunit.run(ARM64, FAULTS, "--kunit-timeout=10")
    assert run.outcomes == FAULT_OUTCOMES, run.report()
    text = run.stdout
    for expected in (
        "faults.faults_null_dereference CRASHED",
        # arm64's words for the same faults as x86_64's.
        "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000",
        "faults.faults_bug CRASHED",
        "kernel BUG at pytest-kunit/faults/faults-test.c:",
        "faults.faults_hang_forever TIMED OUT",
        "Kernel panic - not syncing: pytest-kunit fault suite: deliberate panic",
    ):
        assert expected in text, run.report()
    # Decoded with aarch64-linux-gnu-addr2line: decode_stacktrace.sh writes the frame `func+0x24/0x8c` as
    # `func (file:line)`, as on x86_64.
    decoded = r"faults_null_dereference \(pytest-kunit/faults/faults-test\.c:\d+\)"
    assert re.search(decoded, text), run.report()
