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
    # All but the endless hang: see the next test.
    process, outcomes = run(tmp_path, UML, FAULTS, "--kunit-timeout=10", "-k", "not hang_forever", "-rA")
    expected = {name: outcome for name, outcome in FAULT_OUTCOMES.items() if name != "faults.faults_hang_forever"}
    assert outcomes == expected, report(process)
    text = process.stdout
    for said in (
        "faults.faults_fail FAILED at pytest-kunit/faults/faults-test.c:",
        # UML panics on a kernel-mode fault and on BUG() (it has no oops that kills only the thread): the guest
        # dies in the case, which is that case's crash; the cases after it run in a fresh guest.
        "faults.faults_null_dereference CRASHED",
        "Kernel panic - not syncing: Segfault with no mm",
        "faults.faults_bug CRASHED",
        "BUG: failure at pytest-kunit/faults/faults-test.c:",
        "faults.faults_panic CRASHED",
        "Kernel panic - not syncing: pytest-kunit fault suite: deliberate panic",
    ):
        assert said in text, report(process)
    # A panicking UML aborts itself (SIGABRT): the kernel's own death, never taken for a signal from outside.
    assert "from outside" not in text, report(process)
    # The crash reports' frames are decoded to file:line against the UML build's vmlinux.
    assert re.search(r"kunit_try_run_case \(lib/kunit/test\.c:\d+\)", text), report(process)


@pytest.mark.xfail(
    strict=True,
    reason="on UML (6.1 with the series) a case that sleeps forever stalls the whole kernel: not even the result "
    "line of the case before it reaches the console, so that case is killed by the watchdog as TIMED OUT; under "
    "QEMU it passes and only the hang times out",
)
def test_an_endless_hang_times_out_only_itself(tmp_path: Path) -> None:
    process, outcomes = run(tmp_path, UML, FAULTS, "--kunit-timeout=5", "-k", "pass_after_bug or hang_forever")
    assert outcomes == {"faults.faults_pass_after_bug": "passed", "faults.faults_hang_forever": "failure"}, report(
        process
    )
