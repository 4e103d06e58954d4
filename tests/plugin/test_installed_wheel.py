"""The wheel, installed (not editable) into a fresh virtual environment, run from an empty directory: the plugin
finds its kernel suites and its series as package data, not beside a checkout that is not there.

The suites are collected as a user of the wheel runs the main job (`pytest --kunit --pyargs pytest_kunit.testsuites`)
on the fake tree, given every symbol the fragments name; that the run on the packaged tarball applies the installed
series is tests/real/test_installed_wheel_real.py's (it needs the real tarball's extracted tree).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ..installed import ROOT, Installed, clean_env, install_wheel
from .conftest import FakeKernel
from .test_packaged_suites import knowing_every_symbol


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_installed_wheel_collects_the_main_job_from_its_package_data(
    installed: Installed, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    suites = installed.package / "testsuites"
    knowing_every_symbol(fake_kernel.tree, sorted(suites.rglob("*.kunitconfig")))
    empty = tmp_path / "empty"
    empty.mkdir()
    options = [option for option in fake_kernel.options() if option != "--kunit-patches=none"]
    run = subprocess.run(
        [installed.python, "-m", "pytest", *options, "--collect-only", "-q", "--pyargs", "pytest_kunit.testsuites"],
        cwd=empty,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    fragments = {line.split("::")[0] for line in run.stdout.splitlines() if "::" in line}
    # The main job: every fragment not marked manual, each from the installed package (absolute: outside the rootdir).
    assert fragments == {f"{suites}/all-tests.kunitconfig"}, run.stdout[-4000:]
    assert f"{suites}/all-tests.kunitconfig::example::example_simple_test" in run.stdout


def test_the_installed_series_is_the_checkouts_series_as_package_data(installed: Installed, tmp_path: Path) -> None:
    """What the plugin applies by default on the packaged tarball, asked of the installed plugin from elsewhere."""
    asked = subprocess.run(
        [installed.python, "-c", "from pytest_kunit.bundled import default_patch_dirs; print(*default_patch_dirs())"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    series = Path(asked.stdout.strip())
    assert series == installed.package / "kernel_patches"
    shipped = sorted(path.name for path in series.glob("*.patch"))
    assert shipped == sorted(path.name for path in (ROOT / "kernel-patches").glob("*.patch"))
