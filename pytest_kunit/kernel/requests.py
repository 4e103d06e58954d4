"""A fragment's build request: the prepared tree with its out-of-tree suites placed, the configuration, the
architecture and make's options, which together key its build; and the record of a build made from one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..arch import Arch
from ..host.locking import cache_lock
from ..host.progress import Progress
from ..model import BuildResult, BuiltKernel, Settings, Stats
from .assembly import Additions
from .build import build
from .build_request import BuildRequest, full_fragment
from .kconfig import Fragment
from .makerun import honoured_variables
from .out_of_tree import install, suite_dir_for
from .tree import patch_series, patchset_hash
from .treechoice import TreeChoice, Trees, describe_tree


def make_options(settings: Settings) -> tuple[str, ...]:
    """The words every make run of a build gets after ARCH= and CROSS_COMPILE=: the flags and compiler the shell
    exports (makerun.HONOURED), --kunit-make-options', then --kunit-cross-compile's prefix (the architecture record
    carries it too; here it keys the build)."""
    cross = settings.cross_compile
    own = (*honoured_variables(), *settings.make_options)
    return (*own, *(() if cross is None else (f"CROSS_COMPILE={cross}",)))


@dataclass
class Requests:
    """One session's build requests."""

    settings: Settings
    trees: Trees
    additions: Additions
    session: str  # the run's id: xdist workers of one run share it, so they build once between them

    def request(
        self, path: Path, fragment: Fragment, choice: TreeChoice, arch: Arch, together: Sequence[Path] = ()
    ) -> BuildRequest:
        """How to build `fragment` for `arch` on the tree `choice` names for `path`, the out-of-tree suites of `path`
        and of the fragments `together` with it in one kernel placed into it."""
        suites = list({suite.name: suite for suite in map(suite_dir_for, (path, *together)) if suite}.values())
        tree = self.trees.prepared(choice, writable=bool(suites))
        self.additions.refuse(tree.path, arch)
        placed = []
        for suite in suites:
            with cache_lock(self.settings.cache_dir, f"src-{tree.key}", f"placing {suite} into {tree.path}"):
                install(tree.path, suite)
            placed.append((suite.name, suite.digest()))
        settings = self.settings
        return BuildRequest(
            tree,
            fragment,
            arch,
            settings.jobs,
            settings.cache_dir,
            # One suite's digest alone, as builds before shared out-of-tree suites recorded it.
            extra_key=placed[0][1] if len(placed) == 1 else "+".join(f"{name}={digest}" for name, digest in placed),
            placed=tuple(placed),
            session=self.session,
            wrapper=settings.wrapper,
            make_options=make_options(settings),
            modules=settings.modules,
            serving=settings.keep_guest and not settings.modules and tree.features.autorun,
            make_timeout=settings.make_timeout,
            seed=settings.reuse_kernels,
        )


def built_record(key: str, request: BuildRequest, choice: TreeChoice, result: BuildResult) -> BuiltKernel:
    """What the run's reports (KCIDB, the summary) say of the kernel of `key`, built from `request`."""
    return BuiltKernel(
        key,
        request.tree.key,
        describe_tree(choice, request.arch.name),
        patchset_hash(patch_series(choice.patch_dirs).patches),
        result.image_digest,
        request.arch.name,
        full_fragment(request).text(),
        result.seconds if result.ran_make else None,
    )


def build_counted(name: str, request: BuildRequest, stats: Stats, progress: Callable[[], Progress]) -> BuildResult:
    """Build `request` (said as `name` on the progress lines), a build that ran make counted in the run's `stats`."""
    result = build(replace(request, label=request.label or name), progress())
    if result.ran_make:
        stats.builds += 1
        stats.build_seconds += result.seconds
        note = f"; {result.note}" if result.note else ""
        progress().done(f"built {name} in {result.seconds:.1f} s (log: {result.log}{note})")
    return result
