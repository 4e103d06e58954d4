"""The real tier for compiler wrappers: a cold build of a second checkout of the tree, elsewhere, into an empty
pytest-kunit cache hits a warm ccache; the build key ignores the wrapper; distcc compiles on a distccd of its own on
localhost.

Builds this module adds to CI: one cold build of the framework fragment through an empty ccache (it warms ccache),
one build that hits ccache, and one incremental build (one edited file) through distcc. The first cache and the
second checkout start from the default cache's extracted tree (hard links: builds never write into a tree), so
nothing is extracted again."""

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

from pytest_kunit.options import DEFAULT_TARBALL, default_patch_dirs
from pytest_kunit.tree import prepare

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORK = "testsuites/kunit.kunitconfig"
EDITED = "lib/kunit/kunit-example-test.c"
_BUILT = re.compile(r"built (\S+) in [\d.]+ s \(log: ([^;)]*)(?:; ccache: (\d+) of (\d+) compiles hit)?\)")


@dataclass
class Run:
    process: subprocess.CompletedProcess[str]
    outcomes: dict[str, str]  # JUnit classname::name -> outcome
    logs: dict[str, Path]  # fragment file name -> build log, for the fragments this run built

    def report(self) -> str:
        return self.process.stdout[-6000:] + self.process.stderr[-3000:]


def run(tmp_path: Path, name: str, *args: str, env: dict[str, str] | None = None) -> Run:
    junit = tmp_path / f"{name}.xml"
    started = time.monotonic()
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", f"--junitxml={junit}", FRAMEWORK, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
        env=os.environ | (env or {}),
    )
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
            outcomes[f"{case.get('classname')}::{case.get('name')}"] = outcome
    # What each build cost, for docs/performance.md (seen with -s, and kept in NAME.out beside the caches; never
    # asserted: timings are not verdicts).
    cost = f"{name}: {time.monotonic() - started:.1f} s; load {os.getloadavg()[0]:.1f}"
    print("\n    ".join([cost, *(match[0] for match in _BUILT.finditer(process.stdout))]))
    (tmp_path / f"{name}.out").write_text(f"{cost}\n{process.stdout}{process.stderr}")
    return Run(process, outcomes, {match[1]: Path(match[2]) for match in _BUILT.finditer(process.stdout)})


def ccache_counts(ccache_dir: Path) -> tuple[int, int]:
    """(hits, misses) from ccache's own statistics, read here rather than from what pytest-kunit prints."""
    stats = subprocess.run(
        ["ccache", "--print-stats"], env=os.environ | {"CCACHE_DIR": str(ccache_dir)}, capture_output=True, text=True
    )
    counters = dict(line.split("\t", 1) for line in stats.stdout.splitlines() if "\t" in line)
    hits = int(counters["direct_cache_hit"]) + int(counters["preprocessed_cache_hit"])
    return hits, int(counters["cache_miss"])


def new_cache(cache: Path) -> Path:
    """An empty pytest-kunit cache but for the default cache's extracted, patched tree, hard-linked."""
    default_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-kunit"
    tree = prepare(DEFAULT_TARBALL, default_patch_dirs(), default_cache).path  # there already: the run alone made it
    (cache / "src").mkdir(parents=True)
    subprocess.run(["cp", "-al", str(tree), str(cache / "src" / tree.name)], check=True)
    return cache


@dataclass
class Warm:
    alone: Run  # the fragment in the default cache, whatever wrapper built it there
    cold: Run  # the first build in cache-a, through an empty ccache
    root: Path  # holds cache-a, cache-b and ccache
    env: dict[str, str]


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Warm:
    root = tmp_path_factory.mktemp("wrapper")
    alone = run(root, "alone")  # built (or warm) in the default cache: the verdicts, and its tree to seed from
    assert alone.outcomes, alone.report()
    env = {"CCACHE_DIR": str(root / "ccache")}
    cache = new_cache(root / "cache-a")
    cold = run(root, "cold", f"--kunit-cache-dir={cache}", "--kunit-wrapper=ccache", env=env)
    assert cold.outcomes == alone.outcomes, cold.report()
    return Warm(alone, cold, root, env)


def assert_file_names_as_unwrapped(image: Path) -> None:
    """KUnit's and BUG()'s file names (__FILE__) are the tree's `lib/...`, not the paths the wrapper and ccache's
    base_dir hand the compiler (through the build directory's link to the tree, S/lib/..., or ../../src/KEY/lib/...)."""
    data = image.read_bytes()
    assert b"\0lib/kunit/kunit-test.c\0" in data
    assert b"../src/" not in data and b"\0S/lib/" not in data


def missed_objects(ccache_log: Path) -> list[str]:
    """The objects ccache's log says it compiled for want of a hit (its lines carry the pid of their compile)."""
    objects: dict[str, str] = {}
    missed = []
    for line in ccache_log.read_text(errors="replace").splitlines():
        match = re.match(r"\[\S+ (\d+)\] (Object file: (.*)|Result: cache_miss)$", line)
        if match and match[3] is not None:
            objects[match[1]] = match[3]
        elif match:
            missed.append(objects.get(match[1], "?"))
    return missed


