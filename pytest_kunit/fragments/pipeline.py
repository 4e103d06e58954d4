"""The way of each fragment, from its tree to its cases' outcomes, in one place: choose the tree -> assemble the
fragment -> the build request -> complete the configuration and build (or share, reuse, or fetch from the xdist
controller) -> what the kernel boots with (the initramfs) -> list -> plan boots -> boot and judge. Each step is one
call into the stage that does it; tests/unit/test_pipeline_order.py checks that they call into the stages in order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..arch import Arch
from ..findings.outcomes import Outcome
from ..guest.boot_extras import boot_extras
from ..guest.caselists import CaseLists
from ..guest.planning import PlannedCase, plan_batches
from ..guest.runner import Runner
from ..host.cache import CaseList
from ..host.progress import Progress
from ..kernel.assembly import Additions, assemble
from ..kernel.build_records import RECORD
from ..kernel.build_request import BuildRequest, build_dir_of
from ..kernel.requests import Requests, build_counted, built_record
from ..kernel.treechoice import TreeChoice, choose_tree
from ..model import BuiltKernel, Kernel, Settings, Stats


class KernelSource(Protocol):
    """Where an xdist worker sharing no cache with its controller gets each fragment's kernel (image_service.py's
    client): the kernel, the controller's case list if it had one, and its cases' C locations."""

    def kernel(
        self, path: Path, key: str, rootpath: Path, arch: Arch
    ) -> tuple[Kernel, CaseList | None, dict[str, tuple[str, int]]]: ...


class SharedKernels(Protocol):
    """--kunit-share-kernels (sharing.py): the kernel a fragment shares with others, or None for its own."""

    def kernel(self, path: Path, key: str) -> Kernel | None: ...


class EarlierKernels(Protocol):
    """--kunit-reuse-kernels (reuse.py): a kernel built before that serves a fragment never built, or None."""

    def kernel(self, path: Path, key: str, request: BuildRequest, choice: TreeChoice) -> Kernel | None: ...


@dataclass
class Pipeline:
    """One session's steps, each a part of it by composition; the records they keep are the session's (session.py)."""

    settings: Settings
    rootpath: Path  # the rootdir: the controller names a fragment by its path below it
    additions: Additions
    requests: Requests
    case_lists: CaseLists
    runner: Runner
    stats: Stats
    progress: Callable[[], Progress]
    kernels: dict[str, BuiltKernel]  # by fragment node id: what the reports say of each
    locations: dict[str, dict[str, tuple[str, int]]]  # each kernel's cases' C locations, by its node id
    remote: KernelSource | None = None  # on an xdist worker sharing no cache with its controller
    sharing: dict[str, SharedKernels] = field(default_factory=dict)  # by architecture
    reuse: EarlierKernels | None = None

    def kernel(self, path: Path, key: str, arch: Arch) -> Kernel:
        """Collection: the kernel the kunitconfig file `path` describes for `arch`, built at most once (or the
        controller's) and listed; `key` is the node id its suites are collected under."""
        if self.remote is not None:
            unlisted, known, locations = self.remote.kernel(path, key, self.rootpath, arch)
        else:
            unlisted, known, locations = self.unlisted(path, key, arch), None, None
        listing = known or self.case_lists.listing(unlisted, self.runner, locations)
        self.locations[key] = listing.locations
        return self.case_lists.listed(unlisted, listing)

    def unlisted(self, path: Path, key: str, arch: Arch) -> Kernel:
        """The kernel of `path` for `arch` (or the kernel it shares, or one built before that serves it), built at most
        once, its cases not yet listed."""
        if arch.name in self.sharing:
            shared = self.sharing[arch.name].kernel(path, key)
            if shared is not None:
                return shared
        choice = choose_tree(self.settings, path)
        fragment = assemble(path, arch, self.additions)
        request = self.requests.request(path, fragment, choice, arch)
        if self.reuse is not None and not build_dir_of(request).joinpath(RECORD).exists():
            served = self.reuse.kernel(path, key, request, choice)
            if served is not None:
                return served
        return self.built(key, key, request, choice)  # its node id: in-tree fragments are all named .kunitconfig

    def built(self, name: str, key: str, request: BuildRequest, choice: TreeChoice) -> Kernel:
        """Build `request` (said as `name` on the progress lines) for the fragment `key`, and make what it boots with:
        a shared kernel and one reused are built here too."""
        result = build_counted(name, request, self.stats, self.progress)
        record = built_record(key, request, choice, result)
        extras = boot_extras(self.settings, result.build_dir, request.arch, request.modules, request.serving)
        self.kernels[key] = record  # once it can boot, as the reports name it: not one whose initramfs failed
        tree = request.tree
        return Kernel(
            key,
            result,
            request.arch,
            tree.features,
            tree.path,
            cases=(),
            boot_args=extras.boot_args,
            initrd=extras.initrd,
            modules=extras.modules,
        )

    def plan(
        self, cases: Sequence[PlannedCase], workers: int, durations: Mapping[str, Mapping[str, float]] | None
    ) -> None:
        """Once collected: which of the selected cases each boot runs."""
        self.runner.set_plan(cases, plan_batches(cases, workers, self.settings.isolate, durations))

    def outcome(self, kernel: Kernel, suite: str, case: str, nodeid: str) -> Outcome:
        """A case's outcome, judged from its boot's console: its batch is booted when the first of it asks."""
        return self.runner.outcome(kernel, suite, case, nodeid)
