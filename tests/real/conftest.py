"""The real tier's kernels: few, each built once and serving many tests, as the plugin serves a user.

Every test runs pytest in a subprocess exactly as a user would. The tier keeps a cache of its own (TIER_HOME, given to
the subprocesses as XDG_CACHE_HOME: pytest-kunit's cache and ccache's), never the user's: its verdicts do not depend
on what else the user built, and a rerun finds the tier's kernels warm. A kernel is built by the first test that
needs it (`Tier.kernel`), with its progress lines on the terminal; the tests after it run their fragments as a user
types them, and pytest-kunit's own reuse (reuse.py) or the same build directory serves them with no build.

The kernels (KERNELS): on the packaged 6.1 tree with the series, x86_64: the framework fragment with the
out-of-tree suites (faults, misc-example, names), one shared kernel; all-tests; the debug kernel; the sanitize
suite's; the framework's GCOV kernel. arm64: the framework fragment with the fault suite. UML: the same two. 6.12
(test_real_6_12.py): its tree's own lib/kunit/.kunitconfig.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIER_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-kunit-real-tier"
TIER_CACHE = TIER_HOME / "pytest-kunit"

FRAMEWORK = "testsuites/kunit.kunitconfig"
FAULTS = "testsuites/faults/faults.kunitconfig"
MISC = "testsuites/misc-example/misc-example.kunitconfig"
NAMES = "testsuites/names/names.kunitconfig"
ALL_TESTS = "testsuites/all-tests.kunitconfig"
DEBUG = "testsuites/kunit-debug.kunitconfig"
SANITIZE = "testsuites/sanitize/sanitize.kunitconfig"

# Each kernel: the pytest arguments that build it (a shared kernel for several fragments, or one fragment's own).
KERNELS: dict[str, tuple[str, ...]] = {
    "x86_64": ("--kunit-share-kernels", FRAMEWORK, FAULTS, MISC, NAMES),
    "all-tests": (ALL_TESTS,),
    # Each instrumented kernel runs its fragment alone: a filtered boot of 6.1's KUnit leaks its suites' debugfs logs
    # (kunit_debugfs_create_suite on the filter's copies), which kmemleak reports, so the kmemleak kernels share none.
    "debug": (DEBUG,),
    "sanitize": ("--kunit-sanitize=kasan,ubsan", SANITIZE),
    "gcov": (f"--kunit-coverage={TIER_HOME / 'coverage'}", FRAMEWORK),
    "arm64": ("--kunit-arch=arm64", "--kunit-share-kernels", FRAMEWORK, FAULTS),
    "um": ("--kunit-arch=um", "--kunit-share-kernels", FRAMEWORK, FAULTS),
}


def tier_env(**extra: str) -> dict[str, str]:
    return os.environ | {"XDG_CACHE_HOME": str(TIER_HOME)} | extra


@dataclass
class Run:
    process: subprocess.CompletedProcess[str]
    outcomes: dict[str, str]  # suite.case -> passed, failure, error, skipped (from JUnit XML)
    seconds: float

    @property
    def stdout(self) -> str:
        return self.process.stdout

    @property
    def returncode(self) -> int:
        return self.process.returncode

    def report(self) -> str:
        return self.process.stdout[-6000:] + self.process.stderr[-3000:]


def junit_outcomes(junit: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            suite = case.get("classname", "").rsplit(".", 1)[-1]
            outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
            outcomes[f"{suite}.{case.get('name')}"] = outcome
    return outcomes


def run_pytest_kunit(
    capsys: pytest.CaptureFixture[str] | None,
    junit: Path,
    *args: str,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    timeout: float = 3600,
) -> Run:
    """`pytest --kunit ARGS` in a subprocess, in the tier's cache; its progress lines (`kunit: ...`) reach the
    terminal as they come, so a person watching knows what a build waits for."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", "-v", f"--junitxml={junit}", *args]
    started = time.monotonic()
    lines: list[str] = []
    env = env or tier_env()
    with subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as child:
        watchdog = threading.Timer(timeout, child.kill)  # a child that hangs silently is ended too
        watchdog.start()
        try:
            assert child.stdout is not None
            for line in child.stdout:
                lines.append(line)
                if line.startswith("kunit: ") and capsys is not None:
                    with capsys.disabled():
                        print(f"    [{Path(args[-1]).name if args else 'pytest'}] {line.rstrip()}", flush=True)
        finally:
            watchdog.cancel()
        child.wait()
    process = subprocess.CompletedProcess(command, child.returncode, "".join(lines), "")
    return Run(process, junit_outcomes(junit), time.monotonic() - started)


@dataclass
class Tier:
    """The session's kernels, each built (or found warm) once by the first test that asks."""

    scratch: Path
    built: dict[str, Run] = field(default_factory=dict)
    memo: dict[str, object] = field(default_factory=dict)  # what a module builds once a session on top of a kernel

    def kernel(self, name: str, capsys: pytest.CaptureFixture[str] | None = None) -> Run:
        """Build (or find warm) and list the kernel `name` of KERNELS; the run of `--collect-only`."""
        if name not in self.built:
            junit = self.scratch / f"kernel-{name}.xml"
            run = run_pytest_kunit(capsys, junit, "--collect-only", "-q", *KERNELS[name])
            assert run.returncode == 0, run.report()
            self.built[name] = run
        return self.built[name]


@pytest.fixture(scope="session")
def tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    TIER_HOME.mkdir(parents=True, exist_ok=True)
    yield Tier(tmp_path_factory.mktemp("tier"))


@dataclass
class Kunit:
    """What a test calls: `kernel(name)` first (built with its progress shown), then `run(...)` as a user types."""

    tier: Tier
    capsys: pytest.CaptureFixture[str]
    tmp_path: Path
    runs: int = 0

    def kernel(self, name: str) -> Run:
        return self.tier.kernel(name, self.capsys)

    def run(self, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 3600) -> Run:
        self.runs += 1
        junit = self.tmp_path / f"run-{self.runs}.xml"
        return run_pytest_kunit(self.capsys, junit, *args, cwd=cwd, env=tier_env(**(env or {})), timeout=timeout)


@pytest.fixture
def kunit(tier: Tier, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Kunit:
    return Kunit(tier, capsys, tmp_path)
