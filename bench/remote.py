#!/usr/bin/env python3
"""Guests on workers that share no cache with the controller, against local workers that share it.

Rounds, interleaved, of a warm run (the kernel already built in the controller's cache) of one fragment with two
xdist workers: `-n 2` (the workers share the cache), `-d --tx 2*popen//env:XDG_CACHE_HOME=<empty>` (workers as on
other hosts: the image travels to their empty cache first) and the same with the workers' cache left from the round
before (nothing travels). Prints each scenario's median and its ratio to `-n 2`.

Usage: bench/remote.py [--rounds 3] [--fragment testsuites/kunit.kunitconfig]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--kunit"]
ISOLATED = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
PLUGINS = ["-p", "pytest_kunit.plugin", "-p", "xdist.plugin"]


def timed(command: list[str]) -> tuple[float, str]:
    env = dict(os.environ, **ISOLATED)
    started = time.monotonic()
    process = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - started
    if process.returncode != 0:
        tail = process.stdout[-3000:] + process.stderr[-2000:]
        raise SystemExit(f"failed ({process.returncode}): {' '.join(command)}\n{tail}")
    return seconds, process.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fragment", default="testsuites/kunit.kunitconfig")
    args = parser.parse_args()
    base = [*PYTEST, *PLUGINS, args.fragment]
    timed(base)  # built and listed in the controller's (default) cache before anything is timed
    times: dict[str, list[float]] = {"-n 2 (shared cache)": [], "own cache, empty": [], "own cache, warm": []}
    fetched = ""
    with tempfile.TemporaryDirectory(prefix="kunit-remote-bench-") as scratch:
        workers = Path(scratch) / "workers"
        remote = [*base, "-d", "--tx", f"2*popen//env:XDG_CACHE_HOME={workers}"]
        for _ in range(args.rounds):
            times["-n 2 (shared cache)"].append(timed([*base, "-n", "2"])[0])
            shutil.rmtree(workers, ignore_errors=True)
            seconds, output = timed(remote)
            times["own cache, empty"].append(seconds)
            fetched = next((line for line in output.splitlines() if "fetched from the controller" in line), fetched)
            times["own cache, warm"].append(timed(remote)[0])
    reference = statistics.median(times["-n 2 (shared cache)"])
    print(f"{args.fragment}, {args.rounds} rounds; {fetched}")
    print("| workers | median | runs | ratio to -n 2 |\n| --- | --- | --- | --- |")
    for name, runs in times.items():
        median = statistics.median(runs)
        listed = ", ".join(f"{run:.1f}" for run in runs)
        print(f"| {name} | {median:.1f} s | {listed} | {median / reference:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
