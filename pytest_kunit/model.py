"""The values every stage passes along: a case's name, the run's settings, a kernel built, the run's figures.

Every other module of the package may import this one; it imports nothing of the package but the option values
(options.py), the architecture records (arch.py) and what a kernel tree offers (versions.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .arch import Arch
from .options import DEFAULT_MAKE_TIMEOUT, Accel, FilterAction, Isolate, Wrapper
from .versions import TreeFeatures

CaseId = tuple[str, str]  # (suite, case)
Attributes = tuple[tuple[str, str], ...]  # a case's KUnit attributes (6.6+), (name, value) in the kernel's order
Durations = dict[str, dict[str, float]]  # kernel key -> suite -> seconds


def kernel_key(fragment: str, arch: str) -> str:
    """The key of one architecture's kernel of a fragment in a run over several (--kunit-arch a,b): the node id
    pytest gives that architecture's collector (`<fragment node id>::<arch>`), so that a process given node ids only
    (the xdist controller, the image service) keys kernels as the collecting processes do."""
    return f"{fragment}::{arch}"


@dataclass(frozen=True)
class Settings:
    """The settings of a run, resolved from its options (settings.py)."""

    enabled: bool
    kernel_src: Path | None  # None: the tree each fragment lies in, else the packaged tarball
    patch_dirs: tuple[Path, ...] | None  # None: the default series on the packaged tarball, nothing elsewhere
    cache_dir: Path
    jobs: int
    timeout: int
    boot_timeout: float | None  # None: derived for each boot from its number of cases
    accel: Accel
    raw: bool
    isolate: Isolate
    reboot_after_crash: bool
    qemu: str | None
    arch: str  # the first of `arches`
    wrapper: Wrapper = Wrapper.AUTO
    sanitize: tuple[str, ...] = ()  # names from sanitizers.py, in its order
    kcidb: Path | None = None  # where to write the KCIDB report; None: no report
    kcidb_origin: str = "pytest_kunit"
    coverage: Path | None = None  # where the coverage report goes; None: no coverage
    share_kernels: bool = False  # one union kernel per tree for the run's fragments (sharing.py)
    reuse_kernels: bool = True  # a kernel built before serves a fragment it provably covers (reuse.py)
    cache_max_age: int = 30  # days a big cache entry may go unused before a run evicts it (0: never)
    cache_keep_consoles: int = 20  # runs whose consoles the cache keeps (0: all)
    arches: tuple[str, ...] = ()  # every architecture the run builds for (empty: `arch` alone)
    kconfig_add: tuple[str, ...] = ()  # kunitconfig lines added to every fragment (checked: they parse)
    make_options: tuple[str, ...] = ()  # more words for every make run of a build
    kernel_args: tuple[str, ...] = ()  # more words for every boot's kernel command line, after ours
    qemu_args: tuple[str, ...] = ()  # more words for every QEMU command, after ours
    cross_compile: str | None = None  # the CROSS_COMPILE prefix instead of the architecture's; None: its own
    replay: Path | None = None  # a saved console read instead of building and booting; STDIN: read from stdin
    modules: bool = False  # --kunit-modules: tristate suites built as modules, loaded by the initramfs's /init
    keep_guest: bool = False  # --kunit-keep-guest: module batches go to a guest kept up between runs (kept.py)
    kunit_json: Path | None = None  # where to write the results in kunit.py's --json shape; None: nowhere
    alltests: bool = False  # --kunit-alltests: the tree's all_tests.config collected (fragments/alltests.py)
    filter_action: FilterAction = FilterAction.DESELECT  # what becomes of the cases a run does not select
    make_timeout: int = DEFAULT_MAKE_TIMEOUT  # seconds one make run may take; 0: no deadline

    @property
    def matrix(self) -> tuple[str, ...]:
        """The architectures of a run over several, each case collected once per architecture; () for one."""
        return self.arches if len(self.arches) > 1 else ()


STDIN = Path("-")  # --kunit-replay -


@dataclass(frozen=True)
class BuildResult:
    image: Path
    image_digest: str
    build_dir: Path
    ran_make: bool
    seconds: float
    log: Path
    note: str = ""  # how it was built (link-only) and what the compiler wrapper did (ccache's hits): the "built" line


@dataclass(frozen=True)
class SuiteModule:
    """A loadable module of a --kunit-modules build: its file, the modules it needs, the suites it registers."""

    name: str  # the module's name (.modinfo's name=, what `depends=` lists)
    path: str  # the .ko, relative to the build directory
    depends: tuple[str, ...]
    suites: tuple[tuple[str, tuple[str, ...]], ...]  # each suite's name and its cases' names, in table order


@dataclass(frozen=True)
class Kernel:
    """One built image and the cases it holds, in the order the kernel runs them."""

    key: str  # the kunitconfig file's node id: batches never mix kernels
    build: BuildResult
    arch: Arch
    features: TreeFeatures
    tree: Path
    cases: tuple[CaseId, ...]
    attributes: Mapping[CaseId, Attributes] = field(default_factory=dict)  # from a kunit.action=list_attr boot
    # Suites the list boot named with no case in this kernel (each case needs an option it lacks): reported skipped.
    empty_suites: tuple[str, ...] = ()
    boot_args: tuple[str, ...] = ()  # on every boot of this image (its sanitizers' own, its /init's)
    initrd: Path | None = None  # the initramfs whose /init runs after KUnit (initramfs.py)
    # The suites this fragment holds when its image is a kernel shared with other fragments (sharing.py): only these
    # are collected, and every boot's filter leaves the others out. None: every suite of the image is its own.
    suites: frozenset[str] | None = None
    # --kunit-modules: the build's modules, in the order /init loads them (each after those it needs); their suites'
    # cases come after the built-in ones in `cases`, as the guest runs them.
    modules: tuple[SuiteModule, ...] = ()


@dataclass(frozen=True)
class BuiltKernel:
    """What a session knows of one fragment's kernel: its checkout and its build (sent by xdist workers as a dict)."""

    key: str  # the fragment's node id
    tree_key: str
    tree: str  # which tree, which patches, why
    patchset_hash: str
    image_digest: str
    arch: str
    config: str  # the whole fragment built: the architecture's lines, the file's, the hooks'
    seconds: float | None  # None when this run found the build made already


@dataclass
class Stats:
    builds: int = 0
    build_seconds: float = 0.0
    boots: int = 0
    boot_seconds: float = 0.0
    kept_batches: int = 0  # batches run on a guest kept up from before (kept.py), no boot of their own
    reruns: int = 0  # cases run again in a fresh guest after an earlier crash or a signal from outside
    fetches: int = 0  # kernel images fetched from the xdist controller (image_service.py)
    fetched_bytes: int = 0
    filters: list[str] = field(default_factory=list)

    def merge(self, other: Mapping[str, float]) -> None:
        """Add a worker's figures (its `asdict` without the filters, as a worker hands it back: protocol.py)."""
        self.builds += int(other.get("builds", 0))
        self.build_seconds += other.get("build_seconds", 0.0)
        self.boots += int(other.get("boots", 0))
        self.boot_seconds += other.get("boot_seconds", 0.0)
        self.kept_batches += int(other.get("kept_batches", 0))
        self.reruns += int(other.get("reruns", 0))
        self.fetches += int(other.get("fetches", 0))
        self.fetched_bytes += int(other.get("fetched_bytes", 0))
