#!/usr/bin/env python3
"""What ccache costs a cold build that has nothing to hit: compiles of a finished kernel build replayed from Kbuild's
own records (each object's `.cmd` file), each object three ways in turn: the compiler alone, through ccache in the
depend mode pytest-kunit gives it (an empty cache of its own), and the same with ccache's inode cache. Prints the
processor seconds of each way and its ratio to the compiler's. Objects go to a scratch directory, never into the
build.

    bench/wrapper_miss_cost.py --build ~/.cache/pytest-kunit/build/KEY --objects 60
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import subprocess
import tempfile
from pathlib import Path

_COMPILE = re.compile(r"cmd_\S+\.o := (\S*gcc .* -c -o \S+ \S+\.c)")


def compiles(build: Path) -> list[str]:
    """The C compiles of the kernel proper the build recorded (not its host tools)."""
    found = []
    for record in sorted(build.glob("**/.*.o.cmd")):
        if str(record.relative_to(build)).startswith(("tools/", "scripts/")):
            continue
        match = _COMPILE.match(record.read_text().split("\n", 1)[0])
        if match and "-Wp,-MMD," in match[1]:
            found.append(match[1])
    return found


def redirected(command: str, output: Path) -> str:
    command = re.sub(r" -c -o \S+ ", f" -c -o {output} ", command)
    return re.sub(r"-Wp,-MMD,\S+", f"-Wp,-MMD,{output}.d", command)


def processor_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, required=True, help="a finished kernel build directory")
    parser.add_argument("--objects", type=int, default=60)
    args = parser.parse_args()
    build = args.build.resolve()
    with tempfile.TemporaryDirectory(prefix="kunit-wrapper-cost-") as scratch_name:
        scratch = Path(scratch_name)
        ccache = {"CCACHE_DEPEND": "1", "CCACHE_BASEDIR": str(build)}
        ways = {
            "compiler alone": ("", {}),
            "ccache, depend mode": ("ccache ", ccache | {"CCACHE_DIR": str(scratch / "cache-1")}),
            "ccache, depend mode, inode cache": (
                "ccache ",
                ccache | {"CCACHE_DIR": str(scratch / "cache-2"), "CCACHE_INODECACHE": "1"},
            ),
        }
        totals = dict.fromkeys(ways, 0.0)
        candidates = compiles(build)
        random.Random(1).shuffle(candidates)
        measured = 0
        for command in candidates:
            if measured == args.objects:
                break
            spent: dict[str, float] = {}
            for way, (prefix, env) in ways.items():
                output = scratch / "objects" / f"{len(spent)}.o"
                output.parent.mkdir(exist_ok=True)
                before = processor_seconds()
                done = subprocess.run(
                    prefix + redirected(command, output),
                    shell=True,
                    cwd=build,
                    env=os.environ | env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    check=False,
                )
                if done.returncode:
                    break  # a compile that needs what a replay lacks (generated headers of a later step): left out
                spent[way] = processor_seconds() - before
            if len(spent) == len(ways):
                measured += 1
                for way, seconds in spent.items():
                    totals[way] += seconds
    print(f"{measured} objects of {build}, load {os.getloadavg()[0]:.1f}")
    for way, seconds in totals.items():
        print(f"{way:34} {seconds:8.2f} CPU-s  ratio {seconds / totals['compiler alone']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
