"""What the package promises: the floor versions pyproject.toml allows are the ones CI tests against."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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
