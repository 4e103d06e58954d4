#!/usr/bin/env python3
"""The workload kernel CI runs, both tools on one tree: kunit.py's `--alltests` against pytest-kunit's
`--kunit-alltests` with `-n 2`, cold (both builds started together, each in a cache of its own), then warm reruns in
alternating pairs, and every case's verdict from both tools' kunit.py-shaped JSON compared one by one (a
parameterised case one entry, its parameters' worst).

    bench/kunitpy_alltests.py --tree ~/src/linux-6.12 --arch um [--work DIR] [--warm-pairs 3] [--skip-cold]

kunit.py runs in a hard-linked copy of the tree (it writes .kunit/ there); pytest-kunit runs from inside the tree as
a developer types it. --skip-cold reuses the builds an earlier call left in --work. Exit 0 when every case agrees.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

Verdicts = dict[tuple[str, str], str]
# As a user's shell runs both tools: with Python's bytecode cache (this machine exports the variable that stops it).
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def verdicts(report: Path) -> Verdicts:
    """suite, case -> PASS, FAIL or SKIP from kunit.py's --json shape (pytest-kunit's --kunit-json writes the same)."""
    return group_verdicts(json.loads(report.read_text()))


def group_verdicts(top: dict[str, Any]) -> Verdicts:
    """The verdicts of a kunit.py-shaped group whose sub-groups are suites."""

    def worst(group: dict[str, Any]) -> str:
        found = [case["status"] for case in group.get("test_cases", [])]
        found += [worst(inner) for inner in group.get("sub_groups", [])]
        if "FAIL" in found or "ERROR" in found:
            return "FAIL"
        return "SKIP" if found and all(status == "SKIP" for status in found) else "PASS"

    found: Verdicts = {}
    for suite in top["sub_groups"]:
        for case in suite.get("test_cases", []):
            found[(suite["name"], case["name"])] = case["status"]
        for group in suite.get("sub_groups", []):
            found[(suite["name"], group["name"])] = worst(group)
    return found


def commands(arch: str, work: Path) -> tuple[list[str], list[str]]:
    kunitpy = [sys.executable, "tools/testing/kunit/kunit.py", "run", "--alltests", f"--arch={arch}", "--jobs=2"]
    kunitpy += [f"--build_dir={work / f'kunitpy-{arch}-build'}", f"--json={work / f'kunitpy-{arch}.json'}"]
    ours = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kunit", "--kunit-alltests"]
    ours += [f"--kunit-arch={arch}", "-n", "2", f"--kunit-cache-dir={work / 'cache'}"]
    ours += [f"--kunit-json={work / f'pk-{arch}.json'}", f"--junitxml={work / f'pk-{arch}.xml'}", "-rfEs"]
    return kunitpy, ours


def timed_together(runs: list[tuple[list[str], Path, Path]]) -> list[float]:
    """Start every command (in its directory, output to its log) at once; each one's wall time."""
    started = time.monotonic()
    logs = [log.open("w") for _, _, log in runs]
    processes = [
        subprocess.Popen(command, cwd=cwd, env=ENV, stdout=log, stderr=subprocess.STDOUT)
        for (command, cwd, _), log in zip(runs, logs, strict=True)
    ]
    ended: dict[int, float] = {}
    while len(ended) < len(processes):  # each one's own end, whichever ends first (waiting in order hid it)
        for index, process in enumerate(processes):
            if index not in ended and process.poll() is not None:
                ended[index] = time.monotonic() - started
                logs[index].close()
        time.sleep(0.2)
    return [ended[index] for index in range(len(processes))]


def timed(command: list[str], cwd: Path, log: Path) -> float:
    return timed_together([(command, cwd, log)])[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the kernel tree (6.12 has all_tests.config)")
    parser.add_argument("--arch", default="um", help="um (kunit.py's default) or x86_64 (KernelCI's job)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pytest-kunit-alltests"), help="caches and copies")
    parser.add_argument("--warm-pairs", type=int, default=3)
    parser.add_argument("--skip-cold", action="store_true", help="reuse the builds an earlier call left in --work")
    args = parser.parse_args()
    tree, work = args.tree.resolve(), args.work.resolve()
    copy = work / "tree-kunitpy"
    if not copy.exists():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(tree), str(copy)], check=True)
    kunitpy, ours = commands(args.arch, work)
    if not args.skip_cold:
        cold_kunitpy, cold_ours = timed_together(
            [(kunitpy, copy, work / "cold-kunitpy.log"), (ours, tree, work / "cold-pytest-kunit.log")]
        )
        print(f"cold, started together: pytest-kunit {cold_ours:.1f} s, kunit.py {cold_kunitpy:.1f} s", flush=True)
    warm: list[tuple[float, float]] = []
    for pair in range(args.warm_pairs):  # alternating which goes first
        mine_log, theirs_log = work / f"warm-{pair + 1}-pytest-kunit.log", work / f"warm-{pair + 1}-kunitpy.log"
        if pair % 2 == 0:
            mine_s = timed(ours, tree, mine_log)
            theirs_s = timed(kunitpy, copy, theirs_log)
        else:
            theirs_s = timed(kunitpy, copy, theirs_log)
            mine_s = timed(ours, tree, mine_log)
        warm.append((mine_s, theirs_s))
    theirs, mine = verdicts(work / f"kunitpy-{args.arch}.json"), verdicts(work / f"pk-{args.arch}.json")
    differing = sorted(case for case in theirs.keys() | mine.keys() if theirs.get(case) != mine.get(case))
    load = os.getloadavg()[0]
    print(f"kunit.py: {len(theirs)} cases {dict(Counter(theirs.values()))}")
    print(f"pytest-kunit: {len(mine)} cases {dict(Counter(mine.values()))}")
    print(f"differing: {len(differing)} {differing[:20]}")
    ratios = [ours_s / theirs_s for ours_s, theirs_s in warm]
    print(f"warm pairs (pytest-kunit, kunit.py): {[(round(a, 1), round(b, 1)) for a, b in warm]}")
    print(f"warm ratio median {statistics.median(ratios):.2f}; load now {load:.1f}")
    return 0 if not differing else 1


if __name__ == "__main__":
    sys.exit(main())
