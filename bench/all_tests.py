#!/usr/bin/env python3
"""The all-tests fragment's whole proof, too costly for command two: a kernel of its own (KUNIT_ALL_TESTS on the
small x86_64 base, with the device-tree unittest the series migrates to KUnit), every case passing or skipping.

Runs `pytest --kunit testsuites/all-tests.kunitconfig` as a user types it, in the given cache (a cold build when it
holds none), and reads the JUnit XML: the number of cases, each outcome's count, the build's and the boots' seconds.
Exits 1 unless there are at least 300 cases, none failed or in error, the framework's own 24 among them, and the
device-tree suites (of_base, of_overlay, of_dynamic) ran. Command two proves the same on a smaller kernel: the
series' suites, the device tree's among them, on the instrumented x86_64 kernel (tests/real/test_debug_real.py).

Usage: bench/all_tests.py --cache DIR [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from compare_kunitpy import junit_outcomes

ROOT = Path(__file__).resolve().parents[1]
FRAGMENT = "testsuites/all-tests.kunitconfig"
DEVICE_TREE = {"of_base", "of_overlay", "of_dynamic"}
FRAMEWORK_SUITES = {"kunit_executor_test", "kunit-try-catch-test", "kunit-resource-test", "example", "kunit_status"}
_SUMMARY = re.compile(r"kernel builds: (\d+) \(([\d.]+) s\); guest boots: (\d+) \(([\d.]+) s\)")


def problems(found: dict[str, str]) -> list[str]:
    wrong = [f"{name}: {outcome}" for name, outcome in sorted(found.items()) if outcome in ("failure", "error")]
    suites = {name.split(".", 1)[0] for name in found}
    if len(found) < 300:
        wrong.append(f"only {len(found)} cases (at least 300 expected)")
    wrong += [f"suite {name} did not run" for name in sorted((DEVICE_TREE | FRAMEWORK_SUITES) - suites)]
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True, help="pytest-kunit's cache (--kunit-cache-dir)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "all-tests.xml"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit"]
        command += [f"--kunit-cache-dir={args.cache}", f"--junitxml={junit}", FRAGMENT]
        started = time.monotonic()
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - started
        found = junit_outcomes(junit) if junit.exists() else {}
    summary = _SUMMARY.search(result.stdout)
    figures = {
        "cases": len(found),
        "outcomes": dict(Counter(found.values())),
        "wall": round(wall, 1),
        "build_seconds": float(summary[2]) if summary else None,
        "boot_seconds": float(summary[4]) if summary else None,
        "load": os.getloadavg()[0],
        "exit": result.returncode,
    }
    print(json.dumps(figures, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    wrong = problems(found) if summary else ["no pytest-kunit summary: " + result.stdout[-2000:]]
    for line in wrong:
        print(f"all-tests: {line}", file=sys.stderr)
    return 1 if wrong or result.returncode != 0 else 0


if __name__ == "__main__":
    raise SystemExit(main())
