"""Which tree a fragment is built from, with which patches, and that tree prepared once per session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import versions
from ..bundled import default_patch_dirs
from ..host.progress import Progress
from ..model import Settings
from .tree import PreparedTree, enclosing_tree, patch_series, prepare


@dataclass(frozen=True)
class TreeChoice:
    """Which source a fragment is built from, with which patches, and why."""

    source: Path
    patch_dirs: tuple[Path, ...]
    reason: str


def choose_tree(settings: Settings, fragment: Path) -> TreeChoice:
    """--kunit-kernel-src if given; else the kernel tree the fragment lies in; else the packaged tarball.

    Our series is written for the packaged tarball: it is applied by default there and nowhere else.
    """
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


def describe_tree(choice: TreeChoice, arches: str) -> str:
    """Which tree, which patches, why, for which architectures (their names, comma-separated)."""
    series = patch_series(choice.patch_dirs)
    count = len(series.patches)
    noun = "patch" if count == 1 else "patches"
    patches = f"{count} {noun} from {', '.join(map(str, choice.patch_dirs))}" if count else "no patches"
    if series.without_diff:
        patches += f" (left out, holding no diff: {', '.join(path.name for path in series.without_diff)})"
    return f"kernel tree {choice.source} ({choice.reason}), {patches}, arch {arches}"


@dataclass
class Trees:
    """One session's prepared trees: each (source, patches, writable) extracted and patched once."""

    cache_dir: Path
    arches: str  # the run's architectures, as the line naming a prepared tree says them
    progress: Callable[[], Progress]
    _prepared: dict[tuple[Path, tuple[Path, ...], bool], PreparedTree] = field(default_factory=dict)

    def prepared(self, choice: TreeChoice, writable: bool) -> PreparedTree:
        """The prepared tree, once per session; `writable` when out-of-tree suites must be placed into it."""
        key = (choice.source, choice.patch_dirs, writable)
        if key not in self._prepared:
            self._prepared[key] = prepare(
                choice.source, choice.patch_dirs, self.cache_dir, writable, self.progress().phase
            )
            self.progress().done(describe_tree(choice, self.arches))
        return self._prepared[key]
