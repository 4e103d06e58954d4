#!/usr/bin/env python3
"""Rehearse CI as a fresh machine sees it: .ci/run's phases, one by one, with every cache empty.

Each phase of .ci/run runs as CI runs it (CI=true, no standard input), with XDG_CACHE_HOME pointing at a new empty
directory, so pytest-kunit's caches, the real tier's, ccache's and the extracted upstream logs all start empty, as on
a machine that never ran the project. Packages are whatever the machine has (the set-up phase installs what is
missing; on a machine that has them it takes seconds). Prints a table: each phase's seconds, each real-tier module's
(from command two's JUnit XML), and the ten slowest tests.

    bench/rehearse_ci.py                  # quiet machine
    bench/rehearse_ci.py --load           # with a kernel build of its own running alongside the whole time
    bench/rehearse_ci.py --cache DIR      # keep the caches (DIR must be empty or absent), e.g. to look at them after
    bench/rehearse_ci.py --load --cache DIR --warm   # again on the caches an earlier rehearsal left in DIR: every
                                          # verdict under load, each cold build already paid for
    bench/rehearse_ci.py --load --load-command 'CMD'  # the load is CMD (a shell command, e.g. builds of one's own
                                          # tree), followed by the default build loop should CMD end first
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")


def phases(junit: Path, floors: Path) -> list[tuple[str, list[str]]]:
    """.ci/run's commands, as it runs them: the tools from the checkout's .venv, which the set-up phase makes."""
    python = str(ROOT / ".venv" / "bin" / "python")
    return [
        ("set-up", ["scripts/setup.sh", "--test"]),
        ("ruff", [python, "-m", "ruff", "check", "pytest_kunit", "tests", "bench"]),
        ("ruff format", [python, "-m", "ruff", "format", "--check", "pytest_kunit", "tests", "bench"]),
        ("mypy", [python, "-m", "mypy", "--strict", "pytest_kunit", "tests", "bench"]),
        (
            "command two",
            ["scripts/test.sh", "-p", "no:cacheprovider", "-rfEs", f"--junitxml={junit}", "--durations=10"],
        ),
        ("floors venv", ["sh", "-c", f"python3 -m venv {floors} && {floors}/bin/pip install -q -r .ci/floors.txt"]),
        ("floors install", [f"{floors}/bin/pip", "install", "-q", "--no-deps", "-e", "."]),
        (
            "floors tests",
            [
                f"{floors}/bin/python",
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-q",
                "-n",
                "2",
                "tests/unit",
                "tests/plugin",
            ],
        ),
    ]


@contextmanager
def kernel_build_alongside(scratch: Path, command: str = "") -> Iterator[None]:
    """A kernel build of its own (defconfig, make -j2, over and over) for as long as the rehearsal runs; `command`
    (a shell command) first, when given."""
    tree = scratch / "load-tree"
    tree.mkdir()
    subprocess.run(["tar", "-I", "xz -T0", "-xf", str(TARBALL), "-C", str(tree), "--strip-components=1"], check=True)
    build = f"O={scratch}/load-build"
    again = f"while :; do make -s -j2 {build} vmlinux; make -s {build} clean; done"
    script = f"cd {tree} && make -s {build} defconfig && {again}"
    if command:
        script = f"( {command} ) >{scratch}/load-command.log 2>&1; {script}"
    load = subprocess.Popen(
        ["sh", "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        yield
    finally:
        os.killpg(load.pid, 15)
        load.wait()


def cpu_ticks() -> tuple[int, int]:
    """All CPUs' busy and idle ticks since boot (/proc/stat): a phase's idle share says whether more work could
    have run in it, or the cores were the limit."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, idle


def module_seconds(junit: Path) -> tuple[dict[str, float], list[tuple[float, str]]]:
    """Each test module's seconds and every test's, from JUnit XML."""
    modules: dict[str, float] = defaultdict(float)
    tests = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0)
        classname = case.get("classname", "")  # tests.real.test_uml (a module's function), or with .Class
        parts = classname.split(".")
        last = next((index for index, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
        modules[".".join(parts[: last + 1])] += seconds
        tests.append((seconds, f"{classname}::{case.get('name')}"))
    return dict(modules), sorted(tests, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, help="the empty XDG_CACHE_HOME to use (default: a new temporary one)")
    parser.add_argument("--load", action="store_true", help="run a kernel build of its own alongside")
    parser.add_argument("--load-command", default="", help="with --load: this shell command first, as the load")
    parser.add_argument("--warm", action="store_true", help="start from the caches an earlier rehearsal kept")
    args = parser.parse_args()
    if args.warm and args.cache is None:
        parser.error("--warm needs --cache: the directory an earlier rehearsal kept")
    if args.load_command and not args.load:
        parser.error("--load-command is the load of --load: give both")
    cache = args.cache or Path(tempfile.mkdtemp(prefix="pytest-kunit-ci-"))
    if cache.exists() and any(cache.iterdir()) and not args.warm:
        parser.error(f"{cache} is not empty: a rehearsal starts from empty caches (--warm: start from them)")
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="pytest-kunit-rehearsal-"))
    junit, floors = scratch / "ci-junit.xml", scratch / "floors"
    env = {key: value for key, value in os.environ.items() if key not in ("CCACHE_DIR", "KUNIT_TEST_DATA")}
    env |= {"CI": "true", "XDG_CACHE_HOME": str(cache)}
    rows: list[tuple[str, float, int, float]] = []
    started = time.monotonic()
    with kernel_build_alongside(scratch, args.load_command) if args.load else nullcontext():
        for name, command in phases(junit, floors):
            begun, (busy, idle) = time.monotonic(), cpu_ticks()
            print(f"== {name}: {' '.join(command)}", flush=True)
            done = subprocess.run(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
            busy_now, idle_now = cpu_ticks()
            idle_share = (idle_now - idle) / max(1, busy_now - busy + idle_now - idle)
            rows.append((name, time.monotonic() - begun, done.returncode, idle_share))
            print(f"== {name}: exit {done.returncode} after {rows[-1][1]:.0f} s", flush=True)
    total = time.monotonic() - started
    print(
        f"\nrehearsal of .ci/run, caches {'as an earlier rehearsal left them' if args.warm else 'from empty'} in "
        f"{cache}{' under a parallel kernel build' if args.load else ''}"
        f"{f' ({args.load_command!r}, then a defconfig build loop)' if args.load_command else ''}"
    )
    print(f"{'phase':<16} {'seconds':>8}  exit  cpu idle")
    for name, seconds, code, idle_share in rows:
        print(f"{name:<16} {seconds:>8.0f}  {code:>4}  {idle_share:>7.0%}")
    print(f"{'total':<16} {total:>8.0f}  load now {os.getloadavg()[0]:.1f}")
    if junit.exists():
        modules, tests = module_seconds(junit)
        print(f"\n{'real-tier module':<48} {'seconds':>8}")
        for module, seconds in sorted(modules.items()):
            if ".real." in f".{module}.":
                print(f"{module:<48} {seconds:>8.0f}")
        print("\nslowest tests")
        for seconds, name in tests[:10]:
            print(f"{seconds:>8.0f}  {name}")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(code == 0 for _, _, code, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
