#!/usr/bin/env python3
"""Time cold builds of the main job (`pytest --kunit testsuites/`) with and without a compiler wrapper.

Each scenario runs the main job from an empty pytest-kunit cache (its own --kunit-cache-dir) and reads each
fragment's build time, and ccache's hits, from the "built ..." lines pytest-kunit prints:

- plain: --kunit-wrapper none. Each fragment is a cold build of its own: their sum is what the main job cost before,
  their largest is "one fragment's cold build".
- ccache-cold: --kunit-wrapper ccache with an empty ccache (CCACHE_DIR wiped): the main job cold on a fresh machine,
  where a fragment may hit what an earlier fragment compiled.
- ccache-warm: the same again into another empty pytest-kunit cache, ccache kept: a cold build with a warm ccache
  (a second checkout, or a pytest-kunit cache wiped with rm -rf).
Any other name runs through ccache as it stands (ccache-of=testsuites/of.kunitconfig after ccache-cold on another
fragment: what one fragment hits of another's compiles); a name ending in -cold wipes ccache first, one containing
plain runs without a wrapper.

- kunit.py: upstream's `kunit.py run` cold (a new --build_dir) on the same tree and fragment (which it must name:
  kunit.py=testsuites/kunit.kunitconfig), the reference each pytest-kunit run on that fragment is divided by.

A name containing "shared" adds --kunit-share-kernels (shared-plain: the main job as one union kernel, no wrapper;
against plain: its builds over the largest and the sum of the fragments' own cold builds, issue 15's measure).

A scenario may name what it runs instead of testsuites/ (`plain=testsuites/kunit.kunitconfig`: one fragment).
Every scenario's verdicts (case by case, from JUnit XML) must equal the first scenario's on the cases both ran: a
wrapper changes how objects are made, never what a case does. Each run holds the machine's build lock (--lock) only
while it runs. With --seed-src, each pytest-kunit cache and kunit.py's tree start from that extracted tree, hard-linked
(no build writes into a tree), so no run extracts the tarball and the runs compare builds; `--seed-src default` is
the default cache's tree of the packaged tarball with kernel-patches/ (extracted first if it is not there).
Usage: bench/bench_wrapper.py [--workdir DIR] [--scenarios ccache-cold,ccache-warm,plain] [--seed-src DIR|default]
                              [--lock /tmp/kbuild.lock] [--json OUT] [-- extra pytest arguments]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from bench import kunit_py, patched_tree
from pytest_kunit.bundled import default_patch_dirs
from pytest_kunit.kernel.tree import prepare
from pytest_kunit.versions import DEFAULT_TARBALL

ROOT = Path(__file__).resolve().parents[1]
_BUILT = re.compile(r"built (\S+) in ([\d.]+) s \(log: [^;)]*(?:; ccache: (\d+) of (\d+) compiles hit)?\)")


def wrapper_of(scenario: str) -> str:
    """A name with "plain" in it runs without a wrapper, anything else through ccache; *-cold starts from an empty
    ccache."""
    return "none" if "plain" in scenario else "ccache"


def outcomes(junit: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
        found[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return found


def locked(command: list[str], cwd: Path, env: dict[str, str], lock: Path) -> dict[str, Any]:
    """Run `command` holding the build lock: its time, the load average before and after, its output."""
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        load = os.getloadavg()[0]
        started = time.monotonic()
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        load_after = os.getloadavg()[0]
    return {"seconds": seconds, "load": [load, load_after], "returncode": result.returncode, "result": result}


def seed_tree(seed: str | None) -> Path | None:
    """The tree --seed-src names; `default`: the default cache's packaged tree with pytest-kunit's own series."""
    if seed != "default":
        return Path(seed) if seed else None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-kunit"
    return prepare(DEFAULT_TARBALL, default_patch_dirs(), cache).path


def upstream(target: str, workdir: Path, seed: Path | None, lock: Path) -> dict[str, Any]:
    """kunit.py's cold run of one fragment into a new build directory, on the same patched tree."""
    if not target.endswith(".kunitconfig"):
        raise SystemExit("kunit.py runs one fragment: write kunit.py=testsuites/NAME.kunitconfig")
    tree = workdir / "kunit.py-tree"
    if not tree.exists():
        if seed is not None:
            subprocess.run(["cp", "-al", str(seed), str(tree)], check=True)
        else:
            patched_tree(workdir).rename(tree)
    build = workdir / "kunit.py-build"
    shutil.rmtree(build, ignore_errors=True)
    entry = locked(kunit_py(tree, build, ROOT / target), tree, dict(os.environ), lock)
    result = entry.pop("result")
    (workdir / "kunit.py.out").write_text(result.stdout + result.stderr)
    return entry | {"builds": {}, "outcomes": {}, "target": target}


