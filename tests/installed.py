"""The checkout as others get it: its files copied elsewhere, its sdist and wheel as `python -m build` makes them, and
the wheel installed (not editable) into a fresh virtual environment, as a user of `pip install pytest-kunit` has it."""

from __future__ import annotations

import os
import shutil
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


def working_tree_copy(destination: Path) -> Path:
    """The checkout's files as they are now (tracked, and new ones git does not ignore): no .venv, build/, egg-info."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for name in filter(None, listed.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out, as it is gone
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def build_dists(where: Path) -> tuple[Path, Path]:
    """The sdist and the wheel `python -m build` makes (the wheel from the sdist, as PyPI's), built from a copy of the
    checkout: setuptools writes its egg-info beside the sources, which two builds at once (xdist) must not share."""
    source, dist = working_tree_copy(where / "source"), where / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    return sdist, wheel


def install_wheel(where: Path) -> Installed:
    """Build the checkout's wheel and install it, with its dependencies from the index, into a new venv in `where`."""
    _, wheel = build_dists(where)
    venv = where / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
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
