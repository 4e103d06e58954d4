#!/usr/bin/env python3
"""Run kunitconfig fragments again and again while every host core is busy, and require the same verdicts each time.

Each round runs every fragment once (warm: the kernels must already be built) under pytest-kunit, with a bounded CPU
burner per core running the whole time. A round's verdicts ({suite.case: outcome}, from JUnit XML) must equal the
expected ones (the fault suite's, built in) or, for a fragment without expectations, those of its first round.
Boots and boot seconds come from the terminal summary; consoles with timekeeping trouble are counted too.

Usage: bench/load.py [--runs N] [--xdist N] [--burners N] [--no-load] [--fragment PATH[::ARGS]] ... [--json OUT]
Exit status 0 when every round gave the expected verdicts, 1 otherwise. Burners are `timeout`-bounded shell loops,
killed by their pid when the campaign ends, however it ends.
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTS = "testsuites/faults/faults.kunitconfig"
FRAMEWORK = "testsuites/kunit.kunitconfig"
# What testsuites/faults/faults-test.c does on purpose: each verdict is the case's own, whatever the host does.
FAULT_VERDICTS = {
    "faults.faults_pass_first": "passed",
    "faults.faults_fail": "failed",
    "faults.faults_pass_after_fail": "passed",
    "faults.faults_params_one_fails": "failed",
    "faults.faults_null_dereference": "failed",
    "faults.faults_pass_after_null_dereference": "passed",
    "faults.faults_bug": "failed",
    "faults.faults_pass_after_bug": "passed",
    "faults.faults_hang_forever": "failed",
    "faults.faults_pass_after_hang": "passed",
    "faults.faults_panic": "failed",
    "faults.faults_pass_last": "passed",
}
# How each failing fault case must fail (the headline of its report).
FAULT_HEADLINES = (
    "faults.faults_null_dereference CRASHED",
    "faults.faults_bug CRASHED",
    "faults.faults_hang_forever TIMED OUT",
    "faults.faults_panic CRASHED",
)
# Console lines that say the guest's clocks went wrong.
CLOCK_TROUBLE = re.compile(
    r"APIC timer disabled due to verification failure|Marking clocksource '?\w+'? as unstable|"
    r"Marking TSC unstable|clocksource watchdog|timekeeping watchdog"
)
SUMMARY = re.compile(r"guest boots: (\d+) \(([\d.]+) s\)")
RERUNS = re.compile(r"cases run again in a fresh guest: (\d+)")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-kunit"


@dataclass
class Round:
    fragment: str
    number: int
    seconds: float
    boots: int
    boot_seconds: float
    reruns: int
    verdicts: dict[str, str]
    clock_trouble: list[str] = field(default_factory=list)
    same: bool = True


@contextmanager
def busy_host(burners: int, bound: float) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`burners` CPU-bound shell loops, each ended by `timeout` after `bound` seconds at the latest."""
    processes = [
        subprocess.Popen(["timeout", str(int(bound)), "sh", "-c", "while :; do :; done"]) for _ in range(burners)
    ]
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()  # timeout passes SIGTERM on to its shell
        for process in processes:
            process.wait()


def junit_verdicts(path: Path) -> dict[str, str]:
    verdicts: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        suite = case.get("classname", "").rsplit(".", 1)[-1]
        outcome = "passed"
        for tag, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            if case.find(tag) is not None:
                outcome = name
        verdicts[f"{suite}.{case.get('name')}"] = outcome
    return verdicts


def run_once(fragment: str, args: list[str], xdist: int, number: int, workdir: Path) -> tuple[Round, str]:
    junit = workdir / f"round-{number}.xml"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", "-rA", f"--junitxml={junit}"]
    command += [fragment, *args, *(["-n", str(xdist)] if xdist else [])]
    started, wall = time.monotonic(), time.time()
    process = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    text = process.stdout + process.stderr
    summary = SUMMARY.search(text)
    reruns = RERUNS.search(text)
    trouble = [line.strip() for console in consoles_since(wall) for line in console.splitlines()]
    result = Round(
        fragment=fragment,
        number=number,
        seconds=round(seconds, 1),
        boots=int(summary[1]) if summary else 0,
        boot_seconds=float(summary[2]) if summary else 0.0,
        reruns=int(reruns[1]) if reruns else 0,
        verdicts=junit_verdicts(junit) if junit.exists() else {},
        clock_trouble=sorted({line for line in trouble if CLOCK_TROUBLE.search(line)}),
    )
    return result, text


