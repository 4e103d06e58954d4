"""The wheel `python -m build` makes of this checkout, installed (not editable) into a fresh virtual environment: what a
user of `pip install pytest-kunit` gets, for the tests that check it finds its series and suites as package data."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Installed:
    venv: Path
    package: Path  # the installed pytest_kunit/, in the environment's site-packages

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would import the checkout's code instead of the installed one."""
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV")} | extra


def install_wheel(where: Path) -> Installed:
    """Build the checkout's wheel and install it, with its dependencies from the index, into a new venv in `where`."""
    dist, venv = where / "dist", where / "venv"
    for command in (
        # The sdist, then the wheel from it (as PyPI's): never a build/ directory of the checkout, whose files of an
        # earlier build would slip into the wheel.
        [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
        [sys.executable, "-m", "venv", str(venv)],
    ):
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    python = str(venv / "bin" / "python")
    pip = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    where_is = subprocess.run(
        [python, "-c", "import pytest_kunit; print(pytest_kunit.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=where,
        env=clean_env(),
    )
    package = Path(where_is.stdout.strip()).resolve().parent  # as the plugin names it: by its real path
    assert package.is_relative_to(venv), package  # the installed copy, never the checkout
    return Installed(venv, package)
