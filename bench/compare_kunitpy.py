#!/usr/bin/env python3
"""Verdicts of a fragment in a user's tree, case by case: pytest-kunit against upstream kunit.py's recorded --json.

The full form of what the real tier proves on smaller fragments: run `pytest --kunit FRAGMENT_DIR` from inside the
tree as a kernel developer types it and compare every case's outcome (from the JUnit XML) with kunit.py's on the same
tree, fragment and architecture. A parameterised case is one entry on both sides (failed if a parameter failed).

    bench/compare_kunitpy.py --tree ~/src/linux-6.12 --fragment net/handshake --arch um \\
        --expected tests/data/kunitpy-6.12-net-handshake-um.json [--cache DIR]

Exit status 0 when every case agrees; the table of both tools' outcomes and the run's own figures are printed.
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
import xml.etree.ElementTree as ET
from pathlib import Path

OUTCOMES = {"PASS": "passed", "SKIP": "skipped", "FAIL": "failure"}


def junit_outcomes(junit: Path) -> dict[str, str]:
    """suite.case -> passed, failure, error or skipped. The suite is the classname's last part: KUnit names hold
    spaces, never dots in suite names pytest-kunit can collect on these trees."""
    outcomes: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        suite = case.get("classname", "").rsplit(".", 1)[-1]
        outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
        outcomes[f"{suite}.{case.get('name')}"] = outcome
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the kernel tree, as a developer keeps it")
    parser.add_argument("--fragment", required=True, help="the fragment's directory in the tree (net/handshake)")
    parser.add_argument("--arch", default="um", help="the architecture both ran on (kunit.py's default: um)")
    parser.add_argument("--expected", type=Path, required=True, help="kunit.py's verdicts (tests/data/kunitpy-*.json)")
    parser.add_argument("--cache", type=Path, help="XDG_CACHE_HOME for pytest-kunit (default: a new empty one)")
    args = parser.parse_args()
    expected = {case: OUTCOMES[status] for case, status in json.loads(args.expected.read_text())["cases"].items()}
    cache = args.cache or Path(tempfile.mkdtemp(prefix="pytest-kunit-compare-"))
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", f"--kunit-arch={args.arch}"]
        command += ["-v", f"--junitxml={junit}", f"{args.fragment.rstrip('/')}/"]
        started = time.monotonic()
        done = subprocess.run(
            command, cwd=args.tree, env=os.environ | {"XDG_CACHE_HOME": str(cache)}, capture_output=True, text=True
        )
        seconds = time.monotonic() - started
        got = junit_outcomes(junit) if junit.exists() else {}
    for line in done.stdout.splitlines():
        if re.match(r"kunit: (built|kernel builds|guest boots)", line) or "kernel builds:" in line:
            print(line)
    width = max((len(case) for case in expected | got), default=10)
    print(f"\n{'case':<{width}}  {'kunit.py':<9} {'pytest-kunit':<12}")
    for case in sorted(expected | got):
        mark = "" if expected.get(case) == got.get(case) else "  <- differs"
        print(f"{case:<{width}}  {expected.get(case, '-'):<9} {got.get(case, '-'):<12}{mark}")
    agree = bool(got) and got == expected
    verdict = "every case agrees" if agree else "they differ"
    ours = f"pytest-kunit: {len(got)} cases in {seconds:.1f} s (exit {done.returncode})"
    print(f"\n{ours}; kunit.py: {len(expected)}; {verdict}")
    if not agree:
        print(done.stdout[-4000:])
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
