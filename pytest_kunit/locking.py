"""Cross-process locks in the cache: one build per tree and config, however many workers or sessions ask."""

from __future__ import annotations

from pathlib import Path

import filelock


def cache_lock(cache_dir: Path, name: str) -> filelock.FileLock:
    locks = cache_dir / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(locks / f"{name}.lock"))
