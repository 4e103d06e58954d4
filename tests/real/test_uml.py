"""The real tier on User Mode Linux (--kunit-arch um): the packaged 6.1 tree with kernel-patches/ built as ARCH=um and
run as a host program. Two cold UML builds: the framework fragment, and the fault suite (an out-of-tree suite).
Measured on the project's machine under load (~10): 836 s and 912 s."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .test_real_kernel import FAULT_OUTCOMES, FAULTS, FRAMEWORK, FRAMEWORK_CASES, FRAMEWORK_SKIPS, report, run

pytestmark = pytest.mark.real

UML = "--kunit-arch=um"


def test_framework_suites_pass_on_uml(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, UML, FRAMEWORK)
    assert process.returncode == 0, report(process)
    assert set(outcomes) >= FRAMEWORK_CASES, report(process)
    assert {name for name, outcome in outcomes.items() if outcome == "skipped"} == FRAMEWORK_SKIPS, report(process)
    assert "arch um" in process.stdout
    # The guest is the build's own `linux`, run directly: no QEMU anywhere in the run.
    assert "qemu" not in process.stdout.lower(), report(process)


def test_fault_suite_gives_the_verdicts_it_gives_under_qemu(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, UML, FAULTS, "--kunit-timeout=10", "-rA")
    assert outcomes == FAULT_OUTCOMES, report(process)
    text = process.stdout
    for said in (
        "faults.faults_fail FAILED at pytest-kunit/faults/faults-test.c:",
        # UML panics on a kernel-mode fault and on BUG() (it has no oops that kills only the thread): the guest
        # dies in the case, which is that case's crash; the cases after it run in a fresh guest.
        "faults.faults_null_dereference CRASHED",
        "Kernel panic - not syncing: Segfault with no mm",
        "faults.faults_bug CRASHED",
        "BUG: failure at pytest-kunit/faults/faults-test.c:",
        # The hang leaves the case before it looking in flight (printk holds its result line back until a next line
        # that never comes): that case runs again alone and passes; only the hang times out.
        "faults.faults_hang_forever TIMED OUT",
        "faults.faults_panic CRASHED",
        "Kernel panic - not syncing: pytest-kunit fault suite: deliberate panic",
    ):
        assert said in text, report(process)
    # A panicking UML aborts itself (SIGABRT): the kernel's own death, never taken for a signal from outside.
    assert "from outside (pytest-kunit did not send it)" not in text, report(process)
    # The crash reports' frames are decoded to file:line against the UML build's vmlinux.
    assert re.search(r"kunit_try_run_case \(lib/kunit/test\.c:\d+\)", text), report(process)
