"""A kernel tree as pytest's ground (`cd ~/linux && pytest --kunit`): only its kunitconfig fragments are collected,
and a run about to build many kernels says so before the first build.

A kernel tree holds Python of its own (kunit.py's tests, bpftool's, kselftest scripts that run at import and exit),
and conftest.py files pytest would import on entering their directories: none of it is a KUnit test."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..fragments.files import fragments_in_run, is_fragment
from ..fragments.session import STATE
from ..host.progress import Progress
from ..kernel.tree import is_kernel_tree
from ..scaleout.workers import is_worker
from ..versions import ALLTESTS

# More kernels than this in one run are announced before the first build: a few are what a run of some suites
# builds; more is the whole-tree run a newcomer starts by accident (21 fragments in 6.12's tree).
FEW_KERNELS = 3
# How many fragments the announcement names before it counts the rest.
NAMED_FRAGMENTS = 8


class KernelTreeGround:
    """The hooks that keep a kernel tree's own Python out of a --kunit run (registered by face/hooks.py)."""

    def __init__(self) -> None:
        self._in_tree: dict[Path, bool] = {}

    def in_kernel_tree(self, directory: Path) -> bool:
        """Whether `directory` is a kernel tree or lies inside one (each directory looked at once)."""
        known = self._in_tree.get(directory)
        if known is None:
            parent = directory.parent
            known = is_kernel_tree(directory) or (parent != directory and self.in_kernel_tree(parent))
            self._in_tree[directory] = known
        return known

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """Inside a kernel tree: no file but a fragment (or, with --kunit-alltests, the tree's all_tests.config), and
        no directory whose conftest.py pytest would import on entering it (pytest asks before it collects a
        directory, and never for a path named on the command line)."""
        if collection_path.is_dir():
            if (collection_path / "conftest.py").is_file() and self.in_kernel_tree(collection_path):
                return True
            return None
        if is_fragment(collection_path) or not self.in_kernel_tree(collection_path.parent):
            return None
        alltests = config.stash[STATE].settings.alltests
        return not (alltests and collection_path.as_posix().endswith(f"/{ALLTESTS.as_posix()}"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """Before collection builds the first kernel: how many kernels this run is about to build, when many."""
        config = session.config
        state = config.stash[STATE]
        settings = state.settings
        if is_worker(config) or state.replayed is not None or settings.share_kernels:
            return
        fragments = fragments_in_run(config)
        arches = max(len(settings.matrix), 1)
        if len(fragments) * arches > FEW_KERNELS:
            Progress(config).done(announcement(config.invocation_params.dir, fragments, arches))


def announcement(base: Path, fragments: list[Path], arches: int) -> str:
    """What a run about to build len(fragments) * arches kernels says first: how many, which, why, how to build
    fewer."""
    shown = [_shown(base, path) for path in fragments[:NAMED_FRAGMENTS]]
    if len(fragments) > len(shown):
        shown.append(f"and {len(fragments) - len(shown)} more")
    kernels = len(fragments) * arches
    each = "its own kernel" if arches == 1 else f"its own kernel for each of the {arches} architectures"
    return (
        f"{len(fragments)} kunitconfig fragments collected, each built as {each}: up to {kernels} kernel builds "
        f"(a kernel built before and unchanged is not built again): {', '.join(shown)}. "
        "To build fewer, name the fragment or its directory (pytest --kunit fs/ext4/), or give "
        "--kunit-share-kernels (one kernel for every fragment of a tree); -k selects cases only once each kernel "
        "is built and listed."
    )


def _shown(base: Path, path: Path) -> str:
    try:
        return path.relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
