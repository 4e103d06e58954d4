#!/usr/bin/env python3
"""Time pytest-kunit against upstream kunit.py on the same packaged tree and kunitconfig, in one run.

Scenarios (each repeated; medians printed with the ratio pytest-kunit / kunit.py):
  cold      empty build directory (pytest-kunit: empty cache; kunit.py: new --build_dir); with --paired, both at
            once on the same extracted tree
  cold-all  the same with the all-tests fragment (only with --cold-all-tests-runs N)
  warm      the same command again with nothing changed (pytest with only pytest-kunit and pytest-xdist loaded)
  warm-readme  the same, run as the README's command one installs pytest-kunit (`pip install -e .` in a venv of its
            own, plugins autoloaded): what a user's warm run costs
  warm-kept  warm with --kunit-keep-guest (on a tree with kunit.autorun: the series): the suites run again on the
            guest the run before kept up, through debugfs, with no boot; as the README installs pytest-kunit
  one-case  warm, one selected case (pytest -k / kunit.py filter_glob)
  xdist     warm, `-n 2` against `-n 0` on the all-tests fragment (pytest-kunit only; kunit.py has no equivalent)
  xdist-boots  the same, boot-bound: all-tests with --kunit-isolate=suite (one boot per suite)

kunit.py is the packaged tree's own tools/testing/kunit/kunit.py, run on its own extract of the same tarball with the
same kernel-patches/ applied, so both tools build the same sources from the same kunitconfig.
Usage: bench/bench.py [--cold-runs N] [--cold-all-tests-runs N] [--warm-runs N] [--skip-cold] [--cold-only] [--json OUT]
                      [--only SCENARIO,...] [--cache DIR] [--tree DIR] [--kunit-build DIR] [--arch NAME]
(--cache ~/.cache/pytest-kunit --tree <its src/ tree> --only warm,warm-readme: warm figures without extracting the
tarball; kunit.py still builds once into a directory of its own unless --kunit-build names one it built before.)
--arch arm64: both tools build and boot arm64 guests (kunit.py with --cross_compile, the record's compiler prefix).
--arch um: User Mode Linux, kunit.py's default target (its --arch=um is what it runs with no --arch at all).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_kunit.arch import ARCHES
from pytest_kunit.guest import keepers
from pytest_kunit.kernel.tree import apply_patches, patch_files

ROOT = Path(__file__).resolve().parents[1]
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
FRAMEWORK = ROOT / "testsuites/kunit.kunitconfig"
ALL_TESTS = ROOT / "testsuites/all-tests.kunitconfig"


# Both tools run as a user's shell runs them: Python caches bytecode. This machine's environment exports
# PYTHONDONTWRITEBYTECODE=1, which no Python has by default; under it every run compiles every module again, and
# pytest rewrites the asserts of every module of an installed plugin again (the rewritten bytecode is never kept):
# about 1 s of each warm pytest run with this machine's plugins, and kunit.py's own modules compiled again too.
AS_A_USER = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
ONLY_OURS = dict(AS_A_USER, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
# What ONLY_OURS loads explicitly, autoload being off.
ONLY_OUR_PLUGINS = ("pytest_kunit.plugin", "xdist.plugin")


def timed(command: list[str], cwd: Path, env: dict[str, str] = ONLY_OURS) -> float:
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    # pytest exits 0 (all passed); kunit.py exits 0 too. Anything else invalidates the figure.
    if result.returncode != 0:
        sys.stderr.write(f"command failed ({result.returncode}): {' '.join(command)}\n{result.stdout[-3000:]}\n")
        raise SystemExit(1)
    return elapsed


def timed_together(runs: list[tuple[list[str], Path, dict[str, str]]]) -> list[float]:
    """Start every command at the same moment and time each: on a loaded machine, both tools then build under the
    same load, which running them one after the other cannot promise."""
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        return list(pool.map(lambda run: timed(*run), runs))


def pytest_command(
    python: str, cache: Path, fragment: Path, *extra: str, arch: str = "x86_64", plugins: tuple[str, ...] = ()
) -> list[str]:
    """`python -m pytest --kunit` on `fragment`, loading `plugins` explicitly (with plugin autoload off)."""
    loads = [arg for plugin in plugins for arg in ("-p", plugin)]
    run = [python, "-m", "pytest", "-q", *loads, "-p", "no:cacheprovider", "--kunit", f"--kunit-cache-dir={cache}"]
    return [*run, f"--kunit-arch={arch}", str(fragment), *extra]


def pytest_kunit(cache: Path, fragment: Path, *extra: str, arch: str = "x86_64") -> list[str]:
    # Only pytest-kunit and its own dependency pytest-xdist are loaded (see ONLY_OURS): other plugins installed on
    # the machine (hypothesis, pytest-benchmark) cost about a second of start-up that is not pytest-kunit's.
    return pytest_command(sys.executable, cache, fragment, *extra, arch=arch, plugins=ONLY_OUR_PLUGINS)


def readme_install(workdir: Path) -> Path:
    """A venv holding pytest-kunit as the README's command one installs it (`pip install -e .`): its python."""
    venv = workdir / "readme-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", str(ROOT)]
    subprocess.run(pip, check=True, stderr=subprocess.DEVNULL)
    return python


