#!/usr/bin/env python3
"""The edit-build-test loop: edit lib/kunit/kunit-example-test.c, then run example.example_simple_test, with
pytest-kunit and with the tree's own kunit.py alternately (each after an edit of its own), on the same tree.

Trees (--tree):
  packaged  the tree pytest-kunit builds by default: the packaged tarball extracted and patched in the cache
            (--cache, default ~/.cache/pytest-kunit), fragment testsuites/kunit.kunitconfig, pytest run from the
            project; kunit.py runs on that same tree with --kunitconfig=testsuites/kunit.kunitconfig
  DIR       a user's kernel tree (e.g. Debian's 6.12 extracted): pytest run from inside it on lib/kunit/ (its
            .kunitconfig), kunit.py with --kunitconfig=lib/kunit
Edits (--edit): comment (append a comment line: the same object, which pytest-kunit compiles and does not link)
or statement (rewrite a statement of example_simple_test, differently each run: a new object, linked). Both tools
build before the first pair (untimed), so every timed run rebuilds exactly
the edit; a pytest-kunit run that did not rebuild invalidates the figure. Each run's phases are timed from the lines
both tools print as they go (pytest-kunit's "kunit: ..." progress lines, kunit.py's "[hh:mm:ss] ..." lines).
Beside each run's wall time, its CPU time (user + system of the tool and everything it started): the machine is
shared, and CPU seconds vary less with the others' load than wall seconds do.
The original source is put back at the end and both trees rebuilt (untimed), so the builds match the tree again.
Run it under the build lock: flock /tmp/kbuild.lock bench/bench_loop.py ...
Usage: bench/bench_loop.py --tree packaged|DIR --kunit-build DIR [--cache DIR] [--pairs N] [--edit comment,statement]
                           [--modules [--keep-guest]] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import ONLY_OURS
from pytest_kunit.bundled import default_patch_dirs
from pytest_kunit.guest.keepers import end_all
from pytest_kunit.kernel.tree import prepare
from pytest_kunit.versions import DEFAULT_TARBALL

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "lib/kunit/kunit-example-test.c"
STATEMENT = "KUNIT_EXPECT_EQ(test, 1 + 1, 2);"  # followed by a kunit_info() of N: the same verdict, new code


@dataclass
class Run:
    tool: str
    edit: str
    seconds: float
    load: float  # the 1-minute load average when the run started
    cpu: float = 0.0  # user + system seconds of the tool and all it started (reaped children)
    link_only: bool = False  # pytest-kunit built it link-only (compiled the edited object, linked, no tree walk)
    phases: list[tuple[float, str]] = field(default_factory=list)  # (seconds since start, the line that began it)


@dataclass(frozen=True)
class Setup:
    tree: Path
    ours: list[str]
    ours_cwd: Path
    kunit_py: list[str]


def setup(tree_arg: str, cache: Path, kunit_build: Path, modules: bool = False, keep: bool = False) -> Setup:
    # --modules: our edit loop in module mode (the example suite a module, made alone) against kunit.py's built-in one;
    # --keep-guest: and the module loaded into a guest kept up from the run before.
    plugin = ["-p", "pytest_kunit.plugin", "-p", "xdist.plugin", "-p", "no:cacheprovider"]
    plugin += ["--kunit-modules"] if modules or keep else []
    plugin += ["--kunit-keep-guest"] if keep else []
    select = ["-k", "example_simple_test"]
    if tree_arg == "packaged":
        tree = prepare(DEFAULT_TARBALL, default_patch_dirs(), cache).path
        fragment = ROOT / "testsuites/kunit.kunitconfig"
        ours = [
            sys.executable,
            "-m",
            "pytest",
            *plugin,
            "--kunit",
            f"--kunit-cache-dir={cache}",
            str(fragment),
            *select,
        ]
        cwd, kunitconfig = ROOT, str(fragment)
    else:
        tree = Path(tree_arg).resolve()
        ours = [sys.executable, "-m", "pytest", *plugin, "--kunit", f"--kunit-cache-dir={cache}", "lib/kunit/", *select]
        cwd, kunitconfig = tree, "lib/kunit"
    kunit_py = [
        sys.executable,
        str(tree / "tools/testing/kunit/kunit.py"),
        "run",
        "--arch=x86_64",
        f"--build_dir={kunit_build}",
        f"--kunitconfig={kunitconfig}",
        f"--jobs={os.cpu_count() or 1}",
        "example.example_simple_test",
    ]
    return Setup(tree, ours, cwd, kunit_py)


def timed(tool: str, edit: str, command: list[str], cwd: Path) -> tuple[Run, str]:
    """Run `command`, stamping the lines that begin phases as they arrive; any failure invalidates the bench."""
    run = Run(tool, edit, 0.0, os.getloadavg()[0])
    before = _children_cpu()
    started = time.monotonic()
    lines: list[str] = []
    with subprocess.Popen(
        command, cwd=cwd, env=ONLY_OURS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("kunit: ") or re.match(r"\[\d\d:\d\d:\d\d\] \S", line):
                run.phases.append((round(time.monotonic() - started, 2), line.strip()[:100]))
    run.seconds = time.monotonic() - started
    run.cpu = _children_cpu() - before  # the bench runs one tool at a time, so this is that run's alone
    output = "".join(lines)
    if process.returncode != 0:
        raise SystemExit(f"{tool} failed ({process.returncode}): {' '.join(command)}\n{output[-3000:]}")
    return run, output


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def edited(original: str, kind: str, number: int) -> str:
    if kind == "comment":
        return original + "".join(f"// bench edit {n}\n" for n in range(number + 1))
    if STATEMENT not in original:
        raise SystemExit(f"{EXAMPLE} has no `{STATEMENT}` to rewrite")
    # The first: in example_simple_test. A number no run printed before makes every run's object new: a rewrite the
    # compiler folds away (1 + 1 as 2 + 0) leaves the object as it was, and pytest-kunit, which links no object the
    # image already holds, would time no link.
    return original.replace(STATEMENT, f'{STATEMENT} kunit_info(test, "bench edit {number}");', 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", required=True, help="packaged, or a kernel source directory")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/pytest-kunit")
    parser.add_argument("--kunit-build", type=Path, required=True, help="kunit.py's --build_dir for this tree")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--edit", default="comment,statement")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--modules", action="store_true", help="our loop with --kunit-modules (module-only builds)")
    parser.add_argument(
        "--keep-guest", action="store_true", help="and --kunit-keep-guest: the module loaded into a guest kept up"
    )
    args = parser.parse_args()
    bench = setup(args.tree, args.cache, args.kunit_build, args.modules, args.keep_guest)
    source = bench.tree / EXAMPLE
    original = source.read_text()
    runs: list[Run] = []
    number = 0
    try:
        # Warm up on an edit too: pytest-kunit then knows this build's suite tables whichever version built it.
        source.write_text(original + "// bench warm-up\n")
        timed("pytest-kunit", "warm-up", bench.ours, bench.ours_cwd)
        timed("kunit.py", "warm-up", bench.kunit_py, bench.tree)
        for kind in args.edit.split(","):
            for pair in range(args.pairs):
                # Alternate which tool goes first, so drift in the machine's load weighs on both alike.
                order = [("pytest-kunit", bench.ours, bench.ours_cwd), ("kunit.py", bench.kunit_py, bench.tree)]
                for tool, command, cwd in order if pair % 2 == 0 else order[::-1]:
                    source.write_text(edited(original, kind, number))
                    number += 1
                    run, output = timed(tool, kind, command, cwd)
                    if tool == "pytest-kunit" and "kernel builds: 1 " not in output:
                        raise SystemExit(f"pytest-kunit did not rebuild after the edit:\n{output[-3000:]}")
                    run.link_only = "; link-only: " in output or "; module-only: " in output
                    runs.append(run)
                    print(
                        f"{kind:9} {tool:12} {run.seconds:6.1f} s  {run.cpu:6.1f} CPU-s  (load {run.load:.1f})",
                        flush=True,
                    )
                    for at, line in run.phases:
                        print(f"           {at:6.2f}  {line}")
    finally:
        source.write_text(original)
        timed("pytest-kunit", "restore", bench.ours, bench.ours_cwd)
        timed("kunit.py", "restore", bench.kunit_py, bench.tree)
        end_all(args.cache)
    summary: dict[str, dict[str, float]] = {}
    for kind in args.edit.split(","):
        ours = statistics.median(r.seconds for r in runs if r.edit == kind and r.tool == "pytest-kunit")
        theirs = statistics.median(r.seconds for r in runs if r.edit == kind and r.tool == "kunit.py")
        ours_cpu = statistics.median(r.cpu for r in runs if r.edit == kind and r.tool == "pytest-kunit")
        theirs_cpu = statistics.median(r.cpu for r in runs if r.edit == kind and r.tool == "kunit.py")
        summary[kind] = {"pytest-kunit": ours, "kunit.py": theirs, "ratio": ours / theirs}
        summary[kind] |= {"pytest-kunit CPU": ours_cpu, "kunit.py CPU": theirs_cpu, "CPU ratio": ours_cpu / theirs_cpu}
        print(f"{kind:9} medians: pytest-kunit {ours:.1f} s, kunit.py {theirs:.1f} s, ratio {ours / theirs:.2f}")
        print(
            f"{'':9} CPU: pytest-kunit {ours_cpu:.1f} s, kunit.py {theirs_cpu:.1f} s, ratio {ours_cpu / theirs_cpu:.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"runs": [asdict(r) for r in runs], "medians": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
