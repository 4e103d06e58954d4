#!/usr/bin/env python3
"""Time pytest-kunit against kunit.py on a user's own tree: Debian's linux-source-6.12, unpatched, extracted once
(untimed for both, as a developer's checkout is), running the tree's own lib/kunit/.kunitconfig.

pytest-kunit runs from inside the tree as a developer types it (`pytest --kunit lib/kunit/`), with the plugins
installed on the machine; kunit.py is the tree's own `tools/testing/kunit/kunit.py run --arch=x86_64`.
Scenarios: cold (empty pytest-kunit cache / new --build_dir), then warm (the same command again).
Cold and warm runs alternate between the tools, so machine load weighs on both alike.
Usage: bench/bench_tree.py [--tarball T] [--cold-runs N] [--warm-runs N] [--workdir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import AS_A_USER, kunit_py, pytest_command, timed

# As a developer types it inside the tree: every installed plugin autoloaded.
AUTOLOAD = dict(AS_A_USER)


def ours(cache: Path) -> list[str]:
    return pytest_command(sys.executable, cache, Path("lib/kunit/"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tarball", type=Path, default=Path("/usr/src/linux-source-6.12.tar.xz"))
    parser.add_argument("--cold-runs", type=int, default=1)
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="where the tree is extracted (kept); default: a temporary one")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-tree-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trees = [path for path in workdir.iterdir() if (path / "Makefile").is_file()]
    if not trees:
        subprocess.run(["tar", "-I", "xz -T0", "-xf", str(args.tarball), "-C", str(workdir)], check=True)
        trees = [path for path in workdir.iterdir() if (path / "Makefile").is_file()]
    tree = trees[0]
    figures: dict[str, dict[str, list[float]]] = {"cold": {"pytest-kunit": [], "kunit.py": []}}
    figures["warm"] = {"pytest-kunit": [], "kunit.py": []}
    for run in range(args.cold_runs):
        cache, build = workdir / f"cache-{run}", workdir / f"build-{run}"
        for path in (cache, build):
            shutil.rmtree(path, ignore_errors=True)
        subprocess.run(["sync"], check=False)
        figures["cold"]["pytest-kunit"].append(timed(ours(cache), tree, AUTOLOAD))
        figures["cold"]["kunit.py"].append(timed(kunit_py(tree, build, tree / "lib/kunit"), tree))
    cache, build = workdir / f"cache-{args.cold_runs - 1}", workdir / f"build-{args.cold_runs - 1}"
    for _ in range(args.warm_runs):
        figures["warm"]["pytest-kunit"].append(timed(ours(cache), tree, AUTOLOAD))
        figures["warm"]["kunit.py"].append(timed(kunit_py(tree, build, tree / "lib/kunit"), tree))
    for scenario, tools in figures.items():
        mine, theirs = statistics.median(tools["pytest-kunit"]), statistics.median(tools["kunit.py"])
        runs = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(tools["pytest-kunit"], tools["kunit.py"], strict=True))
        print(f"{scenario:5} pytest-kunit {mine:7.1f} s  kunit.py {theirs:7.1f} s  ratio {mine / theirs:.2f}  ({runs})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
