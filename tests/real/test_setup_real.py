"""Command two's rehearsal of a stock Debian 12: scripts/setup.sh run with Debian's own Python first on PATH (and no
other: no pyenv, no virtual environment) makes the checkout's own environment, and the plugin loads from there.

Debian's python3 refuses `pip install` outside a virtual environment (PEP 668, externally-managed-environment), so a
set-up that installs into whatever python3 is first fails here. No kernel: the apt packages are in place by the time
command two runs this, so it costs the virtual environment and pip's installs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ..installed import working_tree_copy

STOCK_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def stock_env() -> dict[str, str]:
    """What a Debian user's shell hands the set-up: the system's PATH, their HOME, and this machine's pip settings
    (how pip reaches an index here); nothing that names another Python."""
    kept = {name: value for name, value in os.environ.items() if name.startswith("PIP_") or name.endswith("_proxy")}
    return kept | {"PATH": STOCK_PATH, "HOME": os.environ["HOME"], "LANG": "C.UTF-8"}


@pytest.mark.real()
def test_setup_on_stock_debian_python_makes_the_environment_the_plugin_loads_from(tmp_path: Path) -> None:
    checkout = working_tree_copy(tmp_path / "checkout")
    env = stock_env()
    setup = subprocess.run(["scripts/setup.sh"], cwd=checkout, env=env, capture_output=True, text=True, timeout=900)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert "externally-managed-environment" not in setup.stderr

    venv = checkout / ".venv"
    # Made by Debian's own python3, without the system's site-packages.
    config = dict(line.split(" = ", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines() if " = " in line)
    assert config["home"] == "/usr/bin", config
    assert config["include-system-site-packages"] == "false", config

    python = str(venv / "bin" / "python")
    where = subprocess.run(
        [python, "-c", "import pytest_kunit, sys; print(pytest_kunit.__file__); print(pytest_kunit.__version__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    module, version = where.stdout.split()
    assert Path(module) == checkout / "pytest_kunit" / "__init__.py"

    empty = tmp_path / "empty"
    empty.mkdir()
    collected = subprocess.run(
        [python, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", "--collect-only"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
    )
    # No fragment here: nothing collected, but the plugin is active (its header) and pytest lists it by its version.
    assert collected.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, collected.stdout + collected.stderr
    assert "kunit: kernel source " in collected.stdout, collected.stdout
    assert f"kunit-{version}" in collected.stdout, collected.stdout
    helped = subprocess.run(
        [python, "-m", "pytest", "--help"], cwd=empty, env=env, capture_output=True, text=True, check=True
    )
    assert "--kunit-kernel-src" in helped.stdout
