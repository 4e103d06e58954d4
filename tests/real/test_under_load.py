"""The real tier under host load: the fault suite and the framework suite give the same verdicts while every core is
busy (bench/load.py: a bounded CPU burner per core, one round of each fragment), in the tier's x86_64 kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FAULTS, FRAMEWORK, ROOT, Kunit, tier_env

pytestmark = [pytest.mark.real("x86_64"), pytest.mark.xdist_group("x86_64")]


def test_verdicts_do_not_depend_on_the_hosts_load(kunit: Kunit, tmp_path: Path) -> None:
    kunit.kernel("x86_64")
    for fragment in (FAULTS, FRAMEWORK):  # listed before the load starts: the campaign measures runs, not builds
        listed = kunit.run("--collect-only", "-q", fragment)
        assert listed.returncode == 0, listed.report()
    figures = tmp_path / "load.json"
    process = subprocess.run(
        [sys.executable, str(ROOT / "bench/load.py"), "--runs", "1", "--bound", "900", "--json", str(figures)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        env=tier_env(),
    )
    assert process.returncode == 0, process.stdout[-6000:] + process.stderr[-2000:]
    rounds = json.loads(figures.read_text())
    assert len(rounds) == 2
    faults = [entry for entry in rounds if entry["fragment"].endswith("faults.kunitconfig")]
    # Each fault-suite run: the suite, the hang again in a fresh guest (it came after two crashes), one boot after it
    # and one after the panic; never more, however busy the host.
    assert [entry["boots"] for entry in faults] == [4], process.stdout
    assert all(entry["same"] for entry in rounds), process.stdout
