"""Whether a tree is as its last build found it: one look at what that build read (the whole tree when its records
cannot say) against the start it recorded."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..kbuild.read_dirs import ReadScope
from .changed_since import changed_since
from .out_of_tree import OVERLAY, OVERLAY_LISTS
from .tree import PreparedTree

RECENT = 1000  # changes in the second before a build started that it records (more: the next run builds again)
LAG_NS = 1_000_000_000  # how far file times may lag this clock: a build vouches for changes after its start less this


@dataclass(frozen=True)
class TreeLook:
    unchanged: bool  # the tree is as it was when the recorded build started
    sources: str  # SOURCES for a build starting now
    edits: tuple[str, ...] | None = None  # what changed since the recorded build started (None: no build to compare)
    link_only: Mapping[str, object] = field(default_factory=dict)  # what it recorded for link-only builds (snapshot)


def look_at_tree(
    tree: PreparedTree,
    stamp: Path,
    sources: Path | None,
    snapshot: Mapping[str, object],
    placed: Collection[str] = (),
    scope: ReadScope | None = None,
) -> TreeLook:
    """One walk of the tree: whether it is as it was when the build recorded in `sources` (None: no build to compare
    with) started, and what a build starting now records. File times come from a coarse clock that may lag this one:
    a build vouches for what changed after a second before its start, as it is now (what the runner itself wrote
    just before: patches, out-of-tree suites), so only later changes rebuild. The link-only build's `snapshot`, taken
    just before, goes into the record too: the next build's plan compares with it. `placed`: the out-of-tree suites
    placed for this build; what other kernels of the tree place is not this build's (other_kernels_suites). `scope`:
    what the recorded build read (kbuild/read_dirs.py), all that is looked at; None: the whole tree."""
    since = time.time_ns() - LAG_NS
    before = recorded_start(tree, stamp, sources) if sources is not None else None
    # Whatever changed after the recorded build's start includes what changed in the last second: one walk sees both.
    changed = changed_since(tree.path, since if before is None else min(since, before[0]), scope)
    if changed is not None:
        changed = {path: mtime for path, mtime in changed.items() if not other_kernels_suites(tree.path, path, placed)}
    recent = {path: mtime for path, mtime in (changed or {}).items() if mtime > since}
    record = json.dumps({"since": since, "recent": recent if len(recent) <= RECENT else {}, "link_only": snapshot})
    if sources is None or before is None or changed is None:
        return TreeLook(False, record)
    # A recorded start later than this one's is a clock that went back: then nothing vouches for the tree.
    if before[0] > since:
        return TreeLook(False, record)
    edits = tuple(sorted(path for path, mtime in changed.items() if before[1].get(path) != mtime))
    # A build recorded by its end (no start) may have missed edits made while it ran: only a walk can say.
    return TreeLook(not edits, record, edits if sources.exists() else None, before[2])


def other_kernels_suites(tree: Path, path: str, placed: Collection[str]) -> bool:
    """Whether `path` is only what placing other kernels' out-of-tree suites changed: the overlay directory (an entry
    added), its lists of suites (out_of_tree.install keeps their time anyway), or another suite's folder. A build's
    key names its own suites with their digests, so nothing else under the overlay can change what it compiles; seen
    as edits, they made the whole kernel again (and relinked it) after another kernel of the tree placed a suite."""
    overlay = tree / OVERLAY
    relative = Path(path).relative_to(overlay) if Path(path).is_relative_to(overlay) else None
    if relative is None:
        return False
    if not relative.parts or str(relative) in OVERLAY_LISTS:
        return True
    return relative.parts[0] not in placed


def recorded_start(
    tree: PreparedTree, stamp: Path, sources: Path
) -> tuple[int, dict[str, int], dict[str, object]] | None:
    """When the recorded build started reading the tree (ns), what had changed just before, and its link-only
    snapshot (for an extracted tarball built before start times were recorded, when edits there went unbuilt: when
    that build ended)."""
    try:
        recorded = json.loads(sources.read_text())
    except (OSError, ValueError):
        if not tree.extracted or not stamp.exists():
            return None
        return stamp.stat().st_mtime_ns, {}, {}
    if isinstance(recorded, int):
        return recorded, {}, {}
    since, recent, snapshot = recorded.get("since"), recorded.get("recent"), recorded.get("link_only", {})
    if not isinstance(since, int) or not isinstance(recent, dict) or not isinstance(snapshot, dict):
        return None
    return since, recent, snapshot
