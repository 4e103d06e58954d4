"""The real tier for compiler wrappers: the main job cold through ccache gives every case the verdict it has when its
fragment runs alone, a second cold build hits ccache, and distcc compiles on a distccd of its own on localhost.

Cold builds this module adds: the main job cold through an empty ccache (the three default fragments in an empty
pytest-kunit cache; the second and third share what ccache has from the first), then one build that hits ccache
(the framework fragment into another empty cache) and one that recompiles only lib/kunit through distcc. The
fragments alone reuse the builds the rest of the tier makes in the default cache.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .pending import never_run_yet

pytestmark = [pytest.mark.real, never_run_yet]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FRAGMENTS = sorted(f"testsuites/{path.name}" for path in (ROOT / "testsuites").glob("*.kunitconfig"))
FRAMEWORK = "testsuites/kunit.kunitconfig"
_BUILT = re.compile(r"built (\S+) in [\d.]+ s \(log: ([^;)]*)(?:; ccache: (\d+) of (\d+) compiles hit)?\)")


@dataclass
class Run:
    process: subprocess.CompletedProcess[str]
    outcomes: dict[str, str]  # JUnit classname::name (the fragment is in the classname) -> outcome
    builds: dict[str, tuple[Path, int, int]]  # fragment file name -> (build log, ccache hits, compiles)

    def report(self) -> str:
        return self.process.stdout[-6000:] + self.process.stderr[-3000:]


def run(tmp_path: Path, name: str, *args: str, env: dict[str, str] | None = None) -> Run:
    junit = tmp_path / f"{name}.xml"
    started = time.monotonic()
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", f"--junitxml={junit}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=7200,
        env=os.environ | (env or {}),
    )
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
            outcomes[f"{case.get('classname')}::{case.get('name')}"] = outcome
    builds = {
        match[1]: (Path(match[2]), int(match[3] or 0), int(match[4] or 0)) for match in _BUILT.finditer(process.stdout)
    }
    # What each build cost, for docs/performance.md (seen with -s; never asserted: timings are not verdicts).
    print(f"{name}: {time.monotonic() - started:.1f} s; load {os.getloadavg()[0]:.1f}")
    for match in _BUILT.finditer(process.stdout):
        print(f"    {match[0]}")
    return Run(process, outcomes, builds)


@dataclass
class MainJob:
    alone: dict[str, str]  # every default fragment's outcomes, each run alone in the default cache
    cold: Run  # the main job from an empty pytest-kunit cache and an empty ccache
    root: Path  # holds cache-a (the main job's pytest-kunit cache) and ccache
    env: dict[str, str]


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> MainJob:
    root = tmp_path_factory.mktemp("wrapper")
    alone: dict[str, str] = {}
    for fragment in DEFAULT_FRAGMENTS:
        single = run(root, Path(fragment).stem, fragment)
        assert single.outcomes, single.report()
        alone.update(single.outcomes)
    env = {"CCACHE_DIR": str(root / "ccache")}
    cold = run(
        root, "main-job", "testsuites/", f"--kunit-cache-dir={root / 'cache-a'}", "--kunit-wrapper=ccache", env=env
    )
    return MainJob(alone, cold, root, env)


def test_main_job_through_ccache_keeps_every_verdict(main_job: MainJob) -> None:
    cold = main_job.cold
    assert sorted(cold.builds) == sorted(Path(fragment).name for fragment in DEFAULT_FRAGMENTS), cold.report()
    # The same cases with the same outcomes as each fragment alone, built without sharing anything.
    assert cold.outcomes == main_job.alone, cold.report()
    for log, _, compiles in cold.builds.values():
        assert compiles > 500, log  # ccache saw the kernel's compiles (host tools and the kernel's own)
        assert "ccache in front of gcc" in log.read_text()
        assert_file_names_as_unwrapped(log.parent / "vmlinux")


def assert_file_names_as_unwrapped(image: Path) -> None:
    """KUnit's and BUG()'s file names (__FILE__) are the tree's `lib/...`, not the relative paths ccache's base_dir
    hands the compiler (../../src/KEY/lib/...)."""
    data = image.read_bytes()
    assert b"lib/kunit/kunit-test.c" in data or b"lib/kunit/test.c" in data
    assert b"../src/" not in data


def test_a_second_cold_build_hits_ccache(main_job: MainJob) -> None:
    # Another empty pytest-kunit cache, at the same depth as the first: base_dir makes the paths the same.
    again = run(
        main_job.root,
        "again",
        FRAMEWORK,
        f"--kunit-cache-dir={main_job.root / 'cache-b'}",
        "--kunit-wrapper=ccache",
        env=main_job.env,
    )
    (log, hits, compiles) = again.builds["kunit.kunitconfig"]
    assert compiles > 500 and hits >= 0.95 * compiles, (hits, compiles, log)
    assert again.outcomes == {key: value for key, value in main_job.alone.items() if "kunit.kunitconfig" in key}
    assert_file_names_as_unwrapped(log.parent / "vmlinux")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def distccd(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """Debian's distccd on a private port, for 127.0.0.1 only; yields DISTCC_HOSTS and its log."""
    if shutil.which("distccd") is None:
        pytest.fail("distccd is missing: scripts/setup.sh --test installs distcc")
    port, log = free_port(), tmp_path / "distccd.log"
    command = ["distccd", "--daemon", "--no-detach", "--port", str(port), "--listen", "127.0.0.1"]
    command += ["--allow", "127.0.0.1", "--log-stderr", "--log-level", "info", "--jobs", "2"]
    with log.open("w") as stream:
        daemon = subprocess.Popen(command, stderr=stream, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while "listening on" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        yield f"127.0.0.1:{port}/2", log
    finally:
        os.killpg(daemon.pid, 15)
        daemon.wait(timeout=10)


def test_distcc_compiles_on_a_distccd(main_job: MainJob, distccd: tuple[str, Path]) -> None:
    hosts, daemon_log = distccd
    build = main_job.cold.builds["kunit.kunitconfig"][0].parent
    # The framework's objects and the image go; make compiles those objects again, through distcc, and relinks.
    removed = sorted(path.relative_to(build) for path in (build / "lib" / "kunit").glob("*.o"))
    assert removed
    for path in removed:
        (build / path).unlink()
    (build / "vmlinux").unlink()
    cache = f"--kunit-cache-dir={main_job.root / 'cache-a'}"
    again = run(main_job.root, "distcc", FRAMEWORK, cache, "--kunit-wrapper=distcc", env={"DISTCC_HOSTS": hosts})
    assert again.outcomes == {key: value for key, value in main_job.alone.items() if "kunit.kunitconfig" in key}
    log = (build / "build.log").read_text()
    assert f"distcc in front of gcc (DISTCC_HOSTS={hosts})" in log
    # The wrapper changed from ccache to distcc and Kbuild's commands did not: only what was removed is compiled
    # again (and what every link compiles, init/version-timestamp.o), not the whole kernel.
    recompiled = re.findall(r"^\s+CC\s+(\S+\.o)$", log, re.MULTILINE)
    assert len(recompiled) <= len(removed) + 3, recompiled
    served = re.findall(r"COMPILE_OK .* (\S+\.c)$", daemon_log.read_text(), re.MULTILINE)
    compiled = {Path(source).name for source in served}
    tree = Path(re.findall(r"^# pytest-kunit build of (\S+) into", (build / "build.log").read_text(), re.M)[0])
    # Objects with a C file of their own (kunit.o is linked from the others).
    sources = {f"{path.stem}.c" for path in removed if (tree / path.with_suffix(".c")).is_file()}
    assert sources and sources <= compiled, daemon_log.read_text()
