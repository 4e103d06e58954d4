"""The real tier's kernels: few, each built once and serving many tests, as the plugin serves a user.

Every test runs pytest in a subprocess exactly as a user would. The tier keeps a cache of its own (TIER_HOME, given to
the subprocesses as XDG_CACHE_HOME: pytest-kunit's cache and ccache's), never the user's: its verdicts do not depend
on what else the user built, and a rerun finds the tier's kernels warm. The tests after a kernel's build run their
fragments as a user types them, and pytest-kunit's own reuse (reuse.py) or the same build directory serves them with
no build.

When a session collects real tests beside the fast tiers (command two), the real ones run last and a builder thread
starts the kernels they name (`pytest.mark.real("x86_64", ...)`) at once, one after another in KERNELS' order: the
fast tiers and the first kernels' boots run while the next kernels compile, on the cores a boot leaves idle. A test
that needs a kernel still building waits for it and shows that build's progress lines (`Tier.kernel`). Under xdist or
for a single test nothing is built ahead: the first test that needs a kernel builds it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The environment as the session began. The fast tiers' tests change os.environ for a while (a PATH of fake
# compilers or a counting find, a PATH with almost nothing on it), and the builder thread starts kernel builds while
# they run: those must see the machine's own tools.
SESSION_ENV = dict(os.environ)
TIER_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-kunit-real-tier"
TIER_CACHE = TIER_HOME / "pytest-kunit"

FRAMEWORK = "testsuites/kunit.kunitconfig"
FAULTS = "testsuites/faults/faults.kunitconfig"
LITTLE_32, BIG_ENDIAN = "i386", "powerpc"  # the "arches" kernels: 32-bit longs and pointers; big-endian memory
MISC = "testsuites/misc-example/misc-example.kunitconfig"
NAMES = "testsuites/names/names.kunitconfig"
DEBUG = "testsuites/kunit-debug.kunitconfig"
SANITIZE = "testsuites/sanitize/sanitize.kunitconfig"

TARBALL_6_12 = Path("/usr/src/linux-source-6.12.tar.xz")
TREE_6_12 = TIER_HOME / "trees" / "linux-source-6.12"
# 6.12's in-tree fragments (each a directory holding a .kunitconfig) that share the tier's one 6.12 kernel.
IN_TREE_6_12 = ("lib/kunit", "drivers/input/tests", "drivers/base/test", "fs/fat")
# A pytest-kunit cache of its own for 6.12: the only lib/kunit kernel in it is the one shared with drivers/input/tests,
# whatever the tier's own cache kept (a lib/kunit kernel of an earlier tier, which reuse would rightly prefer).
CACHE_6_12 = TIER_HOME / "cache-6.12"


def extract_6_12() -> None:
    """Debian's 6.12 tarball extracted once, where a developer keeps a tree (outside this project)."""
    if (TREE_6_12 / ".extracted").exists():
        return
    assert TARBALL_6_12.is_file(), f"{TARBALL_6_12} is missing: scripts/setup.sh installs linux-source-6.12"
    TREE_6_12.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(TREE_6_12)], check=True, env=SESSION_ENV)
    tar = ["tar", "-I", "xz -T0", "-xf", str(TARBALL_6_12), "-C", str(TREE_6_12.parent)]
    subprocess.run(tar, check=True, env=SESSION_ENV)
    (TREE_6_12 / ".extracted").write_text("")


def link_tier_trees(cache: Path) -> Path:
    """A pytest-kunit cache of its own but for the tier's extracted, patched trees, hard-linked (builds never write
    into a tree): nothing is extracted again."""
    (cache / "src").mkdir(parents=True, exist_ok=True)
    for tree in (TIER_CACHE / "src").iterdir():
        if tree.is_dir() and not (cache / "src" / tree.name).exists():
            subprocess.run(["cp", "-al", str(tree), str(cache / "src" / tree.name)], check=True, env=SESSION_ENV)
    return cache