def consoles_since(wall: float) -> Iterator[str]:
    """The consoles saved since `wall` (the machine is shared: others' boots of other images may be among them,
    which only ever adds clock trouble, never hides it)."""
    for path in CACHE.glob("consoles/*/*.log"):
        try:
            if path.stat().st_mtime >= wall:
                yield path.read_text(errors="replace")
        except OSError:
            continue


def parse_fragment(value: str) -> tuple[str, list[str]]:
    """PATH or PATH::ARG,ARG (the fault suite gets --kunit-timeout=10 unless told otherwise)."""
    path, _, extra = value.partition("::")
    args = [arg for arg in extra.split(",") if arg]
    if path == FAULTS and not any(arg.startswith("--kunit-timeout") for arg in args):
        args.append("--kunit-timeout=10")
    return path, args


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="rounds (each runs every fragment once)")
    parser.add_argument("--xdist", type=int, default=0, help="pytest -n value (0: no xdist)")
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1, help="CPU burners (default: one per core)")
    parser.add_argument("--no-load", action="store_true", help="no burners: the quiet baseline")
    parser.add_argument("--bound", type=float, default=1800, help="seconds after which burners stop regardless")
    parser.add_argument("--fragment", action="append", help=f"default: {FAULTS} and {FRAMEWORK}")
    parser.add_argument("--json", type=Path, help="also write every round here")
    options = parser.parse_args()
    fragments = [parse_fragment(value) for value in (options.fragment or [FAULTS, FRAMEWORK])]

    rounds: list[Round] = []
    expected: dict[str, dict[str, str]] = {FAULTS: FAULT_VERDICTS}
    burners = 0 if options.no_load else options.burners
    with tempfile.TemporaryDirectory(prefix="kunit-load-") as tmp, busy_host(burners, options.bound):
        for number in range(1, options.runs + 1):
            for fragment, args in fragments:
                result, text = run_once(fragment, args, options.xdist, number, Path(tmp))
                expected.setdefault(fragment, result.verdicts)
                result.same = bool(result.verdicts) and result.verdicts == expected[fragment]
                if fragment == FAULTS:
                    result.same = result.same and all(headline in text for headline in FAULT_HEADLINES)
                rounds.append(result)
                wanted = expected[fragment]
                differing = {case: verdict for case, verdict in result.verdicts.items() if wanted.get(case) != verdict}
                print(
                    f"round {number:2} {fragment}: {'same' if result.same else 'DIFFERENT'} verdicts, "
                    f"{result.boots} boots ({result.boot_seconds:.1f} s), {result.reruns} reruns, "
                    f"{result.seconds:.1f} s"
                    + (f"; differing: {differing}" if differing else "")
                    + (f"; clock trouble: {result.clock_trouble}" if result.clock_trouble else ""),
                    flush=True,
                )
                if not result.same:
                    sys.stdout.write(text[-4000:] + "\n")
    print(summary_table(rounds, burners, options.xdist))
    if options.json:
        options.json.write_text(json.dumps([asdict(result) for result in rounds], indent=1))
    return 0 if all(result.same for result in rounds) else 1


def summary_table(rounds: list[Round], burners: int, xdist: int) -> str:
    lines = [
        f"load: {burners} burners; xdist: {xdist or 'off'}",
        "| fragment | runs | verdicts identical | boots (min-max) | boot s (median) | reruns | clock trouble |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for fragment in dict.fromkeys(result.fragment for result in rounds):
        mine = [result for result in rounds if result.fragment == fragment]
        boots = sorted(result.boots for result in mine)
        seconds = sorted(result.boot_seconds for result in mine)
        lines.append(
            f"| `{fragment}` | {len(mine)} | {sum(result.same for result in mine)}/{len(mine)} | "
            f"{boots[0]}-{boots[-1]} | {seconds[len(seconds) // 2]:.1f} | {sum(result.reruns for result in mine)} | "
            f"{sum(bool(result.clock_trouble) for result in mine)} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
