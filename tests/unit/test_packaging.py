"""What the package promises: the floor versions pyproject.toml allows are the ones CI tests against; plain `tox` runs
the fast tiers; a missing optional test tool skips its own checks only; nothing local is tracked."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


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


def test_optional_test_tools_missing_skip_their_checks_and_nothing_else(tmp_path: Path) -> None:
    """Without kcidb-io (the test extra's), the checks against its schema are skipped; every other test runs."""
    # A basetemp of its own: a new numbered one removes the oldest in /tmp/pytest-of-$USER, and removing a whole
    # plugin-tier run's (its fake trees) took this test from 3 s to 88 s.
    script = (
        "import sys, pytest\n"
        "sys.modules['kcidb_io'] = None  # as if not installed\n"
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', '-k', 'not real', "
        f"'--basetemp={tmp_path / 'inner'}', 'tests/unit/test_kcidb.py']))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\d+ passed, \d+ skipped", result.stdout), result.stdout


def test_nothing_a_local_environment_makes_is_tracked() -> None:
    tracked = subprocess.run(["git", "ls-files", ".venv"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout == ""
    assert ".venv" in (ROOT / ".gitignore").read_text().split()
