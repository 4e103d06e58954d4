"""Cross-process locks in the cache: one build per tree and config, however many workers or sessions ask; a process
kept waiting is told who holds the lock, doing what, and for how long."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from ..errors import KunitError
from .cachelayout import CacheLayout

# Waiting longer than this on a lock is worth a line saying why.
NOTE_AFTER = 3.0
# A holder that keeps a lock longer than this (what it guards takes minutes, a cold build an hour) is stuck.
WAIT_AT_MOST = 6 * 3600.0


def _holder(sidecar: Path) -> str:
    """Who holds a lock, from the note its holder left beside it."""
    try:
        pid, since, what = sidecar.read_text().split("\n", 2)
        held = time.time() - float(since)
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return "held by a process that left no note"
    return f"held by pid {pid} ({what.strip() or 'no description'}) for {held:.0f} s so far"


def _write_note(sidecar: Path, text: str) -> None:
    """The holder's note, as a new file: a link planted in its place is removed, never written through."""
    sidecar.unlink(missing_ok=True)
    handle = os.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(handle, "w") as stream:
        stream.write(text)


def _waited_too_long(name: str, sidecar: Path) -> KunitError:
    return KunitError(
        f"Waited {WAIT_AT_MOST / 3600:.0f} h for the cache lock {name}, {_holder(sidecar)}: gave up.",
        "see what that process is doing (a build that hangs?) and stop it, or give this run a cache of its own "
        "(--kunit-cache-dir).",
    )


def _lock(cache_dir: Path, name: str) -> tuple[filelock.FileLock, Path]:
    """The lock `name` and its holder's note."""
    locks = CacheLayout(cache_dir).locks()
    locks.mkdir(mode=0o700, parents=True, exist_ok=True)
    return filelock.FileLock(str(locks / f"{name}.lock")), locks / f"{name}.holder"


@contextmanager
def _unopenable(lock: filelock.FileLock) -> Iterator[None]:
    """A lock file that cannot be opened (a link planted in its place: filelock refuses to follow it) as a
    paragraph, not a traceback."""
    try:
        yield
    except filelock.Timeout:
        raise  # a TimeoutError, an OSError too: the lock is held, not broken
    except OSError as error:
        raise KunitError(
            f"The cache lock {lock.lock_file} cannot be opened: {error.strerror or error}"
            + (" (it is a link, which a lock file never is)." if os.path.islink(lock.lock_file) else "."),
            f"remove it (rm {lock.lock_file}) if no pytest-kunit run is using the cache, and see who else could "
            "write there.",
        ) from None


@contextmanager
def _held(lock: filelock.FileLock, sidecar: Path, what: str) -> Iterator[None]:
    try:
        _write_note(sidecar, f"{os.getpid()}\n{time.time()}\n{what}\n")
        yield
    finally:
        sidecar.unlink(missing_ok=True)
        lock.release()


@contextmanager
def cache_lock_if_free(cache_dir: Path, name: str, what: str) -> Iterator[bool]:
    """Hold the cache lock `name` while doing `what` if no process holds it now (True), else wait for nothing
    (False): for work that may as well be skipped, as evicting what another run is using."""
    lock, sidecar = _lock(cache_dir, name)
    try:
        with _unopenable(lock):
            lock.acquire(timeout=0)
    except filelock.Timeout:
        yield False
        return
    with _held(lock, sidecar, what):
        yield True


@contextmanager
def cache_lock(cache_dir: Path, name: str, what: str = "", note: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the cache lock `name` while doing `what` (said to whoever waits); after NOTE_AFTER seconds of waiting,
    `note` is told once who holds it."""
    lock, sidecar = _lock(cache_dir, name)
    try:
        with _unopenable(lock):
            lock.acquire(timeout=NOTE_AFTER if note is not None else WAIT_AT_MOST)
    except filelock.Timeout:
        if note is None:
            raise _waited_too_long(name, sidecar) from None
        note(f"waiting for the cache lock {name}: {_holder(sidecar)}")
        try:
            with _unopenable(lock):
                lock.acquire(timeout=WAIT_AT_MOST)
        except filelock.Timeout:
            raise _waited_too_long(name, sidecar) from None
    with _held(lock, sidecar, what):
        yield