@dataclass(frozen=True)
class TierKernel:
    """The pytest arguments that build one kernel (a shared kernel for several fragments, or one fragment's own),
    where they are typed, and what must exist first."""

    args: tuple[str, ...]
    cwd: Path = ROOT
    prepare: Callable[[], object] | None = None
    # Only when built: ccache's depend mode costs a cold compile about 7% (docs/performance.md) and none of these
    # kernels is compiled again, as the build key ignores the wrapper and the tier's cache keeps them; the x86_64
    # kernel is built through ccache, whose hits test_wrapper reads.
    wrapper: str = "none"


# In the order the builder builds them, and the real tests run: the main kernel first (the fast tiers run while it
# builds); then the instrumented kernel, whose tests are the longest (KASAN, kmemleak and GCOV boots on one core) and
# so run while the other kernels compile; UML's last, the cheapest to build, as no build overlaps the tests of the last
# kernel.
KERNELS: dict[str, TierKernel] = {
    "x86_64": TierKernel(("--kunit-share-kernels", FRAMEWORK, FAULTS, MISC, NAMES), wrapper="ccache"),
    # One instrumented kernel for the debug fragment, the sanitize suite (on the same lines) and coverage (every run
    # in it asks for GCOV): the series' patch 5 keeps the suites a filtered boot ran, which 6.1 freed under their
    # debugfs logs (a kmemleak report on every filtered boot), so a kmemleak kernel serves several fragments and -k.
    "instrumented": TierKernel(
        ("--kunit-share-kernels", f"--kunit-coverage={TIER_HOME / 'coverage'}", DEBUG, SANITIZE)
    ),
    "arm64": TierKernel(("--kunit-arch=arm64", "--kunit-share-kernels", FRAMEWORK, FAULTS)),
    # 6.12's lib/kunit shares its kernel with three more of the tree's own fragments, each a few objects more (the
    # input core's, the driver model's devm and FAT's tests): test_real_6_12 compares every fragment's verdicts in it,
    # case by case, with kunit.py's recorded from that fragment's own kernel.
    "6.12": TierKernel(
        (f"--kunit-cache-dir={CACHE_6_12}", "--kunit-share-kernels", *(f"{path}/" for path in IN_TREE_6_12)),
        cwd=TREE_6_12,
        prepare=extract_6_12,
    ),
    # Two more architectures in one run, as a user asks for them: 32-bit little-endian and big-endian guests, each
    # the framework fragment's own kernel (test_real_arches).
    "arches": TierKernel((f"--kunit-arch={LITTLE_32},{BIG_ENDIAN}", FRAMEWORK)),
    "um": TierKernel(("--kunit-arch=um", "--kunit-share-kernels", FRAMEWORK, FAULTS)),
    # The framework fragment in module mode on UML (its tristate suites modules /init loads): test_keep_guest runs
    # its module suites on fresh guests and on a guest kept up between runs, and compares them case by case.
    "modules": TierKernel(("--kunit-arch=um", "--kunit-modules", FRAMEWORK)),
    # The framework fragment on UML built for a kept guest that runs its built-in suites again (--kunit-keep-guest:
    # the series' kunit.autorun and debugfs run files): test_keep_guest_builtin_real compares its verdicts, fresh and
    # from a kept guest, case by case.
    "served": TierKernel(("--kunit-arch=um", "--kunit-keep-guest", FRAMEWORK)),
}


# What a kernel developer's shell may export that changes what the tier's kernels are (flags, compiler), what a run
# says (pytest-kunit notes the variables it overrides) or which ccache serves it (CCACHE_DIR, CCACHE_CONFIGPATH,
# CCACHE_DISABLE, ...): the tier's runs get a clean shell's, and ccache's directory is the tier's own, whatever the
# shell or the user's ccache.conf names.
DEVELOPER_SHELL = ("ARCH", "CROSS_COMPILE", "O", "KBUILD_OUTPUT", "KCFLAGS", "KCPPFLAGS", "KAFLAGS", "LLVM", "LLVM_IAS")


