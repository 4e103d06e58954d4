"""Each fragment's way to a listed kernel in a session: its own build, a kernel it shares (sharing.py), one built
before (reuse.py), or, on an xdist worker sharing no cache with its controller, the controller's (image_service.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import pytest

from ..arch import Arch
from ..findings import coverage, initramfs
from ..guest.module_boots import module_cases
from ..host.cache import CaseList
from ..host.progress import Progress
from ..kernel.build import RECORD, build_dir_of
from ..model import CaseId, Kernel
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
    sharing: Sharing | None = None  # --kunit-share-kernels: which fragments share a kernel, and their suites
    reuse: Reuse | None = None  # kernels built before that serve a fragment never built (--kunit-reuse-kernels)
    _named_built_in: set[str] = field(default_factory=set)  # kernels whose built-in suites were named (module mode)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.settings.share_kernels:
            self.sharing = Sharing(self)
        if self.settings.reuse_kernels and not self.settings.modules:  # a kernel built before has no modules
            self.reuse = Reuse(self)

    def kernel_for(self, path: Path, key: str) -> Kernel:
        """Build (at most once) and list the kernel a kunitconfig file describes; `key` is its node id. An xdist
        worker that shares no cache with its controller gets the kernel from the controller instead."""
        known: CaseList | None = None
        if self.remote is not None:
            unlisted, known, locations = self.remote.kernel(path, key, self.config.rootpath, self.arch)
        else:
            unlisted, locations = self.build_kernel(path, key), None
        listing = known or self.listing(unlisted, locations)
        self.locations[key] = listing.locations
        # Only the counters of the directories the suites live in leave the guest.
        dirs = coverage.tested_dirs(file for file, _ in listing.locations.values())
        boot_args = initramfs.with_gcov_dirs(unlisted.boot_args, dirs)
        cases = listing.cases
        if unlisted.modules:
            cases = (*cases, *(case for module in unlisted.modules for case in module_cases(module)))
            self._name_built_in(key, listing.cases)
        return replace(unlisted, cases=cases, attributes=listing.attributes, boot_args=boot_args)

    def _name_built_in(self, key: str, built_in: Sequence[CaseId]) -> None:
        """--kunit-modules: say once which suites run built in, as Kconfig would not make them modules."""
        suites = list(dict.fromkeys(suite for suite, _ in built_in))
        if suites and key not in self._named_built_in:
            self._named_built_in.add(key)
            Progress(self.config).done(f"{key}: built in (cannot be a module): {', '.join(suites)}")

    def build_kernel(self, path: Path, key: str) -> Kernel:
        """The kernel a kunitconfig file describes (or the kernel it shares, sharing.py), built at most once, its
        cases not yet listed."""
        if self.sharing is not None:
            shared = self.sharing.kernel(path, key)
            if shared is not None:
                return shared
        request, choice = self.request(path, self.fragment_for(path))
        if self.reuse is not None and not build_dir_of(request).joinpath(RECORD).exists():
            served = self.reuse.kernel(path, key, request, choice)
            if served is not None:
                return served
        return self.build_request(path.name, key, request, choice)


STATE = pytest.StashKey[SessionState]()
