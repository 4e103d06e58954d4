#!/usr/bin/env python3
"""What --kunit-sanitize and --kunit-coverage cost against a plain run of the same fragment, in one run.

For each variant (plain, sanitize=LIST, coverage) it runs `pytest --kunit FRAGMENT` twice in the given cache: the first
run's build seconds (the terminal summary's "kernel builds: N (S s)": a cold build when the cache has none for that
variant) and each warm run's wall time and boot seconds. Medians; ratios against plain. The machine's load average is
printed beside the figures, since builds and TCG guests both slow down under load.

Usage: bench/bench_sanitize.py --cache DIR [--fragment F] [--sanitize kasan,ubsan] [--warm-runs N] [--json OUT]
                               [--only plain,sanitize,coverage] [--sanitize-arg ARG]...
(--sanitize-arg: an option for the sanitized variant's runs only, e.g. --sanitize-arg=--kunit-patches=DIR)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_BUILDS = re.compile(r"kernel builds: (\d+) \(([\d.]+) s\); guest boots: (\d+) \(([\d.]+) s\)")


def run(cache: Path, fragment: str, extra: list[str]) -> dict[str, float]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", f"--kunit-cache-dir={cache}"]
    started = time.monotonic()
    result = subprocess.run([*command, fragment, *extra], cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    found = _BUILDS.search(result.stdout)
    if found is None:
        sys.stderr.write(f"no kunit summary from: {' '.join([*command, fragment, *extra])}\n{result.stdout[-3000:]}\n")
        raise SystemExit(1)
    return {
        "wall": wall,
        "builds": float(found[1]),
        "build_seconds": float(found[2]),
        "boots": float(found[3]),
        "boot_seconds": float(found[4]),
        "exit": float(result.returncode),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--fragment", default="testsuites/kunit.kunitconfig")
    parser.add_argument("--sanitize", default="kasan,ubsan")
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--only", default="plain,sanitize,coverage")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--sanitize-arg", action="append", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        variants = {
            "plain": [],
            "sanitize": [f"--kunit-sanitize={args.sanitize}", *args.sanitize_arg],
            "coverage": [f"--kunit-coverage={Path(scratch) / 'coverage'}"],
        }
        results: dict[str, dict[str, object]] = {}
        for name in args.only.split(","):
            first = run(args.cache, args.fragment, variants[name])
            warm = [run(args.cache, args.fragment, variants[name]) for _ in range(args.warm_runs)]
            results[name] = {
                "first_build_seconds": first["build_seconds"],
                "cold": bool(first["builds"]),
                "warm_wall_median": statistics.median(run["wall"] for run in warm),
                "warm_boot_seconds_median": statistics.median(run["boot_seconds"] for run in warm),
                "exit": first["exit"],
            }
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; fragment {args.fragment}")
    plain = results.get("plain")
    for name, figures in results.items():
        line = (
            f"{name:9} first run's build {figures['first_build_seconds']:8.1f} s "
            f"({'cold' if figures['cold'] else 'warm'})"
            f"  warm run {figures['warm_wall_median']:6.1f} s (boots {figures['warm_boot_seconds_median']:5.1f} s)"
        )
        if plain and name != "plain":
            line += f"  warm x{float(str(figures['warm_wall_median'])) / float(str(plain['warm_wall_median'])):.2f}"
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"load": load, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
