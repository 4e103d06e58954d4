"""How a session builds and lists one fragment's kernel: tree -> configuration -> build -> case list."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from .. import versions
from ..arch import Arch
from ..bundled import default_patch_dirs
from ..errors import ConfigError, KunitError
from ..findings import coverage, guest_init
from ..findings.sanitizers import kconfig_lines as sanitizer_kconfig
from ..findings.sanitizers import kernel_args as sanitizer_args
from ..findings.sanitizers import unsupported as sanitizers_unsupported
from ..guest import initramfs
from ..guest.listing import list_cases
from ..guest.runner import BootEdits, Runner
from ..host.cache import CaseList, load_case_list, save_case_list
from ..host.locking import cache_lock
from ..host.progress import Progress
from ..kbuild.case_locations import case_locations
from ..kbuild.modulefiles import built_modules
from ..kbuild.records import NotARecord
from ..kbuild.suitetable import Opaque, case_list_digest
from ..kernel.build import build
from ..kernel.build_request import BuildRequest, full_fragment
from ..kernel.kconfig import Fragment, parse_fragment, read_fragment
from ..kernel.makerun import honoured_variables
from ..kernel.out_of_tree import install, suite_dir_for
from ..kernel.tree import PreparedTree, enclosing_tree, patch_series, patchset_hash, prepare
from ..model import BuiltKernel, Kernel, Settings, Stats, SuiteModule


@dataclass(frozen=True)
class TreeChoice:
    """Which source a fragment is built from, with which patches, and why."""

    source: Path
    patch_dirs: tuple[Path, ...]
    reason: str


def _lines(value: object) -> list[str] | None:
    """A hook's result as text lines: a string's lines, or an iterable's strings; None if it is neither."""
    if isinstance(value, str):
        return value.splitlines()
    if isinstance(value, Iterable):
        lines = list(value)
        return lines if all(isinstance(line, str) for line in lines) else None
    return None