def tier_env(**extra: str) -> dict[str, str]:
    clean = {
        name: value
        for name, value in SESSION_ENV.items()
        if name not in DEVELOPER_SHELL and not name.startswith("CCACHE_")
    }
    return clean | {"XDG_CACHE_HOME": str(TIER_HOME), "CCACHE_DIR": str(TIER_HOME / "ccache")} | extra


@dataclass
class Run:
    process: subprocess.CompletedProcess[str]
    outcomes: dict[str, str]  # suite.case -> passed, failure, error, skipped (from JUnit XML)
    seconds: float
    junit: Path

    @property
    def stdout(self) -> str:
        return self.process.stdout

    @property
    def returncode(self) -> int:
        return self.process.returncode

    def report(self) -> str:
        return self.process.stdout[-6000:] + self.process.stderr[-3000:]


def junit_outcomes(junit: Path, arch: str | None = None) -> dict[str, str]:
    """suite.case -> outcome from JUnit XML; with `arch`, only the cases whose `kunit_arch` property names it (a run
    of several architectures)."""
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            if arch is not None and arch not in {
                p.get("value") for p in case.iter("property") if p.get("name") == "kunit_arch"
            }:
                continue
            suite = case.get("classname", "").rsplit(".", 1)[-1]
            outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
            outcomes[f"{suite}.{case.get('name')}"] = outcome
    return outcomes


def run_pytest_kunit(
    show: Callable[[str], None] | None,
    junit: Path,
    *args: str,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    timeout: float = 3600,
    started: Callable[[subprocess.Popen[str]], None] | None = None,
) -> Run:
    """`pytest --kunit ARGS` in a subprocess, in the tier's cache; each progress line (`kunit: ...`) goes to `show` as
    it comes, so a person watching knows what a build waits for. The child leads a process group of its own, which a
    watchdog (or the builder, when the session ends) stops whole: make and its compilers with it."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", "-v", f"--junitxml={junit}", *args]
    begun = time.monotonic()
    lines: list[str] = []
    env = env or tier_env()
    with subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    ) as child:
        if started is not None:
            started(child)
        watchdog = threading.Timer(timeout, stop_group, (child,))  # a child that hangs silently is ended too
        watchdog.start()
        try:
            assert child.stdout is not None
            for line in child.stdout:
                lines.append(line)
                if line.startswith("kunit: ") and show is not None:
                    show(f"    [{Path(args[-1]).name if args else 'pytest'}] {line.rstrip()}")
        finally:
            watchdog.cancel()
        child.wait()
    process = subprocess.CompletedProcess(command, child.returncode, "".join(lines), "")
    return Run(process, junit_outcomes(junit), time.monotonic() - begun, junit)


def stop_group(child: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)


def shown_by(capsys: pytest.CaptureFixture[str] | None) -> Callable[[str], None] | None:
    """Lines printed on the terminal past pytest's capture, or nowhere without a capsys."""
    if capsys is None:
        return None

    def show(line: str) -> None:
        with capsys.disabled():
            print(line, flush=True)

    return show


def build_kernel(
    name: str,
    junit: Path,
    show: Callable[[str], None] | None,
    started: Callable[[subprocess.Popen[str]], None] | None = None,
) -> Run:
    """Build (or find warm) and list the kernel `name` of KERNELS: the run of `--collect-only` in its place."""
    kernel = KERNELS[name]
    if kernel.prepare is not None:
        kernel.prepare()
    args = ("--collect-only", "-q", f"--kunit-wrapper={kernel.wrapper}", *kernel.args)
    return run_pytest_kunit(show, junit, *args, cwd=kernel.cwd, started=started)