def pytest_kunit_as_installed(
    python: Path, cache: Path, fragment: Path, arch: str = "x86_64", *extra: str
) -> list[str]:
    """pytest-kunit as a user runs it: every installed plugin autoloaded (run with AUTOLOAD)."""
    return pytest_command(str(python), cache, fragment, *extra, arch=arch)


AUTOLOAD = {name: value for name, value in AS_A_USER.items() if name != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}


# The targets kunit.py names otherwise (tools/testing/kunit/qemu_configs/): the same machine under its name.
KUNITPY_NAMES = {"riscv64": "riscv"}


def kunit_py(tree: Path, build_dir: Path, fragment: Path, *extra: str, arch: str = "x86_64") -> list[str]:
    # A cross build gets the same compiler prefix as pytest-kunit's.
    cross = ARCHES[arch].make.cross_compile
    return [
        sys.executable,
        str(tree / "tools/testing/kunit/kunit.py"),
        "run",
        f"--arch={KUNITPY_NAMES.get(arch, arch)}",
        *([f"--cross_compile={cross}"] if cross else []),
        f"--build_dir={build_dir}",
        f"--kunitconfig={fragment}",
        f"--jobs={os.cpu_count() or 1}",
        *extra,
    ]


def patched_tree(workdir: Path) -> Path:
    """The tree pytest-kunit builds by default (the tarball plus kernel-patches/), extracted afresh for kunit.py."""
    with tarfile.open(TARBALL) as archive:
        top = archive.next()
    assert top is not None
    subprocess.run(["tar", "-xf", str(TARBALL), "-C", str(workdir)], check=True)
    tree = workdir / top.name.split("/")[0]
    apply_patches(tree, patch_files((ROOT / "kernel-patches",)))  # the same series, applied as the plugin does
    return tree


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--cold-all-tests-runs", type=int, default=0, help="cold runs of the all-tests fragment too")
    parser.add_argument("--warm-runs", type=int, default=5)
    parser.add_argument("--skip-cold", action="store_true", help="reuse warm builds only (no cold figures)")
    parser.add_argument("--cold-only", action="store_true", help="only the cold scenario")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--only", help="comma-separated scenarios to run (default: all)")
    parser.add_argument("--cache", type=Path, help="pytest-kunit cache for the warm scenarios (default: a new one)")
    parser.add_argument("--tree", type=Path, help="patched tree for kunit.py (default: a fresh extract)")
    parser.add_argument("--kunit-build", type=Path, help="kunit.py build directory for the warm scenarios")
    parser.add_argument("--arch", default="x86_64", choices=sorted(ARCHES), help="guest architecture of both tools")
    parser.add_argument(
        "--paired",
        action="store_true",
        help="cold: start both tools at once on the same extracted tree (pytest-kunit given it with "
        "--kunit-kernel-src, and an empty ccache of its own), so both build under the same load",
    )
    parser.add_argument(
        "--wrapper",
        help="cold: pytest-kunit's --kunit-wrapper (default: its own default, ccache when installed, an empty one)",
    )
    args = parser.parse_args()
    arch = args.arch
    wrapper = (f"--kunit-wrapper={args.wrapper}",) if args.wrapper else ()
    only = set(args.only.split(",")) if args.only else None

    def wanted(scenario: str) -> bool:
        return only is None or scenario in only

    figures: dict[str, dict[str, list[float]]] = {}

    def record(scenario: str, tool: str, seconds: float) -> None:
        figures.setdefault(scenario, {}).setdefault(tool, []).append(seconds)
        print(f"{scenario:10} {tool:12} {seconds:8.1f} s", flush=True)

    with tempfile.TemporaryDirectory(prefix="kunit-bench-") as scratch:
        work = Path(scratch)
        tree = args.tree or patched_tree(work)
        # The warm scenarios run in the last cold run's directories (or build there first, with --skip-cold).
        cache, build = work / "cache", work / "kunit-build"

        for run in range(0 if args.skip_cold or not wanted("cold") else args.cold_runs):
            # Each cold run gets directories of its own, deleted only after the last one: deleting gigabytes just
            # before a timed run slows its writes down (the disk is mounted with `discard`), and pytest-kunit, which
            # also extracts the tarball, writes the most.
            cache, build = work / f"cache-cold-{run}", work / f"kunit-build-cold-{run}"
            # Cold for pytest-kunit includes its compiler cache: kunit.py has none.
            fresh_ccache = dict(ONLY_OURS, CCACHE_DIR=str(work / f"ccache-cold-{run}"))
            os.sync()  # what the previous run wrote is on disk before the next one starts
            if args.paired:
                same_tree = (f"--kunit-kernel-src={tree}", "--kunit-patches=none", *wrapper)
                ours, theirs = timed_together(
                    [
                        (pytest_kunit(cache, FRAMEWORK, *same_tree, arch=arch), ROOT, fresh_ccache),
                        (kunit_py(tree, build, FRAMEWORK, arch=arch), tree, ONLY_OURS),
                    ]
                )
                record("cold", "pytest-kunit", ours)
                record("cold", "kunit.py", theirs)
                continue
            # Interleaved, so drift in the machine's load hits both tools alike.
            record(
                "cold", "pytest-kunit", timed(pytest_kunit(cache, FRAMEWORK, *wrapper, arch=arch), ROOT, fresh_ccache)
            )
            os.sync()
            record("cold", "kunit.py", timed(kunit_py(tree, build, FRAMEWORK, arch=arch), tree))
        for run in range(0 if args.skip_cold or not wanted("cold-all") else args.cold_all_tests_runs):
            all_cache, all_build = work / f"cache-cold-all-{run}", work / f"kunit-build-cold-all-{run}"
            os.sync()
            fresh_ccache = dict(ONLY_OURS, CCACHE_DIR=str(work / f"ccache-cold-all-{run}"))
            record("cold-all", "pytest-kunit", timed(pytest_kunit(all_cache, ALL_TESTS, arch=arch), ROOT, fresh_ccache))
            os.sync()
            record("cold-all", "kunit.py", timed(kunit_py(tree, all_build, ALL_TESTS, arch=arch), tree))

        if args.cold_only:
            return report(figures, args.json)

        cache, build = args.cache or cache, args.kunit_build or build
        # Warm-up (and the build, if cold runs were skipped); warm-kept's kernel is another, built below.
        if only is None or only & {"warm", "warm-readme", "one-case"}:
            timed(pytest_kunit(cache, FRAMEWORK, arch=arch), ROOT)
        timed(kunit_py(tree, build, FRAMEWORK, arch=arch), tree)
        readme = readme_install(work) if wanted("warm-readme") or wanted("warm-kept") else None
        kept = ("--kunit-keep-guest",)
        try:
            if readme and wanted("warm-kept"):
                # Builds the kernel a kept guest serves (with an initramfs and KUnit's debugfs), and boots that guest.
                timed(pytest_kunit_as_installed(readme, cache, FRAMEWORK, arch, *kept), ROOT, AUTOLOAD)
            for _ in range(args.warm_runs if wanted("warm") or readme else 0):
                # One kunit.py figure per round, the reference for both ways of running pytest-kunit.
                reference = timed(kunit_py(tree, build, FRAMEWORK, arch=arch), tree)
                if wanted("warm"):
                    record("warm", "pytest-kunit", timed(pytest_kunit(cache, FRAMEWORK, arch=arch), ROOT))
                    record("warm", "kunit.py", reference)
                if readme and wanted("warm-readme"):
                    as_installed = pytest_kunit_as_installed(readme, cache, FRAMEWORK, arch)
                    record("warm-readme", "pytest-kunit", timed(as_installed, ROOT, AUTOLOAD))
                    record("warm-readme", "kunit.py", reference)
                if readme and wanted("warm-kept"):
                    on_kept = pytest_kunit_as_installed(readme, cache, FRAMEWORK, arch, *kept)
                    record("warm-kept", "pytest-kunit", timed(on_kept, ROOT, AUTOLOAD))
                    record("warm-kept", "kunit.py", reference)
        finally:
            keepers.end_all(cache)  # no kept guest outlives the bench, a failed round's either
        for _ in range(args.warm_runs if wanted("one-case") else 0):
            one = ("-k", "example_simple_test")
            record("one-case", "pytest-kunit", timed(pytest_kunit(cache, FRAMEWORK, *one, arch=arch), ROOT))
            record(
                "one-case",
                "kunit.py",
                timed(kunit_py(tree, build, FRAMEWORK, "example.example_simple_test", arch=arch), tree),
            )

        if not wanted("xdist") and not wanted("xdist-boots"):
            return report(figures, args.json)
        timed(pytest_kunit(cache, ALL_TESTS, arch=arch), ROOT)  # build the all-tests kernel
        for _ in range(args.warm_runs if wanted("xdist") else 0):
            record("xdist", "-n 0", timed(pytest_kunit(cache, ALL_TESTS, "-n", "0", arch=arch), ROOT))
            record("xdist", "-n 2", timed(pytest_kunit(cache, ALL_TESTS, "-n", "2", arch=arch), ROOT))
        for _ in range(args.warm_runs if wanted("xdist-boots") else 0):
            per_suite = ("--kunit-isolate=suite",)
            record("xdist-boots", "-n 0", timed(pytest_kunit(cache, ALL_TESTS, *per_suite, "-n", "0", arch=arch), ROOT))
            record("xdist-boots", "-n 2", timed(pytest_kunit(cache, ALL_TESTS, *per_suite, "-n", "2", arch=arch), ROOT))

    return report(figures, args.json)


def report(figures: dict[str, dict[str, list[float]]], json_path: Path | None) -> int:
    print("\nmedians (seconds) and ratios")
    summary: dict[str, dict[str, float]] = {}
    for scenario, tools in figures.items():
        medians = {tool: median(values) for tool, values in tools.items()}
        summary[scenario] = medians
        names = list(medians)
        ratio = medians[names[0]] / medians[names[1]] if len(names) == 2 and medians[names[1]] else float("nan")
        cells = "  ".join(f"{tool} {value:.1f}" for tool, value in medians.items())
        print(f"{scenario:10} {cells}  ratio {names[0]}/{names[-1]} = {ratio:.2f}  (runs: {len(tools[names[0]])})")
    for scenario in ("xdist", "xdist-boots"):
        if scenario in summary:
            speedup = summary[scenario]["-n 0"] / summary[scenario]["-n 2"]
            print(f"{scenario} speed-up (-n 0 / -n 2): {speedup:.2f}x")
    if json_path:
        json_path.write_text(json.dumps({"figures": figures, "medians": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
