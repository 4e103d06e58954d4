"""The real tier for --kunit-coverage: the framework fragment built with GCOV (one cold build), its counters copied out
of the guest by the initramfs's /init, and the report's lib/kunit/test.c line coverage checked against gcov's own
reading of the same counters."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .test_real_kernel import FRAMEWORK, report, run

pytestmark = pytest.mark.real


def test_framework_coverage_matches_gcov(tmp_path: Path) -> None:
    output = tmp_path / "coverage"
    process, outcomes = run(tmp_path, FRAMEWORK, f"--kunit-coverage={output}")
    assert process.returncode == 0, report(process)
    assert all(outcome in ("passed", "skipped") for outcome in outcomes.values()), report(process)
    assert f"coverage of 1 boot(s): {output / 'index.html'}" in process.stdout, report(process)
    summary = re.search(r"^\s*([\d.]+)%\s+(\d+)/(\d+)\s+lib/kunit/test\.c$", process.stdout, re.MULTILINE)
    assert summary, report(process)
    covered, total = int(summary[2]), int(summary[3])
    assert covered > 0, report(process)
    assert (output / "index.html").is_file() and (output / "coverage.xml").is_file()
    (gcda,) = output.glob("counters/*/gcda/lib/kunit/test.gcda")
    said = subprocess.run(
        ["gcov", "-n", "-o", str(gcda.parent), str(gcda)], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    found = re.search(r"File '[^']*lib/kunit/test\.c'\nLines executed:([\d.]+)% of (\d+)", said)
    assert found, said
    assert int(found[2]) == total, said
    assert round(float(found[1]) * total / 100) == covered, said


def test_a_selection_covers_only_what_ran(tmp_path: Path) -> None:
    """With -k only the selected cases run: a suite left out covers none of its own lines (the same GCOV build as
    above: boots only)."""
    everything, selected = tmp_path / "all", tmp_path / "selected"
    process, _ = run(tmp_path, FRAMEWORK, f"--kunit-coverage={everything}")
    assert process.returncode == 0, report(process)
    whole = lines_covered(everything)
    process, outcomes = run(tmp_path, FRAMEWORK, f"--kunit-coverage={selected}", "-k", "example")
    assert process.returncode == 0, report(process)
    assert outcomes and all(name.startswith("example.") for name in outcomes), outcomes
    part = lines_covered(selected)
    assert whole["lib/kunit/string-stream-test.c"] > 0 and part["lib/kunit/string-stream-test.c"] == 0
    assert 0 < part["lib/kunit/kunit-example-test.c"] <= whole["lib/kunit/kunit-example-test.c"]
    assert 0 < part["lib/kunit/test.c"] < whole["lib/kunit/test.c"]


def lines_covered(report: Path) -> dict[str, int]:
    """Covered lines per file, from the report's JSON summary (the terminal shows only the best covered)."""
    files = json.loads((report / "summary.json").read_text())["files"]
    return {entry["filename"]: int(entry["line_covered"]) for entry in files}
