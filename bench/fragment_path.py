#!/usr/bin/env python3
"""A fragment's way from collection to its first boots, as the package's own modules see it.

Runs the plugin once, in this process, on the fake kernel tree and fake QEMU of tests/fake/ (a fresh cache, so the
fragment is built and listed), with a profiler recording every call into a pytest_kunit function from the moment its
kunitconfig file is collected. A stop is a run of consecutive calls in one module; a return is a stop in a module
the way had already left. The figures are given to the list boot (the first QEMU start: tree, fragment, build
request, build, initramfs, listing) and to the first boot that runs cases (plan and boot too).

With --callers, only the calls the named modules make into other modules count: the way as the modules that drive it
(the pipeline) take it, step by step, without what each step does inside.

Usage: PYTHONPATH=. bench/fragment_path.py [--warm] [--callers MODULE,...] [--stages] [--trace]
  --warm    record a second run on the first's cache (nothing to build, the case list cached: no list boot)
  --callers only calls made by these modules (paths below pytest_kunit/, e.g. fragments/pipeline.py)
  --stages  the stages the way passes through, in order (consecutive repeats collapsed)
  --trace   every stop, one a line
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import pytest_kunit

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fake"
PACKAGE = Path(pytest_kunit.__file__).resolve().parent
KUNITCONFIG = "CONFIG_KUNIT=y\nCONFIG_KUNIT_TEST=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\n"
START = ("face/nodes.py", "collect")  # KunitconfigFile.collect: the fragment's collection begins
BOOT = ("guest/boot.py", "_spawn")  # a guest's QEMU starts


@dataclass
class Recorder:
    """Each call into the package, by module (its path below the package), until a guest that runs cases starts."""

    modules: list[str]
    callers: frozenset[str] = frozenset()  # when given, only the calls these modules make into others count
    list_boot: int | None = None  # the number of calls recorded when a list boot started
    test_boot: int | None = None  # and when the first boot that runs cases started
    started: bool = False

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if not path.is_relative_to(PACKAGE):
            return
        module = path.relative_to(PACKAGE).as_posix()
        place = (module, frame.f_code.co_name)
        if not self.started:
            self.started = place == START
            if not self.started:
                return
        if place == BOOT:
            arguments = frame.f_locals["self"].request.kernel_args
            if any(argument.startswith("kunit.action=list") for argument in arguments):
                self.list_boot = len(self.modules)
            else:
                self.test_boot = len(self.modules)
                sys.setprofile(None)
                return
        if self.callers and (module in self.callers or _module(frame.f_back) not in self.callers):
            return
        self.modules.append(module)


def _module(frame: FrameType | None) -> str | None:
    """The module (its path below the package) whose code `frame` runs; None outside the package."""
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename)
    return path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else None


def stops(modules: list[str]) -> list[str]:
    """The modules in order, consecutive calls in one module as one stop."""
    return [module for index, module in enumerate(modules) if index == 0 or modules[index - 1] != module]


def returns(way: list[str]) -> int:
    """How many stops are in a module the way had left before."""
    seen: set[str] = set()
    count = 0
    for module in way:
        count += module in seen
        seen.add(module)
    return count


def stage(module: str) -> str:
    """The stage of a module (docs/architecture.md): its subpackage; the root's modules and arch/ are the ground."""
    parts = module.split("/")
    if len(parts) == 1:
        return "entry" if module in ("plugin.py", "newhooks.py") else "ground"
    return "ground" if parts[0] == "arch" else parts[0]


def figures(label: str, modules: list[str], show_stages: bool, trace: bool) -> None:
    way = stops(modules)
    stages = stops([stage(module) for module in way])
    print(
        f"{label}: {len(way)} stops in {len(set(way))} modules, {returns(way)} returns; "
        f"by stage {len(stages)} stops in {len(set(stages))} stages, {returns(stages)} returns"
    )
    if show_stages:
        print("  stages: " + " -> ".join(stages))
    if trace:
        for module in way:
            print(f"    {module}")


def run(work: Path, recorder: Callable[[FrameType, str, Any], None] | None) -> int:
    """One run of the plugin on the fake tree in `work` (made on the first run), under `recorder`."""
    tree, project = work / "fake-tree", work / "project"
    if not tree.exists():
        shutil.copytree(FAKE / "tree", tree)
        project.mkdir()
        (project / "kunit.kunitconfig").write_text(KUNITCONFIG)
    os.environ["FAKE_QEMU_LOG"] = str(work / "qemu.log")
    args = [
        *("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark", "-q"),
        *("--kunit", f"--kunit-kernel-src={tree}", "--kunit-patches=none", f"--kunit-qemu={FAKE / 'qemu'}"),
        *(f"--kunit-cache-dir={work / 'cache'}", f"--rootdir={project}", str(project / "kunit.kunitconfig")),
    ]
    here = Path.cwd()
    os.chdir(project)
    if recorder is not None:
        sys.setprofile(recorder)
    try:
        return int(pytest.main(args))
    finally:
        sys.setprofile(None)
        os.chdir(here)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm", action="store_true", help="record a second run, on the first's cache")
    parser.add_argument("--callers", default="", help="only calls these modules make (comma-separated)")
    parser.add_argument("--stages", action="store_true", help="the stages the way passes, in order")
    parser.add_argument("--trace", action="store_true", help="every stop, one a line")
    options = parser.parse_args()
    recorder = Recorder([], frozenset(filter(None, options.callers.split(","))))
    with tempfile.TemporaryDirectory() as scratch:
        if options.warm:
            run(Path(scratch), None)
        status = run(Path(scratch), recorder)
    if recorder.test_boot is None:
        print(f"the run (exit status {status}) booted no guest that runs cases")
        return 1
    if recorder.list_boot is not None:
        figures("to the list boot", recorder.modules[: recorder.list_boot], options.stages, options.trace)
    figures("to the first test boot", recorder.modules[: recorder.test_boot], options.stages, options.trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
