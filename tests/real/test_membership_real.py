"""membership on the tier's real builds: the suite tables read from a build's objects, Kbuild's Makefiles evaluated
under its own configuration, and fixdep's records reproduce that build exactly; a kernel configured for more cannot
stand for one it is no union of. Builds nothing of its own: it reads the tier's kernels (conftest.KERNELS)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_kunit.kbuild.membership import Unknown, fixdep_symbols, suite_objects, suites_alone, unrepresentable
from pytest_kunit.kernel.kconfig import read_dotconfig

from .conftest import FRAMEWORK, Kunit

pytestmark = [pytest.mark.real("x86_64"), pytest.mark.xdist_group("x86_64")]


def configured(build: Path) -> dict[str, str]:
    return read_dotconfig((build / ".config").read_text())


def shared_build(kunit: Kunit) -> Path:
    """The build directory of the tier's x86_64 kernel, as the framework fragment's run names it."""
    kunit.kernel("x86_64")
    run = kunit.run(FRAMEWORK, "--collect-only", "-q")
    served = re.search(r"runs in the kernel built for .* \((\S+)\): \d+ suites of its own", run.stdout)
    assert served, run.report()
    return Path(served[1])


def test_a_build_read_as_its_own_union_holds_all_its_suites(kunit: Kunit, tmp_path: Path) -> None:
    build = shared_build(kunit)
    names = {name for item in suite_objects(build) for name in item.suites}
    config = configured(build)
    assert suites_alone((build / "source").resolve(), build, config, config, tmp_path) == names
    # Names as the kernel prints them: a module_test() suite's (misc-example's) is read from its struct kunit_module.
    assert {"example", "kunit_mock", "faults", "misc-example", "pytest-kunit names with spaces"} <= names


def test_the_framework_suites_are_read_from_their_objects(kunit: Kunit) -> None:
    objects = {item.path: item.suites for item in suite_objects(shared_build(kunit))}
    assert objects["lib/kunit/kunit-example-test.o"] == ("example",)
    assert objects["lib/kunit/executor.o"] == ("kunit_executor_test",)
    assert objects["lib/kunit/kunit-test.o"] == (
        "kunit-try-catch-test",
        "kunit-resource-test",
        "kunit-log-test",
        "kunit_status",
    )
    assert objects["pytest-kunit/faults/faults-test.o"] == ("faults",)


def test_fixdep_records_what_a_suite_s_headers_test(kunit: Kunit) -> None:
    """The symbols of a suite object include what only its headers test (here: kunit/test.h's, slab.h's)."""
    tested = fixdep_symbols(shared_build(kunit), "pytest-kunit/faults/faults-test.o")
    assert {"CONFIG_KUNIT", "CONFIG_SLUB", "CONFIG_KASAN"} <= tested, sorted(tested)[:40]
    assert "CONFIG_PYTEST_KUNIT_FAULTS_TEST" not in tested  # its own symbol lives in its Makefile only


@pytest.mark.real("x86_64", "instrumented")
def test_a_kernel_that_is_no_union_of_the_fragment_is_unknown(kunit: Kunit, tmp_path: Path) -> None:
    """The instrumented kernel holds the framework's suites, but KASAN turns off VMAP_STACK, which the main kernel has
    by default: it cannot stand for that kernel, however many of its suites it holds."""
    kunit.kernel("instrumented")
    build = shared_build(kunit)
    tree = (build / "source").resolve()  # the tier's cache may hold builds of another series' tree too
    instrumented = next(
        path.parent
        for path in build.parent.glob("*/.config")
        if configured(path.parent).get("CONFIG_KASAN") == "y"
        and (path.parent / "vmlinux").exists()
        and (path.parent / "source").resolve() == tree
    )
    held, wanted = configured(instrumented), configured(build)
    assert "CONFIG_VMAP_STACK=y (union: not set)" in unrepresentable(held, wanted)
    with pytest.raises(Unknown, match="cannot stand for"):
        suites_alone(tree, instrumented, held, wanted, tmp_path)
