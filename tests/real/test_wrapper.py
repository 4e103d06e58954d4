"""The real tier for compiler wrappers: the tier's x86_64 kernel, built through ccache (the default wrapper, installed
by the set-up) into the tier's own ccache, is built again from a second copy of the tree elsewhere, into an empty
pytest-kunit cache, and hits; the build key ignores the wrapper; distcc compiles an edit on a distccd of its own on
localhost.

Builds this module adds to command two: the second copy's build (every compile a ccache hit) and one incremental
build (one edited file) through distcc. The second cache starts from the tier's extracted tree (hard links: builds
never write into a tree), so nothing is extracted again."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import KERNELS, Kunit, Run, link_tier_trees, tier_env

pytestmark = [pytest.mark.real("x86_64"), pytest.mark.xdist_group("x86_64")]

EDITED = "lib/kunit/kunit-example-test.c"
# The tier's shared kernel (the framework fragment and the out-of-tree suites), built from the same fragments; the
# fault suite's hang (two minutes) is left out of the boots, which only the framework's verdicts are compared from.
SHARED = (*KERNELS["x86_64"].args, "-k", "not faults")
_BUILT = re.compile(r"built (\S+) in [\d.]+ s \(log: ([^;)]*)(?:; ccache: (\d+) of (\d+) compiles hit)?\)")


def build_logs(run: Run) -> dict[str, Path]:
    """The build log of each kernel the run built, by what the "built" line names it."""
    return {match[1]: Path(match[2]) for match in _BUILT.finditer(run.stdout)}


def ccache_counts() -> tuple[int, int]:
    """(hits, misses) from ccache's own statistics, read here rather than from what pytest-kunit prints: from the
    ccache the tier's runs use, asked with their environment rather than assumed to be in a directory."""
    stats = subprocess.run(["ccache", "--print-stats"], env=tier_env(), capture_output=True, text=True)
    counters = dict(line.split("\t", 1) for line in stats.stdout.splitlines() if "\t" in line)
    hits = int(counters["direct_cache_hit"]) + int(counters["preprocessed_cache_hit"])
    return hits, int(counters["cache_miss"])


@dataclass
class Warm:
    build_dir: Path  # the tier's shared kernel's
    outcomes: dict[str, str]  # the framework fragment's cases in it
    root: Path


@pytest.fixture
def warm(kunit: Kunit, tmp_path: Path) -> Warm:
    kunit.kernel("x86_64")
    framework = kunit.run(SHARED[1])
    served = re.search(r"runs in the kernel built for .* \((\S+)\): \d+ suites of its own", framework.stdout)
    assert framework.outcomes and served, framework.report()
    return Warm(Path(served[1]), framework.outcomes, tmp_path)


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


@dataclass
class SecondCopy:
    run: Run
    cache: Path
    hits: int
    misses: int
    ccache_log: Path


def second_copy(kunit: Kunit, root: Path) -> SecondCopy:
    """The tier's shared kernel built again, once a session, from a second copy of the tree at another path and
    depth (all ccache could tell apart), into an empty pytest-kunit cache; with the ccache hits and misses it
    counted, from ccache's own statistics."""
    if "second-copy" not in kunit.tier.memo:
        cache = link_tier_trees(root / "elsewhere" / "deeper" / "cache-b")
        before = ccache_counts()
        log = root / "again.ccache.log"
        run = kunit.run(
            f"--kunit-cache-dir={cache}", "--kunit-wrapper=ccache", *SHARED, env={"CCACHE_LOGFILE": str(log)}
        )
        after = ccache_counts()
        kunit.tier.memo["second-copy"] = SecondCopy(run, cache, after[0] - before[0], after[1] - before[1], log)
    copy = kunit.tier.memo["second-copy"]
    assert isinstance(copy, SecondCopy)
    return copy


def test_the_tier_s_kernel_is_built_through_ccache(warm: Warm) -> None:
    log = warm.build_dir / "build.log"
    assert "ccache in front of gcc" in log.read_text()
    assert_file_names_as_unwrapped(warm.build_dir / "vmlinux")