def run(spec: str, workdir: Path, ccache_dir: Path, seed: Path | None, lock: Path, extra: list[str]) -> dict[str, Any]:
    scenario, _, target = spec.partition("=")
    if scenario == "kunit.py":
        return upstream(target, workdir, seed, lock)
    cache = workdir / scenario
    shutil.rmtree(cache, ignore_errors=True)
    if scenario.endswith("-cold") and wrapper_of(scenario) == "ccache":
        shutil.rmtree(ccache_dir, ignore_errors=True)
    if seed is not None:  # the extracted, patched tree, hard-linked: builds never write into it (O= builds)
        (cache / "src").mkdir(parents=True)
        subprocess.run(["cp", "-al", str(seed), str(cache / "src" / seed.name)], check=True)
    junit = workdir / f"{scenario}.xml"
    target = target or "testsuites/"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", target]
    command += [f"--kunit-cache-dir={cache}", f"--kunit-wrapper={wrapper_of(scenario)}", f"--junitxml={junit}", *extra]
    if "shared" in scenario:
        command.append("--kunit-share-kernels")
    entry = locked(command, ROOT, os.environ | {"CCACHE_DIR": str(ccache_dir)}, lock)
    result = entry.pop("result")
    (workdir / f"{scenario}.out").write_text(result.stdout + result.stderr)
    builds = {
        match[1]: {"seconds": float(match[2]), "hits": int(match[3] or 0), "compiles": int(match[4] or 0)}
        for match in _BUILT.finditer(result.stdout)
    }
    return entry | {"builds": builds, "outcomes": outcomes(junit) if junit.exists() else {}, "target": target}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bench-wrapper"))
    parser.add_argument("--scenarios", default="ccache-cold,ccache-warm,plain")
    seed = "an extracted, patched tree in a pytest-kunit cache (src/KEY) to hard-link (skips extraction), or default"
    parser.add_argument("--seed-src", help=seed)
    parser.add_argument("--ccache-dir", type=Path, help="default: WORKDIR/ccache (never your own ccache)")
    parser.add_argument("--lock", type=Path, default=Path("/tmp/kbuild.lock"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    ccache_dir = args.ccache_dir or args.workdir / "ccache"
    figures: dict[str, dict[str, Any]] = {}
    for spec in args.scenarios.split(","):
        scenario = spec.partition("=")[0]
        figures[scenario] = run(spec, args.workdir, ccache_dir, seed_tree(args.seed_src), args.lock, args.extra)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1))
        entry = figures[scenario]
        total = sum(build["seconds"] for build in entry["builds"].values())
        print(
            f"{scenario:12} exit {entry['returncode']}  whole run {entry['seconds']:7.1f} s  builds {total:7.1f} s  "
            f"load {entry['load'][0]:.1f}->{entry['load'][1]:.1f}"
        )
        for name, build in entry["builds"].items():
            hits = f"  ccache {build['hits']}/{build['compiles']}" if build["compiles"] else ""
            print(f"    {name:24} {build['seconds']:7.1f} s{hits}")
    ours = {scenario: entry for scenario, entry in figures.items() if scenario != "kunit.py"}
    first = next(iter(ours.values()))["outcomes"] if ours else {}
    for scenario, entry in ours.items():
        common = entry["outcomes"].keys() & first.keys()
        same = bool(common) and all(entry["outcomes"][key] == first[key] for key in common)
        print(f"verdicts of {scenario}: {'the same' if same else 'DIFFERENT'} ({len(entry['outcomes'])} cases)")
    if "plain" in figures:
        plain = [build["seconds"] for build in figures["plain"]["builds"].values()]
        for scenario in (name for name in ours if name != "plain"):
            if plain:
                total = sum(build["seconds"] for build in figures[scenario]["builds"].values())
                whole = figures[scenario]["seconds"] / figures["plain"]["seconds"]
                print(
                    f"{scenario}: builds / largest plain build {total / max(plain):.2f}, / sum {total / sum(plain):.2f}"
                    f"; whole run / plain's whole run {whole:.2f}"
                )
    if "kunit.py" in figures:
        reference = figures["kunit.py"]
        for scenario, entry in ours.items():
            if entry["target"] == reference["target"]:
                print(f"{scenario}: whole run / kunit.py's cold run {entry['seconds'] / reference['seconds']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
