"""The real tier for --kunit-coverage: the framework fragment built with GCOV (one cold build), its counters copied out
of the guest by the initramfs's /init, and the report's lib/kunit/test.c line coverage checked against gcov's own
reading of the same counters."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .pending import never_run_yet
from .test_real_kernel import FRAMEWORK, report, run

pytestmark = [pytest.mark.real, never_run_yet]


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
