"""The real tier on User Mode Linux (--kunit-arch um): the packaged 6.1 tree with kernel-patches/ built as ARCH=um and
run as a host program. One shared kernel for the framework fragment and the fault suite (conftest.KERNELS["um"])."""

from __future__ import annotations

import re

import pytest

from .conftest import FAULTS, FRAMEWORK, Kunit
from .test_real_kernel import FAULT_OUTCOMES, assert_framework_green

pytestmark = [pytest.mark.real("um"), pytest.mark.xdist_group("um")]

UML = "--kunit-arch=um"


def test_framework_suites_pass_on_uml(kunit: Kunit) -> None:
    kunit.kernel("um")
    run = kunit.run(UML, FRAMEWORK)
    assert run.returncode == 0, run.report()
    assert_framework_green(run.outcomes, run.report())
    assert "arch um" in run.stdout and "kernel builds: 0 " in run.stdout, run.report()
    # The guest is the build's own `linux`, run directly: no QEMU anywhere in the run.
    assert "qemu" not in run.stdout.lower(), run.report()


def test_fault_suite_gives_the_verdicts_it_gives_under_qemu(kunit: Kunit) -> None:
    kunit.kernel("um")
    run = kunit.run(UML, FAULTS, "--kunit-timeout=10", "-rA")
    assert run.outcomes == FAULT_OUTCOMES, run.report()
    text = run.stdout
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
        assert said in text, run.report()
    # A panicking UML aborts itself (SIGABRT): the kernel's own death, never taken for a signal from outside.
    assert "from outside (pytest-kunit did not send it)" not in text, run.report()
    # The crash reports' frames are decoded to file:line against the UML build's vmlinux.
    assert re.search(r"kunit_try_run_case \(lib/kunit/test\.c:\d+\)", text), run.report()
