"""The real tier on two more architectures, both in one run: i386 (32-bit longs and pointers, the host's gcc with
-m32) and 32-bit big-endian powerpc (a PowerMac G3), each with the packaged 6.1 tree, the series and the framework
fragment. (m68k builds and boots faster, but its kernel command line holds 256 bytes: a boot's list of suites is cut
short there, see README, Architectures.)

One pytest run builds both kernels (conftest.KERNELS["arches"]: `--kunit-arch i386,powerpc`), as a user asks for
several architectures; each case is then collected once per architecture, the architecture in its node id and in
JUnit. The other records (arm, riscv64, powerpc, s390, ...) are each a cold cross build: the whole list runs in
bench/ (docs/performance.md, "Every architecture")."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import BIG_ENDIAN, FRAMEWORK, LITTLE_32, Kunit
from .test_real_kernel import assert_framework_green

TWO = f"--kunit-arch={LITTLE_32},{BIG_ENDIAN}"

pytestmark = [pytest.mark.real("arches"), pytest.mark.xdist_group("arches")]


def outcomes_by_arch(junit: Path) -> dict[str, dict[str, str]]:
    """JUnit's cases grouped by their `kunit_arch` property: {arch: {suite.case: outcome}}."""
    found: dict[str, dict[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
        suite = case.get("classname", "").rsplit(".", 1)[-1]
        outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
        found.setdefault(str(properties.get("kunit_arch")), {})[f"{suite}.{case.get('name')}"] = outcome
    return found


def test_framework_green_on_i386_and_a_big_endian_guest(kunit: Kunit) -> None:
    kunit.kernel("arches")
    run = kunit.run(TWO, FRAMEWORK, "-n", "2")
    assert run.returncode == 0, run.report()
    assert "kernel builds: 0 " in run.stdout, run.report()
    by_arch = outcomes_by_arch(run.junit)
    assert set(by_arch) == {LITTLE_32, BIG_ENDIAN}, run.report()
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
