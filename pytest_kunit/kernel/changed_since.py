"""What of a directory changed since a time, by the mtimes Kbuild judges by: find(1), else a walk in Python; the whole
tree or only what a build read (a tree's look before a build, a build directory's after a link-only compile)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..host.processes import ToolTimeout, run_bounded
from ..kbuild.read_dirs import ReadScope
from .tree import TOOL_TIMEOUT

# What no build reads, left out of the walk: git's store, and pytest's cache, which a run from inside the tree writes
# at its end (every run: that would leave a tree that never stays unchanged).
UNREAD = (".git", ".pytest_cache")


def changed_since(tree: Path, since_ns: int, scope: ReadScope | None = None) -> dict[str, int] | None:
    """The entries of the tree (outside UNREAD) changed after `since_ns`, with their mtimes (ns); None if unreadable.
    Kbuild judges by the same mtimes; a directory's mtime moves when an entry is added, removed or renamed. find(1)
    walks a kernel tree (80,000 entries) in half the time Python does. `scope`: only what a build read (its listed
    directories' own entries, and the paths it names alone); None: the whole tree."""
    listed = None if scope is None else scope.listed
    paths = _find_newer(tree, since_ns, listed)
    if paths is None:
        paths = _walk_newer(tree, since_ns, listed)
    if paths is None:
        return None
    for path in (str(tree / relative) for relative in scope.alone) if scope is not None else ():
        try:
            if os.lstat(path).st_mtime_ns > since_ns:
                paths.append(path)
        except OSError:
            return None
    entries: dict[str, int] = {}
    for path in paths:
        try:
            entries[path] = os.lstat(path).st_mtime_ns
        except OSError:
            return None
    return entries


def _find_newer(tree: Path, since_ns: int, scope: Sequence[str] | None) -> list[str] | None:
    find = shutil.which("find")
    if find is None:
        return None
    with tempfile.NamedTemporaryFile(prefix="pytest-kunit-since-") as reference:
        os.utime(reference.name, ns=(since_ns, since_ns))
        unread = [word for name in UNREAD for word in ("-o", "-name", name)][1:]
        starts = [str(tree)] if scope is None else [str(tree / directory) for directory in scope]
        depth = [] if scope is None else ["-maxdepth", "1"]
        command = [find, *starts, *depth, "(", *unread, ")", "-prune", "-o", "-newer", reference.name, "-print0"]
        try:
            result = run_bounded(command, TOOL_TIMEOUT, f"Walking {tree}")
        except ToolTimeout:
            return None
    if result.returncode != 0:
        return None
    return [os.fsdecode(path) for path in result.stdout.split(b"\0") if path]


def _walk_newer(tree: Path, since_ns: int, scope: Sequence[str] | None) -> list[str] | None:
    """_find_newer in Python: where find(1) is missing or failed."""
    paths: list[str] = []
    stack = [str(tree)] if scope is None else [str(tree / directory) for directory in scope]
    while stack:
        directory = stack.pop()
        try:
            if os.lstat(directory).st_mtime_ns > since_ns:
                paths.append(directory)
            entries = list(os.scandir(directory))
        except OSError:
            return None
        for entry in entries:
            if entry.name in UNREAD:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if scope is None:
                        stack.append(entry.path)
                    elif entry.stat(follow_symlinks=False).st_mtime_ns > since_ns:
                        paths.append(entry.path)
                elif entry.stat(follow_symlinks=False).st_mtime_ns > since_ns:
                    paths.append(entry.path)
            except OSError:
                return None
    return paths