def test_a_second_checkout_with_a_warm_ccache_hits(warm: Warm) -> None:
    (log,) = warm.cold.logs.values()
    assert "ccache in front of gcc" in log.read_text()
    assert_file_names_as_unwrapped(log.parent / "vmlinux")
    # A second checkout of the tree somewhere else (another path, another depth: all that ccache could tell apart),
    # built as a user's tree into another empty cache.
    (tree,) = (warm.root / "cache-a" / "src").iterdir()
    checkout = warm.root / "elsewhere" / "deeper" / "linux-2"
    checkout.parent.mkdir(parents=True)
    subprocess.run(["cp", "-al", str(tree), str(checkout)], check=True)
    cache, ccache_dir = warm.root / "cache-b", Path(warm.env["CCACHE_DIR"])
    before = ccache_counts(ccache_dir)
    env = warm.env | {"CCACHE_LOGFILE": str(warm.root / "again.ccache.log")}
    options = (f"--kunit-cache-dir={cache}", f"--kunit-kernel-src={checkout}", "--kunit-wrapper=ccache")
    again = run(warm.root, "again", *options, env=env)
    assert again.outcomes == warm.alone.outcomes, again.report()
    after = ccache_counts(ccache_dir)
    hits, misses = after[0] - before[0], after[1] - before[1]
    (log,) = again.logs.values()
    # Every object of the kernel and its host tools compiled again (hundreds), and the kernel's objects hit (were the
    # compiles naming either tree, nearly all would miss). Host tools built from inside the tree (objtool) and
    # Kbuild's probes miss; so do a handful of kernel objects: one compiled from a generated file that names the tree
    # (consolemap_deftbl.c), and the odd object ccache did not record in the cold build (measured: 3 of 1,109).
    missed = missed_objects(warm.root / "again.ccache.log")
    kernel_misses = [path for path in missed if not re.search(r"(^|/)(scripts|tools|\.tmp_\d+)/|^/dev/null|^-$", path)]
    assert hits > 500 and len(kernel_misses) <= 0.01 * hits, (hits, misses, kernel_misses, log)
    # What the "built" line says (make's compiles, not syncconfig's few host tools) agrees with ccache's own figures.
    (said,) = _BUILT.finditer(again.process.stdout)
    assert said[3] is not None, said[0]
    said_hits, said_compiles = int(said[3]), int(said[4])
    assert 500 < said_hits <= hits and said_compiles - said_hits <= misses, (said[0], hits, misses)
    assert_file_names_as_unwrapped(log.parent / "vmlinux")
    print(f"    second checkout: {hits} hits, {misses} misses, of which kernel objects {kernel_misses}")


def test_the_build_key_ignores_the_wrapper(warm: Warm) -> None:
    """The kernel cache-a built through ccache is the one a run without a wrapper (or another wrapper) wants."""
    unwrapped = run(warm.root, "unwrapped", f"--kunit-cache-dir={warm.root / 'cache-a'}", "--kunit-wrapper=none")
    assert unwrapped.outcomes == warm.alone.outcomes, unwrapped.report()
    assert "kernel builds: 0 " in unwrapped.process.stdout, unwrapped.report()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def distccd(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """Debian's distccd on a port of its own, for 127.0.0.1 only; yields DISTCC_HOSTS and its log."""
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
        # distcc's own name for this machine ("localhost") compiles locally without a daemon: the address does not.
        yield f"127.0.0.1:{port}/2", log
    finally:
        os.killpg(daemon.pid, 15)  # distccd and the children it forked, all in the session it leads
        daemon.wait(timeout=10)


def test_distcc_compiles_on_a_distccd(warm: Warm, distccd: tuple[str, Path]) -> None:
    hosts, daemon_log = distccd
    cache = warm.root / "cache-a"
    (tree,) = (cache / "src").iterdir()
    # An edit as an editor saves one: a new file, so the hard link to the default cache's tree is broken, not written.
    source = tree / EDITED
    text = source.read_text()
    source.unlink()
    source.write_text(text + "/* edited */\n")
    # No fallback: had distcc compiled locally after all, the build would fail instead of passing unseen.
    env = {"DISTCC_HOSTS": hosts, "DISTCC_FALLBACK": "0"}
    again = run(warm.root, "distcc", f"--kunit-cache-dir={cache}", "--kunit-wrapper=distcc", env=env)
    assert again.outcomes == warm.alone.outcomes, again.report()
    (log,) = again.logs.values()
    text = log.read_text()
    assert f"distcc in front of gcc (DISTCC_HOSTS={hosts})" in text
    # The wrapper changed from ccache to distcc and Kbuild's commands did not: the edited file is compiled again
    # (and what every link compiles, init/version-timestamp.o), not the whole kernel.
    recompiled = re.findall(r"^\s+CC\s+(\S+\.o)$", text, re.MULTILINE)
    assert "lib/kunit/kunit-example-test.o" in recompiled and len(recompiled) <= 3, recompiled
    served = re.findall(r"COMPILE_OK .* (\S+\.c)$", daemon_log.read_text(), re.MULTILINE)
    assert any(path.endswith(EDITED) for path in served), daemon_log.read_text()