class Builder(threading.Thread):
    """Builds the session's kernels ahead of the tests, one after another; each kernel's lines kept for the test
    that waits for it."""

    def __init__(self, names: list[str], scratch: Path) -> None:
        super().__init__(name="real-tier-builder", daemon=True)
        self.names = names
        self.scratch = scratch
        self.lines: dict[str, list[str]] = {name: [] for name in names}
        self.runs: dict[str, Run | BaseException] = {}
        self.done = {name: threading.Event() for name in names}
        self.child: subprocess.Popen[str] | None = None
        self.stopping = False
        self.spans: dict[str, tuple[float, float]] = {}  # each kernel's start and end, monotonic seconds

    def run(self) -> None:
        for name in self.names:
            if self.stopping:
                break
            begun = time.monotonic()
            try:
                self.runs[name] = build_kernel(
                    name,
                    self.scratch / f"kernel-{name}.xml",
                    self.lines[name].append,
                    started=self.keep_child,
                )
            except BaseException as error:  # the waiting test reports it
                self.runs[name] = error
            finally:
                self.spans[name] = (begun, time.monotonic())
                self.done[name].set()

    def keep_child(self, child: subprocess.Popen[str]) -> None:
        self.child = child

    def stop(self) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            stop_group(self.child)

    def wait_for(self, name: str, show: Callable[[str], None] | None) -> Run:
        """The builder's run of `name`, once done; its progress lines shown as they come, and first which kernel it
        is still building, if another."""
        shown = 0
        before = self.names[: self.names.index(name)]
        ahead = [other for other in before if not self.done[other].is_set()]
        if show is not None and ahead:
            show(f"    [tier] {name}: the tier's builder builds {', '.join(ahead)} first")
        while not self.done[name].wait(2):
            shown = self.show_new(name, shown, show)
        self.show_new(name, shown, show)
        outcome = self.runs[name]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def show_new(self, name: str, shown: int, show: Callable[[str], None] | None) -> int:
        lines = self.lines[name]
        if show is not None:
            for line in lines[shown:]:
                show(line)
        return len(lines)


@dataclass
class Tier:
    """The session's kernels, each built (or found warm) once: ahead by the builder, or by the first test that asks."""

    scratch: Path
    builder: Builder | None = None
    begun: float = field(default_factory=time.monotonic)
    last_real_end: float = 0.0  # when the last real test ended, monotonic seconds
    built: dict[str, Run] = field(default_factory=dict)
    memo: dict[str, object] = field(default_factory=dict)  # what a module builds once a session on top of a kernel

    def kernel(self, name: str, capsys: pytest.CaptureFixture[str] | None = None) -> Run:
        if name not in self.built:
            show = shown_by(capsys)
            if self.builder is not None and name in self.builder.names:
                run = self.builder.wait_for(name, show)
            else:
                run = build_kernel(name, self.scratch / f"kernel-{name}.xml", show)
            assert run.returncode == 0, run.report()
            self.built[name] = run
        return self.built[name]


TIER_KEY = pytest.StashKey[Tier]()


def tier_kernels(item: pytest.Item) -> tuple[str, ...]:
    """The kernels a real test names: `pytest.mark.real("x86_64", ...)`."""
    marker = item.get_closest_marker("real")
    return tuple(marker.args) if marker is not None else ()


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    real = [item for item in items if item.get_closest_marker("real") is not None]
    if not real:
        return
    order = list(KERNELS)

    def last_kernel(item: pytest.Item) -> int:
        return max((order.index(name) for name in tier_kernels(item) if name in KERNELS), default=len(order))

    # The fast tiers first, then each real test once the last kernel it names is built (sorted is stable: a module's
    # own order stays).
    items[:] = [item for item in items if item.get_closest_marker("real") is None] + sorted(real, key=last_kernel)
    needed = {name for item in real for name in tier_kernels(item)}
    unknown = needed - set(KERNELS)
    if unknown:
        raise pytest.UsageError(f"real tests name kernels KERNELS lacks: {sorted(unknown)}")
    ahead = (
        len(real) > 1
        and not config.option.collectonly
        and not hasattr(config, "workerinput")
        and not getattr(config.option, "numprocesses", None)
    )
    TIER_HOME.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="session-", dir=TIER_HOME))  # the kernels' JUnit files, small
    tier = Tier(scratch)
    if ahead:
        tier.builder = Builder([name for name in KERNELS if name in needed], scratch)
        tier.builder.start()
    config.stash[TIER_KEY] = tier


