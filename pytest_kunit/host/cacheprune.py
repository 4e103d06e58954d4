"""Eviction: what the cache may lose. Big entries (trees, builds, completed configurations, fetched images) that no
run has used for `max_age_days`, and the consoles, coverage counters and standard-input replays of all but the last
`keep_runs` runs (a replayed console is the user's own file's copy, or a pipe's, read once). An entry another process
holds the lock of is in use and stays; nothing else is removed that a run would not make again."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .cachelayout import CONSOLE_NAME, EVICTED_BY_AGE, Area, CacheLayout
from .locking import cache_lock_if_free

DAY = 86400.0


@dataclass(frozen=True)
class Bounds:
    max_age_days: int  # an entry unused for longer goes; 0: no bound
    keep_runs: int  # the consoles and coverage counters of this many latest runs stay; 0: no bound


@dataclass(frozen=True)
class Removed:
    path: Path
    size: int  # bytes freed
    why: str


def prune(cache_dir: Path, bounds: Bounds, now: float | None = None) -> list[Removed]:
    """Remove what `bounds` leaves no room for; what was removed, and why."""
    layout = CacheLayout(cache_dir)
    now = time.time() if now is None else now
    removed: list[Removed] = []
    if bounds.max_age_days > 0:
        for area in EVICTED_BY_AGE:
            removed += _unused(layout, area, now - bounds.max_age_days * DAY, bounds.max_age_days)
    if bounds.keep_runs > 0:
        removed += _old_consoles(layout, bounds.keep_runs)
        removed += _old_coverage_runs(layout, bounds.keep_runs)
        removed += _old_replays(layout, bounds.keep_runs)
    return removed


def size_of(path: Path) -> int:
    """The bytes `path` takes on disk (links are not followed)."""
    total = path.lstat().st_blocks * 512
    if path.is_dir() and not path.is_symlink():
        for parent, directories, files in os.walk(path):
            for name in [*directories, *files]:
                with contextlib.suppress(OSError):  # gone meanwhile
                    total += os.lstat(os.path.join(parent, name)).st_blocks * 512
    return total


def _last_use(layout: CacheLayout, entry: Path) -> float:
    """When a run last used `entry`: its use stamp, or for an entry made before stamps were kept, its own time."""
    try:
        return layout.used_stamp(entry).stat().st_mtime
    except OSError:
        return entry.lstat().st_mtime


def _unused(layout: CacheLayout, area: Area, before: float, days: int) -> list[Removed]:
    directory = layout.area(area)
    if not directory.is_dir():
        return []
    removed = []
    for entry in sorted(directory.iterdir()):
        if _last_use(layout, entry) >= before:
            continue
        lock = layout.lock_name(area, entry.name)
        with cache_lock_if_free(layout.root, lock, "evicting an entry unused for a while") as free:
            # Looked at again under the lock: a run may have used it just before taking it.
            if not free or _last_use(layout, entry) >= before:
                continue
            size = size_of(entry)
            _remove(entry)
            layout.used_stamp(entry).unlink(missing_ok=True)
        removed.append(Removed(entry, size, f"unused for more than {days} days"))
    return removed


def _old_consoles(layout: CacheLayout, keep: int) -> list[Removed]:
    """The consoles of every run but the `keep` latest (a run's time: its latest console's)."""
    runs: dict[str, list[Path]] = {}
    latest: dict[str, float] = {}
    for console in layout.consoles().glob("*/*.log"):
        named = CONSOLE_NAME.fullmatch(console.name)
        if named is None:
            continue  # not a console a run wrote: left alone
        # Consoles written before runs were named in them: each process's are a run.
        run = named["run"] or f"pid {named['pid']}"
        runs.setdefault(run, []).append(console)
        latest[run] = max(latest.get(run, 0.0), console.stat().st_mtime)
    removed = []
    for run in sorted(runs, key=lambda run: latest[run], reverse=True)[keep:]:
        for console in runs[run]:
            size = size_of(console)
            console.unlink(missing_ok=True)
            removed.append(Removed(console, size, f"a console of a run before the last {keep}"))
            _remove_if_empty(console.parent)
    return removed


def _old_coverage_runs(layout: CacheLayout, keep: int) -> list[Removed]:
    directory = layout.coverage_runs()
    if not directory.is_dir():
        return []
    runs = sorted(directory.iterdir(), key=lambda run: run.lstat().st_mtime, reverse=True)
    removed = []
    for run in runs[keep:]:
        size = size_of(run)
        _remove(run)
        removed.append(Removed(run, size, f"coverage counters of a run before the last {keep}"))
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty
        directory.rmdir()


def summary(removed: list[Removed]) -> str:
    """How much went, and why."""
    freed = sum(entry.size for entry in removed)
    count = f"{len(removed)} cache entr{'y' if len(removed) == 1 else 'ies'}"
    reasons = "; ".join(sorted({entry.why for entry in removed}))
    return f"removed {count}, {freed / 1e6:.1f} MB freed" + (f" ({reasons})" if reasons else "")


def _old_replays(layout: CacheLayout, keep: int) -> list[Removed]:
    """The consoles read from standard input (--kunit-replay -) but the `keep` latest."""
    kept = sorted(layout.replays().glob("stdin-*.log"), key=lambda replay: replay.stat().st_mtime, reverse=True)
    removed = []
    for replay in kept[keep:]:
        size = size_of(replay)
        replay.unlink(missing_ok=True)
        removed.append(Removed(replay, size, f"a console replayed from standard input before the last {keep}"))
    return removed
