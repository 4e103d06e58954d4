"""The real tier for --kunit-coverage: the debug fragment (the framework's suites and the series', on the tier's
instrumented kernel, built with GCOV: conftest.KERNELS["instrumented"]), its counters copied out of the guest by the
initramfs's /init, and the report's lib/kunit/test.c line coverage checked against gcov's own reading of the same
counters."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .conftest import Kunit, debug_with_coverage, sanitize_selection

pytestmark = [pytest.mark.real("instrumented"), pytest.mark.xdist_group("instrumented")]


def test_framework_coverage_matches_gcov(kunit: Kunit, tmp_path: Path) -> None:
    run, output = debug_with_coverage(kunit)
    assert run.returncode == 0, run.report()
    assert "kernel builds: 0 " in run.stdout, run.report()
    assert all(outcome in ("passed", "skipped") for outcome in run.outcomes.values()), run.report()
    assert f"coverage of 1 boot(s): {output / 'index.html'}" in run.stdout, run.report()
    summary = re.search(r"^\s*([\d.]+)%\s+(\d+)/(\d+)\s+lib/kunit/test\.c$", run.stdout, re.MULTILINE)
    assert summary, run.report()
    covered, total = int(summary[2]), int(summary[3])
    assert covered > 0, run.report()
    assert (output / "index.html").is_file() and (output / "coverage.xml").is_file()
    (gcda,) = output.glob("counters/*/gcda/lib/kunit/test.gcda")
    said = subprocess.run(
        ["gcov", "-n", "-o", str(gcda.parent), str(gcda)], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    found = re.search(r"File '[^']*lib/kunit/test\.c'\nLines executed:([\d.]+)% of (\d+)", said)
    assert found, said
    assert int(found[2]) == total, said
    assert round(float(found[1]) * total / 100) == covered, said


def test_a_selection_covers_only_what_ran(kunit: Kunit) -> None:
    """With -k only the selected cases run: a suite left out covers none of its own lines (the same GCOV build as
    above: boots only). The selection (the sanitize and example suites, the debug tests' run: conftest.py) is a
    filtered boot of a kmemleak kernel: clean since the series' patch 5."""
    run, everything = debug_with_coverage(kunit)
    assert run.returncode == 0, run.report()
    whole = lines_covered(everything)
    run, selected = sanitize_selection(kunit)
    assert run.outcomes and all(name.startswith(("sanitize.", "example.")) for name in run.outcomes), run.outcomes
    assert f"coverage of 1 boot(s): {selected / 'index.html'}" in run.stdout, run.report()
    part = lines_covered(selected)
    assert whole["lib/kunit/string-stream-test.c"] > 0 and part["lib/kunit/string-stream-test.c"] == 0
    assert 0 < part["lib/kunit/kunit-example-test.c"] <= whole["lib/kunit/kunit-example-test.c"]
    assert 0 < part["lib/kunit/test.c"] < whole["lib/kunit/test.c"]


def lines_covered(report: Path) -> dict[str, int]:
    """Covered lines per file, from the report's JSON summary (the terminal shows only the best covered)."""
    files = json.loads((report / "summary.json").read_text())["files"]
    return {entry["filename"]: int(entry["line_covered"]) for entry in files}