def test_a_second_checkout_with_a_warm_ccache_hits(warm: Warm, kunit: Kunit) -> None:
    copy = second_copy(kunit, warm.root)
    again, hits, misses = copy.run, copy.hits, copy.misses
    assert "kernel builds: 1 " in again.stdout, again.report()
    assert {name: outcome for name, outcome in again.outcomes.items() if name in warm.outcomes} == warm.outcomes
    (log,) = build_logs(again).values()
    # Every object of the kernel and its host tools compiled again (hundreds), and the kernel's objects hit (were the
    # compiles naming either tree, nearly all would miss). Host tools built from inside the tree (objtool) and
    # Kbuild's probes miss; so do a handful of kernel objects: one compiled from a generated file that names the tree
    # (consolemap_deftbl.c), and the odd object ccache did not record in the cold build (measured: 3 of 1,109).
    missed = missed_objects(copy.ccache_log)
    kernel_misses = [path for path in missed if not re.search(r"(^|/)(scripts|tools|\.tmp_\d+)/|^/dev/null|^-$", path)]
    assert hits > 500 and len(kernel_misses) <= 0.01 * hits, (hits, misses, kernel_misses, log)
    # What the "built" line says (make's compiles, not syncconfig's few host tools) agrees with ccache's own figures.
    (said,) = _BUILT.finditer(again.stdout)
    assert said[3] is not None, said[0]
    said_hits, said_compiles = int(said[3]), int(said[4])
    assert 500 < said_hits <= hits and said_compiles - said_hits <= misses, (said[0], hits, misses)
    assert_file_names_as_unwrapped(log.parent / "vmlinux")
    print(f"    second checkout: {hits} hits, {misses} misses, of which kernel objects {kernel_misses}")


def test_the_build_key_ignores_the_wrapper(warm: Warm, kunit: Kunit) -> None:
    """The kernel built through ccache is the one a run without a wrapper (or another wrapper) wants."""
    unwrapped = kunit.run("--kunit-wrapper=none", *SHARED)
    assert "kernel builds: 0 " in unwrapped.stdout, unwrapped.report()
    assert {name: outcome for name, outcome in unwrapped.outcomes.items() if name in warm.outcomes} == warm.outcomes


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


def test_distcc_compiles_on_a_distccd(warm: Warm, kunit: Kunit, distccd: tuple[str, Path]) -> None:
    hosts, daemon_log = distccd
    cache = second_copy(kunit, warm.root).cache
    # The copy of the tree the warm kernel was built from (Kbuild's `source` link in its build directory names it):
    # the tier's cache may hold trees of other series too.
    tree = cache / "src" / Path(os.readlink(warm.build_dir / "source")).name
    # An edit as an editor saves one: a new file, so the hard link to the tier's tree is broken, not written.
    source = tree / EDITED
    text = source.read_text()
    source.unlink()
    source.write_text(text + "/* edited */\n")
    # No fallback: had distcc compiled locally after all, the build would fail instead of passing unseen.
    env = {"DISTCC_HOSTS": hosts, "DISTCC_FALLBACK": "0"}
    again = kunit.run(f"--kunit-cache-dir={cache}", "--kunit-wrapper=distcc", *SHARED, env=env)
    assert {name: outcome for name, outcome in again.outcomes.items() if name in warm.outcomes} == warm.outcomes
    (log,) = build_logs(again).values()
    text = log.read_text()
    assert f"distcc in front of gcc (DISTCC_HOSTS={hosts})" in text
    # The wrapper changed from ccache to distcc and Kbuild's commands did not: the edited file is compiled again
    # (and what every link compiles, init/version-timestamp.o), not the whole kernel.
    recompiled = re.findall(r"^\s+CC\s+(\S+\.o)$", text, re.MULTILINE)
    assert "lib/kunit/kunit-example-test.o" in recompiled and len(recompiled) <= 3, recompiled
    served = re.findall(r"COMPILE_OK .* (\S+\.c)$", daemon_log.read_text(), re.MULTILINE)
    assert any(path.endswith(EDITED) for path in served), daemon_log.read_text()