@dataclass
class KernelBuilder:
    """One session's builds: each fragment's tree, configuration and build, and its image's cases, once each."""

    config: pytest.Config
    settings: Settings
    arch: Arch  # the first of settings.arches's records, from the table the hooks and --kunit-arch-config completed
    # Every architecture the run builds for (--kunit-arch x86_64,arm64): the cases of each collected once per arch.
    arches: dict[str, Arch] = field(default_factory=dict)
    stats: Stats = field(default_factory=Stats)
    runner: Runner = field(init=False)
    _trees: dict[tuple[Path, tuple[Path, ...], bool], PreparedTree] = field(default_factory=dict)
    session: str = ""  # the run's id: xdist workers of one run share it, so they build once between them
    kernels: dict[str, BuiltKernel] = field(default_factory=dict)  # by fragment node id; xdist workers' too

    def __post_init__(self) -> None:
        sink = self._raw_sink() if self.settings.raw else None
        self.arches = self.arches or {self.arch.name: self.arch}
        self.runner = Runner(self.settings, self.stats, sink, self._boot_edits(), self._announce, self.session)

    def _boot_edits(self) -> BootEdits:
        """--kunit-kernel-args and --kunit-qemu-args, then the pytest_kunit_kernel_args and pytest_kunit_qemu_command
        hooks (which see the options' words, and may change them), as the runner calls them."""
        config, hook, settings = self.config, self.config.hook, self.settings

        def kernel_args(kernel: Kernel, args: list[str]) -> None:
            args.extend(settings.kernel_args)
            hook.pytest_kunit_kernel_args(config=config, kernel=kernel, args=args)

        def qemu_command(kernel: Kernel, command: list[str]) -> None:
            command.extend(settings.qemu_args)
            hook.pytest_kunit_qemu_command(config=config, kernel=kernel, command=command)

        return BootEdits(kernel_args, qemu_command)

    def _hook_kconfig(self, path: Path, arch: Arch) -> Fragment:
        """What the pytest_kunit_kconfig hooks add to the kernel built from `path` for `arch`."""
        lines: list[str] = []
        for added in self.config.hook.pytest_kunit_kconfig(config=self.config, fragment=path, arch=arch):
            if added is None:
                continue
            words = _lines(added)
            if words is None:
                raise ConfigError(
                    f"A pytest_kunit_kconfig hook returned {added!r} for {path}.",
                    "return kunitconfig lines: a string, a list of strings, or None.",
                )
            lines.extend(words)
        return parse_fragment("\n".join(lines), "pytest_kunit_kconfig hook")

    def _sanitizer_kconfig(self) -> Fragment:
        """--kunit-sanitize's options, each line's origin naming its sanitizer (so a dropped one is named)."""
        fragment = Fragment(())
        for name, lines in sanitizer_kconfig(self.settings.sanitize).items():
            fragment = fragment + parse_fragment("\n".join(lines), f"--kunit-sanitize {name}")
        return fragment

    def _announce(self, message: str) -> None:
        # In a log only: a terminal shows pytest's own progress while cases run.
        Progress(self.config).phase(message, terminal=False)

    def _added_kconfig(self) -> Fragment:
        """--kunit-kconfig-add's lines (checked when the option was read), each named by its place among them."""
        return parse_fragment("\n".join(self.settings.kconfig_add), "--kunit-kconfig-add")

    def make_options(self) -> tuple[str, ...]:
        """The words every make run of a build gets after ARCH= and CROSS_COMPILE=: the flags and compiler the shell
        exports (makerun.HONOURED), --kunit-make-options', then --kunit-cross-compile's prefix (the architecture record
        carries it too; here it keys the build)."""
        cross = self.settings.cross_compile
        own = (*honoured_variables(), *self.settings.make_options)
        return (*own, *(() if cross is None else (f"CROSS_COMPILE={cross}",)))

    def _coverage_kconfig(self) -> Fragment:
        if self.settings.coverage is None:
            return Fragment(())
        return parse_fragment("\n".join(coverage.KCONFIG), "--kunit-coverage")

    def _initramfs_why(self, after: guest_init.AfterKunit) -> str:
        if after.modules:
            return "--kunit-modules"
        return "--kunit-coverage" if after.gcov is not None else "kmemleak's final scan (the kernel has kmemleak)"

    @staticmethod
    def _suite_modules(build_dir: Path) -> tuple[SuiteModule, ...]:
        """The modules a --kunit-modules build made, read from its objects."""
        try:
            return built_modules(build_dir)
        except (Opaque, NotARecord, OSError) as error:
            raise KunitError(
                f"The suites of the modules built in {build_dir} cannot be read: {error}.",
                "run without --kunit-modules (a suite whose name or cases are set at run time cannot be listed "
                "before its module is loaded), or rebuild: delete that build directory.",
            ) from None

    def _raw_sink(self) -> Callable[[str], None]:
        def sink(line: str) -> None:
            # Looked up per line: the state is made before the terminal reporter is registered.
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"[guest] {line}")

        return sink

    def tree_choice(self, fragment: Path) -> TreeChoice:
        """--kunit-kernel-src if given; else the kernel tree the fragment lies in; else the packaged tarball.

        Our series is written for the packaged tarball: it is applied by default there and nowhere else.
        """
        settings = self.settings
        if settings.kernel_src is not None:
            source, reason = settings.kernel_src, "--kunit-kernel-src"
        else:
            inside = enclosing_tree(fragment)
            default = versions.DEFAULT_TARBALL
            source, reason = (inside, "the tree the fragment lies in") if inside else (default, "default")
        patches = settings.patch_dirs
        if patches is None:
            patches = default_patch_dirs() if source == versions.DEFAULT_TARBALL else ()
        return TreeChoice(source, patches, reason)

    def describe(self, choice: TreeChoice, arch: Arch | None = None) -> str:
        """Which tree, which patches, why, for which architecture (all the run's, when `arch` is None)."""
        series = patch_series(choice.patch_dirs)
        count = len(series.patches)
        noun = "patch" if count == 1 else "patches"
        patches = f"{count} {noun} from {', '.join(map(str, choice.patch_dirs))}" if count else "no patches"
        if series.without_diff:
            patches += f" (left out, holding no diff: {', '.join(path.name for path in series.without_diff)})"
        arches = arch.name if arch is not None else ",".join(self.arches)
        return f"kernel tree {choice.source} ({choice.reason}), {patches}, arch {arches}"

    def tree(self, choice: TreeChoice, writable: bool) -> PreparedTree:
        """The prepared tree, once per session; `writable` when out-of-tree suites must be placed into it."""
        key = (choice.source, choice.patch_dirs, writable)
        if key not in self._trees:
            cache_dir = self.settings.cache_dir
            phase = Progress(self.config).phase
            self._trees[key] = prepare(choice.source, choice.patch_dirs, cache_dir, writable, phase)
            Progress(self.config).done(self.describe(choice))
        return self._trees[key]

    def fragment_for(self, path: Path, arch: Arch | None = None) -> Fragment:
        """What the kernel of `path` is built from for `arch` (default: the run's first) besides the architecture's
        needs. --kunit-kconfig-add's lines and then the hooks' come last, so they win (as kunit.py's --kconfig_add),
        and key the build like the rest."""
        own = read_fragment(path) + self._sanitizer_kconfig() + self._coverage_kconfig()
        return own + self._added_kconfig() + self._hook_kconfig(path, arch or self.arch)

    def request(
        self, path: Path, fragment: Fragment, together: Sequence[Path] = (), arch: Arch | None = None
    ) -> tuple[BuildRequest, TreeChoice]:
        """How to build `fragment` for `arch` (default: the run's first) on the tree `path` is built from, the
        out-of-tree suites of `path` and of the fragments `together` with it in one kernel placed into it."""
        suites = list({suite.name: suite for suite in map(suite_dir_for, (path, *together)) if suite}.values())
        choice = self.tree_choice(path)
        tree = self.tree(choice, writable=bool(suites))
        arch = arch or self.arch
        refused = sanitizers_unsupported(self.settings.sanitize, tree.path, arch.make.source_arch)
        if refused:
            names = ", ".join(name for name, _ in refused)
            raise ConfigError(
                f"--kunit-sanitize {names}: arch {arch.name} cannot have it: its Kconfig "
                f"(arch/{arch.make.source_arch}/Kconfig) never selects {', '.join(symbol for _, symbol in refused)}.",
                f"leave {names} out of --kunit-sanitize for arch {arch.name}.",
            )
        placed = []
        for suite in suites:
            with cache_lock(self.settings.cache_dir, f"src-{tree.key}", f"placing {suite} into {tree.path}"):
                install(tree.path, suite)
            placed.append((suite.name, suite.digest()))
        request = BuildRequest(
            tree,
            fragment,
            arch,
            self.settings.jobs,
            self.settings.cache_dir,
            # One suite's digest alone, as builds before shared out-of-tree suites recorded it.
            extra_key=placed[0][1] if len(placed) == 1 else "+".join(f"{name}={digest}" for name, digest in placed),
            placed=tuple(placed),
            session=self.session,
            wrapper=self.settings.wrapper,
            make_options=self.make_options(),
            modules=self.settings.modules,
            make_timeout=self.settings.make_timeout,
        )
        return request, choice

    def build_request(self, name: str, key: str, request: BuildRequest, choice: TreeChoice) -> Kernel:
        """Build `request` (said as `name` on the progress lines) for the fragment `key`."""
        progress = Progress(self.config)
        result = build(replace(request, label=request.label or name), progress)
        if result.ran_make:
            self.stats.builds += 1
            self.stats.build_seconds += result.seconds
            note = f"; {result.note}" if result.note else ""
            progress.done(f"built {name} in {result.seconds:.1f} s (log: {result.log}{note})")
        after = guest_init.AfterKunit(
            kmemleak=initramfs.kmemleak_scan(result.build_dir / ".config", request.arch),
            gcov=() if self.settings.coverage is not None else None,
            modules=request.modules,
        )
        suite_modules = self._suite_modules(result.build_dir) if request.modules else ()
        files = [(module.name, (result.build_dir / module.path).read_bytes()) for module in suite_modules]
        why = self._initramfs_why(after)
        initrd = initramfs.initramfs(self.settings.cache_dir, why, files) if after.wanted else None
        boot_args = (*sanitizer_args(self.settings.sanitize), *after.kernel_args())
        self.kernels[key] = BuiltKernel(
            key,
            request.tree.key,
            self.describe(choice, request.arch),
            patchset_hash(patch_series(choice.patch_dirs).patches),
            result.image_digest,
            request.arch.name,
            full_fragment(request).text(),
            result.seconds if result.ran_make else None,
        )
        tree = request.tree
        return Kernel(
            key,
            result,
            request.arch,
            tree.features,
            tree.path,
            cases=(),
            boot_args=boot_args,
            initrd=initrd,
            modules=suite_modules,
        )

    def listing(self, kernel: Kernel, locations: dict[str, tuple[str, int]] | None = None) -> CaseList:
        """The image's cases (from a kunit.action=list boot) and their C locations (from its build, unless given),
        cached by image hash."""
        cache_dir, digest = self.settings.cache_dir, kernel.build.image_digest
        what = f"listing the cases of {kernel.build.image}"
        with cache_lock(cache_dir, f"list-{digest}", what, Progress(self.config)):
            listing = load_case_list(cache_dir, digest)
            if listing is None:
                # A new image with the same suite tables (the usual result of editing code) lists the same cases.
                tables = self._tables_key(kernel)
                listed = load_case_list(cache_dir, tables) if tables else None
                progress = Progress(self.config)
                if listed is not None:
                    progress.phase(f"the case list of {kernel.build.image} is unchanged (the same suite tables)")
                else:
                    progress.phase(f"listing the cases of {kernel.build.image}: one boot with kunit.action=list")
                    listed = list_cases(self.runner, kernel, kernel.features.attributes)
                    if tables:
                        save_case_list(cache_dir, tables, listed)
                if locations is None:  # the cases' lines in the C files may have moved since
                    locations = case_locations(kernel.tree, kernel.build.build_dir)
                listing = replace(listed, locations=locations)
                save_case_list(cache_dir, digest, listing)
            return listing

    def _tables_key(self, kernel: Kernel) -> str | None:
        """The case list's cache key by what the list is made of (suite tables, link order, KUnit itself), if the
        build's objects tell it."""
        tables = case_list_digest(kernel.build.build_dir)
        if tables is None:
            return None
        action = "list_attr" if kernel.features.attributes else "list"
        return "tables-" + hashlib.sha256(f"{kernel.build.build_dir}\0{action}\0{tables}".encode()).hexdigest()[:16]
