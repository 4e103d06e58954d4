"""arm64 guests against the fake kernel: the same outcomes, selection and xdist scheduling as x86_64, booted as
arm64 boots (QEMU's virt machine, the Image, the PL011 console), and a missing cross compiler named by its package."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from .conftest import FakeKernel, no_traceback


@pytest.fixture
def cross_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An aarch64-linux-gnu-gcc on PATH: the fake tree's make never calls it, but the build checks it is there."""
    bin_dir = tmp_path / "cross-bin"
    bin_dir.mkdir()
    compiler = bin_dir / "aarch64-linux-gnu-gcc"
    compiler.write_text("#!/bin/sh\nexit 0\n")
    compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def arm64(fake_kernel: FakeKernel, *extra: str) -> list[str]:
    return fake_kernel.options("--kunit-arch=arm64", *extra)


def assert_booted_as_arm64(fake_kernel: FakeKernel) -> None:
    boots = fake_kernel.boots()
    assert boots
    for boot in boots:
        argv = boot["argv"]
        assert argv[argv.index("-machine") + 1] == "virt"
        assert argv[argv.index("-kernel") + 1].endswith("/arch/arm64/boot/Image")
        words = boot["append"].split()
        assert words[0] == "console=ttyAMA0"
        # Nothing of x86_64's guest: its console, its PS/2 controller, its TSC.
        assert not [word for word in words if word.startswith(("console=ttyS", "i8042", "tsc="))]


def test_outcomes_and_boots_match_x86_64(
    project: pytest.Pytester, fake_kernel: FakeKernel, cross_compiler: None
) -> None:
    result = project.runpytest(*arm64(fake_kernel))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["*arch arm64*", "*guest boots: 2*"])
    assert fake_kernel.filters() == [None]
    assert_booted_as_arm64(fake_kernel)
    [build_dir] = (fake_kernel.cache / "build").iterdir()
    assert (build_dir / "make-runs").read_text().split() == ["olddefconfig", "syncconfig", "Image"]
    config = (build_dir / ".config").read_text()
    assert "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y" in config and "CONFIG_RANDOMIZE_BASE=y" not in config


def test_arm64_and_x86_64_builds_are_kept_apart(
    project: pytest.Pytester, fake_kernel: FakeKernel, cross_compiler: None
) -> None:
    project.runpytest(*arm64(fake_kernel)).assert_outcomes(passed=3, failed=2, skipped=1)
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    assert len(list((fake_kernel.cache / "build").iterdir())) == 2
    x86 = fake_kernel.boots()[-1]
    assert "-machine" not in x86["argv"] and x86["append"].split()[0] == "console=ttyS0"


@pytest.mark.parametrize(
    ("selection", "outcomes", "filters"),
    [
        (("-k", "example_simple_test"), {"passed": 1}, ["example.example_simple_test"]),
        (("-k", "other or example_simple_test"), {"passed": 3}, ["example.example_simple_test,other"]),
    ],
)
def test_k_selection(
    project: pytest.Pytester,
    fake_kernel: FakeKernel,
    cross_compiler: None,
    selection: tuple[str, ...],
    outcomes: dict[str, int],
    filters: list[str],
) -> None:
    project.runpytest(*arm64(fake_kernel, *selection)).assert_outcomes(**outcomes)
    assert fake_kernel.filters() == filters
    assert_booted_as_arm64(fake_kernel)


def test_last_failed(project: pytest.Pytester, fake_kernel: FakeKernel, cross_compiler: None) -> None:
    project.runpytest(*arm64(fake_kernel, "--lf")).assert_outcomes(passed=3, failed=2, skipped=1)
    fake_kernel.qemu_log.unlink()
    project.runpytest(*arm64(fake_kernel, "--lf")).assert_outcomes(failed=2)
    assert fake_kernel.filters() == ["example.example_failing_test,example.example_params_test"]
    assert_booted_as_arm64(fake_kernel)


def test_two_xdist_workers(project: pytest.Pytester, fake_kernel: FakeKernel, cross_compiler: None) -> None:
    result = project.runpytest_subprocess(*arm64(fake_kernel, "-n", "2"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    boots = fake_kernel.test_boots()
    suites = sorted(suite for boot in boots for suite in (boot["params"].get("kunit.filter_glob") or "").split(","))
    assert suites == ["example", "other"]
    assert {boot["worker"] for boot in boots} == {"gw0", "gw1"}
    assert_booted_as_arm64(fake_kernel)


def test_crash_report_is_arm64_s(project: pytest.Pytester, fake_kernel: FakeKernel, cross_compiler: None) -> None:
    fake_kernel.set_case("other", "first", outcome="crash")
    result = project.runpytest(*arm64(fake_kernel, "-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*kernel crash report:*",
            "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000",
            "*pc : fake_crashing_case+0x8/0x14",
        ]
    )


def test_missing_cross_compiler_names_its_package(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    # The same record, with a compiler prefix no machine has.
    project.makeconftest(
        """
import dataclasses

def pytest_kunit_add_arches(arches):
    arm64 = arches["arm64"]
    make = dataclasses.replace(arm64.make, cross_compile="pytest-kunit-absent-")
    arches["arm64"] = dataclasses.replace(arm64, make=make)
"""
    )
    result = project.runpytest(*arm64(fake_kernel))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*The arm64 cross compiler is not installed: 'pytest-kunit-absent-gcc' is not on PATH.",
            "*What to do: install it: apt-get install gcc-aarch64-linux-gnu (or scripts/setup.sh --arch arm64).",
        ]
    )
    no_traceback(result)
    assert not fake_kernel.boots()
