"""What the package promises: the floor versions pyproject.toml allows are the ones CI tests against; plain `tox` runs
the fast tiers; a missing optional test tool skips its own checks only; nothing local is tracked; `python -m build`
makes an sdist and a wheel PyPI accepts, holding the series and the suites, at the one version there is."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

import pytest_kunit

from ..installed import build_dists

ROOT = Path(__file__).resolve().parents[2]
# Where each bundled directory of the checkout lies in the wheel (pyproject.toml's package-dir).
BUNDLED = {"kernel-patches": "pytest_kunit/kernel_patches", "testsuites": "pytest_kunit/testsuites"}


def test_ci_tests_every_dependency_at_the_floor_pyproject_allows() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = {}
    for requirement in project["dependencies"]:
        floor = re.fullmatch(r"([\w.-]+)>=([\w.]+)", requirement)
        assert floor is not None, f"{requirement!r} has no plain >= floor to test"
        floors[floor[1].lower()] = Version(floor[2])
    pins = {}
    for line in (ROOT / ".ci/floors.txt").read_text().splitlines():
        pinned = re.fullmatch(r"([\w.-]+)==([\w.]+)", line.strip())
        if pinned:
            pins[pinned[1].lower()] = Version(pinned[2])
    assert pins == floors


def test_plain_tox_runs_the_fast_tiers_and_the_real_tier_has_an_env_of_its_own() -> None:
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    envs = [env.strip() for env in tox["tox"]["envlist"].split(",")]
    for env in envs:
        section = tox[f"testenv:{env}"] if tox.has_section(f"testenv:{env}") else tox["testenv"]
        command = section.get("commands", tox["testenv"]["commands"])
        if any(line.split()[:1] == ["pytest"] for line in command.splitlines()):
            assert '-m "not real"' in command or "tests/unit tests/plugin" in command, (env, command)
    assert "real" not in envs
    assert "-m real" in tox["testenv:real"]["commands"]


def test_nothing_a_local_environment_makes_is_tracked() -> None:
    tracked = subprocess.run(["git", "ls-files", ".venv"], cwd=ROOT, capture_output=True, text=True)
    assert tracked.returncode == 0, f"the tests run from a git checkout: {tracked.stderr}"
    assert tracked.stdout == ""
    assert ".venv" in (ROOT / ".gitignore").read_text().split()


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_dists(tmp_path_factory.mktemp("dist"))


def tracked(*directories: str) -> set[str]:
    listed = subprocess.run(["git", "ls-files", *directories], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(listed.stdout.split())


def wheel_name(checkout_name: str) -> str:
    top, rest = checkout_name.split("/", 1)
    return f"{BUNDLED[top]}/{rest}"


def test_twine_accepts_the_sdist_and_the_wheel(dists: tuple[Path, Path]) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_the_wheel_holds_every_file_of_the_series_and_the_suites(dists: tuple[Path, Path]) -> None:
    sdist, wheel = dists
    files = tracked(*BUNDLED)
    assert any(name.endswith(".patch") for name in files) and any(name.endswith(".c") for name in files)
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    missing = {name for name in files if wheel_name(name) not in in_wheel}
    assert not missing, f"the wheel lacks {sorted(missing)}: add their kind to pyproject.toml's package-data"
    # The package's own files too: its modules and its data (the architecture records, one TOML file each).
    own = tracked("pytest_kunit")
    assert any(name.endswith(".toml") for name in own)
    assert not own - in_wheel, f"the wheel lacks {sorted(own - in_wheel)}: add their kind to package-data"
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    assert files <= in_sdist, sorted(files - in_sdist)


def test_one_version_in_one_place(dists: tuple[Path, Path]) -> None:
    """pytest_kunit.__version__ is the version: the distribution's metadata (what pytest prints beside the plugin's
    name) is made from it, and the changelog has its entry."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    version = pytest_kunit.__version__
    assert all(dist.name.startswith(f"pytest_kunit-{version}") for dist in dists)
    metadata = zipfile.ZipFile(dists[1]).read(f"pytest_kunit-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert "\nRequires-Python: >=3.11\n" in metadata
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d\d-\d\d$", (ROOT / "CHANGELOG.md").read_text(), re.M)