def pytest_sessionfinish(session: pytest.Session) -> None:
    tier = session.config.stash.get(TIER_KEY, None)
    if tier is not None and tier.builder is not None:
        tier.builder.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    result = yield
    tier = item.config.stash.get(TIER_KEY, None)
    if tier is not None and item.get_closest_marker("real") is not None:
        tier.last_real_end = time.monotonic()
    return result


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Each kernel's build (or warm listing) seconds in the order built, with when the builder ran it (seconds from
    collection), and when the last real test ended: what command two's time is made of, and how much of it the
    builder's one-after-another kernels are."""
    tier = terminalreporter.config.stash.get(TIER_KEY, None)
    if tier is None or not tier.built:
        return
    spans = tier.builder.spans if tier.builder is not None else {}
    figures = []
    for name, run in tier.built.items():
        span = spans.get(name)
        when = f" (builder {span[0] - tier.begun:,.0f}-{span[1] - tier.begun:,.0f} s)" if span else ""
        figures.append(f"{name} {run.seconds:,.0f} s{when}")
    last = f"; last real test ended at {tier.last_real_end - tier.begun:,.0f} s" if spans else ""
    terminalreporter.write_line(f"real tier kernels (build or warm listing): {', '.join(figures)}{last}")


@pytest.fixture(scope="session")
def tier(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    TIER_HOME.mkdir(parents=True, exist_ok=True)
    yield request.config.stash.get(TIER_KEY, None) or Tier(tmp_path_factory.mktemp("tier"))


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
        show = shown_by(self.capsys)
        return run_pytest_kunit(show, junit, *args, cwd=cwd, env=tier_env(**(env or {})), timeout=timeout)


def instrumented_run(kunit: Kunit, name: str, *args: str) -> tuple[Run, Path]:
    """A run in the instrumented kernel with its coverage report (the directory), made once a session however many
    tests read it: each boot of that kernel (KASAN, lockdep, kmemleak and GCOV under TCG, on one core) takes minutes,
    most of them kmemleak's final scans, whatever number of cases it runs."""
    if name not in kunit.tier.memo:
        kunit.kernel("instrumented")
        output = kunit.tier.scratch / name
        kunit.tier.memo[name] = (kunit.run(*args, f"--kunit-coverage={output}"), output)
    kept = kunit.tier.memo[name]
    assert isinstance(kept, tuple)
    run, output = kept
    assert isinstance(run, Run) and isinstance(output, Path)
    return run, output


def debug_with_coverage(kunit: Kunit) -> tuple[Run, Path]:
    """The debug fragment's whole run (every case of it): the debug and coverage tests each read it."""
    return instrumented_run(kunit, "debug-coverage", DEBUG)


# The sanitize suite's cases (their names all begin so; the fragment's own name holds "sanitize", which -k would
# match in every case) and the example suite's, which run among them and must stay green.
SANITIZE_SELECTION = "sanitize_ or example"


def sanitize_selection(kunit: Kunit) -> tuple[Run, Path]:
    """The sanitize fragment with sanitizers, a selection of it (the sanitize and example suites): the debug tests
    read its reports, the coverage tests what a selection covers."""
    return instrumented_run(
        kunit, "sanitize-selection", SANITIZE, "--kunit-sanitize=kasan,ubsan", "-k", SANITIZE_SELECTION
    )


@pytest.fixture
def kunit(tier: Tier, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Kunit:
    return Kunit(tier, capsys, tmp_path)
