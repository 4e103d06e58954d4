"""An image's cases: listed once (a kunit.action=list boot, listing.py) and cached by the image's digest and by its
suite tables, then given to the kernel with their C locations."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..findings import coverage, guest_init
from ..host.cache import CaseList, load_case_list, save_case_list
from ..host.locking import cache_lock
from ..host.progress import Progress
from ..kbuild.case_locations import case_locations
from ..kbuild.suitetable import case_list_digest
from ..model import CaseId, Kernel
from .listing import list_cases
from .module_boots import module_cases
from .runner import Runner


def _tables_key(kernel: Kernel) -> str | None:
    """The case list's cache key by what the list is made of (suite tables, link order, KUnit itself), if the build's
    objects tell it."""
    tables = case_list_digest(kernel.build.build_dir)
    if tables is None:
        return None
    action = "list_attr" if kernel.features.attributes else "list"
    return "tables-" + hashlib.sha256(f"{kernel.build.build_dir}\0{action}\0{tables}".encode()).hexdigest()[:16]


@dataclass
class CaseLists:
    """One session's case lists."""

    cache_dir: Path
    progress: Callable[[], Progress]
    _named_built_in: set[str] = field(default_factory=set)  # kernels whose built-in suites were named (module mode)

    def listing(self, kernel: Kernel, runner: Runner, locations: dict[str, tuple[str, int]] | None = None) -> CaseList:
        """The image's cases (from a kunit.action=list boot by `runner`) and their C locations (from its build, unless
        given), cached by image hash."""
        cache_dir, digest = self.cache_dir, kernel.build.image_digest
        what = f"listing the cases of {kernel.build.image}"
        with cache_lock(cache_dir, f"list-{digest}", what, self.progress()):
            listing = load_case_list(cache_dir, digest)
            if listing is None:
                # A new image with the same suite tables (the usual result of editing code) lists the same cases.
                tables = _tables_key(kernel)
                listed = load_case_list(cache_dir, tables) if tables else None
                progress = self.progress()
                if listed is not None:
                    progress.phase(f"the case list of {kernel.build.image} is unchanged (the same suite tables)")
                else:
                    progress.phase(f"listing the cases of {kernel.build.image}: one boot with kunit.action=list")
                    listed = list_cases(runner, kernel, kernel.features.attributes)
                    if tables:
                        save_case_list(cache_dir, tables, listed)
                if locations is None:  # the cases' lines in the C files may have moved since
                    locations = case_locations(kernel.tree, kernel.build.build_dir)
                listing = replace(listed, locations=locations)
                save_case_list(cache_dir, digest, listing)
            return listing

    def listed(self, kernel: Kernel, listing: CaseList) -> Kernel:
        """`kernel` with the cases `listing` gives it, its modules' cases after them (--kunit-modules), and GCOV's
        counters narrowed to its suites' directories."""
        # Only the counters of the directories the suites live in leave the guest.
        dirs = coverage.tested_dirs(file for file, _ in listing.locations.values())
        boot_args = guest_init.with_gcov_dirs(kernel.boot_args, dirs)
        cases = listing.cases
        if kernel.modules:
            cases = (*cases, *(case for module in kernel.modules for case in module_cases(module)))
            self._name_built_in(kernel.key, listing.cases)
        return replace(
            kernel, cases=cases, attributes=listing.attributes, empty_suites=listing.empty_suites, boot_args=boot_args
        )

    def _name_built_in(self, key: str, built_in: Sequence[CaseId]) -> None:
        """--kunit-modules: say once which suites run built in, as Kconfig would not make them modules."""
        suites = list(dict.fromkeys(suite for suite, _ in built_in))
        if suites and key not in self._named_built_in:
            self._named_built_in.add(key)
            self.progress().done(f"{key}: built in (cannot be a module): {', '.join(suites)}")
