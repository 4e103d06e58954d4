"""Each fragment's way to a listed kernel in a session: its own build, a kernel it shares (sharing.py), one built
before (reuse.py), or, on an xdist worker sharing no cache with its controller, the controller's (image_service.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import pytest

from ..arch import Arch
from ..findings import coverage, guest_init
from ..guest.module_boots import module_cases
from ..guest.replay import Replayed, ReplayError, ReplayRunner
from ..host.cache import CaseList
from ..host.progress import Progress
from ..kernel.build_records import RECORD
from ..kernel.build_request import build_dir_of
from ..model import BuildResult, BuiltKernel, CaseId, Kernel
from ..versions import TreeFeatures
from .builder import KernelBuilder
from .reuse import Reuse
from .sharing import Sharing


class KernelSource(Protocol):
    """Where an xdist worker sharing no cache with its controller gets each fragment's kernel (image_service.py's
    client): the kernel, the controller's case list if it had one, and its cases' C locations."""

    def kernel(
        self, path: Path, key: str, rootpath: Path, arch: Arch
    ) -> tuple[Kernel, CaseList | None, dict[str, tuple[str, int]]]: ...


@dataclass
class SessionState(KernelBuilder):
    """A --kunit session's state (in `config.stash[STATE]`): its builds, where each fragment's kernel comes from, its
    cases' C locations, what its summary says."""

    locations: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    remote: KernelSource | None = None  # on an xdist worker sharing no cache with its controller
    coverage: list[str] = field(default_factory=list)  # what the terminal summary says of the coverage report
    # What failed the run while no case ran, per kernel (node id): the terminal summary's and JUnit's, not a test's.
    run_failures: dict[str, str] = field(default_factory=dict)
    pruned: str = ""  # what the cache's bounds removed at the session's end (cacheprune.py), for the summary
    # --kunit-share-kernels: which fragments share a kernel, and their suites; one per architecture
    sharing: dict[str, Sharing] = field(default_factory=dict)
    reuse: Reuse | None = None  # kernels built before that serve a fragment never built (--kunit-reuse-kernels)
    replayed: Replayed | None = None  # --kunit-replay's console, which every outcome comes from
    replayed_as: str | None = None  # the node id the replayed console's cases were collected under
    _named_built_in: set[str] = field(default_factory=set)  # kernels whose built-in suites were named (module mode)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.settings.share_kernels:
            self.sharing = {name: Sharing(self, arch) for name, arch in self.arches.items()}
        if self.settings.reuse_kernels and not self.settings.modules:  # a kernel built before has no modules
            self.reuse = Reuse(self)

    def kernel_for(self, path: Path, key: str, arch: Arch | None = None) -> Kernel:
        """Build (at most once) and list the kernel a kunitconfig file describes for `arch` (default: the run's
        first); `key` is the node id its suites are collected under. An xdist worker that shares no cache with its
        controller gets the kernel from the controller instead."""
        arch = arch or self.arch
        if self.replayed is not None:
            return self._replayed_kernel(key)
        known: CaseList | None = None
        if self.remote is not None:
            unlisted, known, locations = self.remote.kernel(path, key, self.config.rootpath, arch)
        else:
            unlisted, locations = self.build_kernel(path, key, arch), None
        listing = known or self.listing(unlisted, locations)
        self.locations[key] = listing.locations
        # Only the counters of the directories the suites live in leave the guest.
        dirs = coverage.tested_dirs(file for file, _ in listing.locations.values())
        boot_args = guest_init.with_gcov_dirs(unlisted.boot_args, dirs)
        cases = listing.cases
        if unlisted.modules:
            cases = (*cases, *(case for module in unlisted.modules for case in module_cases(module)))
            self._name_built_in(key, listing.cases)
        return replace(
            unlisted, cases=cases, attributes=listing.attributes, empty_suites=listing.empty_suites, boot_args=boot_args
        )

    def _name_built_in(self, key: str, built_in: Sequence[CaseId]) -> None:
        """--kunit-modules: say once which suites run built in, as Kconfig would not make them modules."""
        suites = list(dict.fromkeys(suite for suite, _ in built_in))
        if suites and key not in self._named_built_in:
            self._named_built_in.add(key)
            Progress(self.config).done(f"{key}: built in (cannot be a module): {', '.join(suites)}")

    def replay(self, replayed: Replayed) -> None:
        """Take every outcome from `replayed`, a saved console, instead of building and booting."""
        self.replayed = replayed
        self.runner = ReplayRunner(self.settings, self.stats, replayed)

    def _replayed_kernel(self, key: str) -> Kernel:
        """The replayed console as the kernel of `key` (a fragment, or the console file): one console is one boot of
        one kernel, so it serves one node."""
        replayed = self.replayed
        assert replayed is not None
        if self.replayed_as not in (None, key):
            raise ReplayError(
                f"--kunit-replay: the console {replayed.console} is one boot's, and its cases were collected under "
                f"{self.replayed_as} already; {key} cannot have them too.",
                "name the one fragment the console belongs to (pytest --kunit --kunit-replay LOG x.kunitconfig), or "
                "no path at all to collect them under the console file.",
            )
        self.replayed_as, console = key, replayed.console
        build = BuildResult(console, replayed.digest, console.parent, ran_make=False, seconds=0.0, log=console)
        self.locations[key] = {}
        tree_key = f"replay-{replayed.digest}"
        what = f"the console {console}, replayed (no build)"
        self.kernels[key] = BuiltKernel(key, tree_key, what, "", replayed.digest, self.arch.name, "", None)
        features = TreeFeatures(filter_list=False, case_timeout=False)
        return Kernel(key, build, self.arch, features, console.parent, replayed.cases)

    def build_kernel(self, path: Path, key: str, arch: Arch | None = None) -> Kernel:
        """The kernel a kunitconfig file describes for `arch` (or the kernel it shares, sharing.py), built at most
        once, its cases not yet listed."""
        arch = arch or self.arch
        if arch.name in self.sharing:
            shared = self.sharing[arch.name].kernel(path, key)
            if shared is not None:
                return shared
        request, choice = self.request(path, self.fragment_for(path, arch), arch=arch)
        if self.reuse is not None and not build_dir_of(request).joinpath(RECORD).exists():
            served = self.reuse.kernel(path, key, request, choice)
            if served is not None:
                return served
        return self.build_request(path.name, key, request, choice)


STATE = pytest.StashKey[SessionState]()
