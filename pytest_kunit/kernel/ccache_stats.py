"""ccache's statistics of one build: its hits and misses, from the build's own stats log where there is one, and the
note that says them on the "built" line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..options import Wrapper
from .wrapper import CompilerWrapping


def ccache_counts(wrapping: CompilerWrapping) -> tuple[int, int] | None:
    """ccache's (hits, misses) so far in this build, or None if the wrapper is not ccache or ccache cannot tell. From
    the build's own stats log where there is one; else ccache's counters for the whole cache, which compiles of other
    builds running meanwhile add to."""
    if wrapping.wrapper is not Wrapper.CCACHE:
        return None
    if wrapping.stats_log is not None:
        return logged_counts(wrapping.stats_log)
    try:  # asked with make's environment: the ccache the build used (CCACHE_DIR, CCACHE_CONFIGPATH), wherever it is
        env = os.environ | wrapping.env
        result = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, timeout=30, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    counters: dict[str, int] = {}
    for line in result.stdout.splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            counters[name] = int(value)
    hits = counters.get("direct_cache_hit", 0) + counters.get("preprocessed_cache_hit", 0)
    misses = counters.get("cache_miss", 0)
    return (hits, misses) if result.returncode == 0 else None


def logged_counts(stats_log: Path) -> tuple[int, int]:
    """(hits, misses) in a ccache stats log: one entry per compile, a `# <source>` line and then its counters."""
    try:
        lines = stats_log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return (0, 0)
    hits = sum(line in ("direct_cache_hit", "preprocessed_cache_hit") for line in lines)
    return hits, lines.count("cache_miss")


def hit_note(before: tuple[int, int] | None, after: tuple[int, int] | None) -> str:
    """`ccache: 1480 of 1510 compiles hit`, from the counters before and after a build ("" if unknown)."""
    if before is None or after is None:
        return ""
    hits, misses = after[0] - before[0], after[1] - before[1]
    return f"ccache: {hits} of {hits + misses} compiles hit"
