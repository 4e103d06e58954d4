"""The real tier on two more architectures, both in one run: i386 (32-bit longs and pointers, the host's gcc with
-m32) and 32-bit big-endian powerpc (a PowerMac G3), each with the packaged 6.1 tree, the series and the framework
fragment. (m68k builds and boots faster, but its kernel command line holds 256 bytes: a boot's list of suites is cut
short there, see docs/architectures.md.)

One pytest run builds both kernels (conftest.KERNELS["arches"]: `--kunit-arch i386,powerpc`), as a user asks for
several architectures; each case is then collected once per architecture, the architecture in its node id and in
JUnit. The other records (arm, riscv64, powerpc, s390, ...) are each a cold cross build: the whole list runs in
bench/ (docs/performance.md, "Every architecture")."""

from __future__ import annotations

import pytest

from .conftest import BIG_ENDIAN, FRAMEWORK, LITTLE_32, Kunit, junit_outcomes
from .test_real_kernel import assert_framework_green

TWO = f"--kunit-arch={LITTLE_32},{BIG_ENDIAN}"

pytestmark = [pytest.mark.real("arches"), pytest.mark.xdist_group("arches")]


def test_framework_green_on_i386_and_a_big_endian_guest(kunit: Kunit) -> None:
    kunit.kernel("arches")
    run = kunit.run(TWO, FRAMEWORK, "-n", "2")
    assert run.returncode == 0, run.report()
    assert "kernel builds: 0 " in run.stdout, run.report()
    by_arch = {arch: junit_outcomes(run.junit, arch) for arch in (LITTLE_32, BIG_ENDIAN)}
    for outcomes in by_arch.values():
        assert_framework_green(outcomes, run.report())
    # The same cases on both: neither architecture loses a suite (a symbol Kconfig dropped there).
    assert by_arch[LITTLE_32].keys() == by_arch[BIG_ENDIAN].keys(), run.report()


def test_one_architectures_case_by_its_node_id(kunit: Kunit) -> None:
    kunit.kernel("arches")
    node = f"{FRAMEWORK}::{BIG_ENDIAN}::example::example_simple_test"
    run = kunit.run(TWO, node)
    assert run.returncode == 0, run.report()
    assert f"{node} PASSED" in run.stdout, run.report()
    assert "guest boots: 1 " in run.stdout and "kernel builds: 0 " in run.stdout, run.report()


def test_debian_12s_sh4_compiler_is_refused_before_it_builds(kunit: Kunit) -> None:
    # Debian 12's gcc-sh4-linux-gnu (12.2.0) drops the test of `if (!flag)` before its branch, and the kernel it builds
    # spins in its decompressor without a line: the run says so at once, not after minutes of build and a silent boot.
    # (Should Debian mend its compiler, this fails: then sh4's record is to be proven green here instead.)
    run = kunit.run("--kunit-arch=sh4", FRAMEWORK, "-k", "example_simple_test")
    assert run.returncode != 0, run.report()
    assert "sh4-linux-gnu-gcc miscompiles sh4 kernels: it drops the test of `if (!flag)`" in run.stdout, run.report()
    assert "--kunit-cross-compile" in run.stdout, run.report()
    assert "configuring kernel" not in run.stdout and "building kernel" not in run.stdout, run.report()
