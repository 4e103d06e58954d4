"""A cache others could write is refused before anything in it is trusted; files the runner makes in the cache are
never written through a link planted in their place."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_kunit.errors import KunitError
from pytest_kunit.host import locking
from pytest_kunit.host.cachedir import UntrustedCache, trusted_cache_dir
from pytest_kunit.host.locking import cache_lock


def test_a_new_cache_is_made_private(tmp_path: Path) -> None:
    cache = trusted_cache_dir(tmp_path / "new" / "cache")
    assert cache.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777, 0o1777])
def test_a_cache_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(mode)
    with pytest.raises(UntrustedCache) as refused:
        trusted_cache_dir(cache)
    assert "can be written by its group or by anyone" in refused.value.what
    assert f"chmod go-w {cache}" in refused.value.remedy


def test_a_cache_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(UntrustedCache, match="not to you"):
        trusted_cache_dir(tmp_path)


def test_a_linked_cache_is_named_by_its_real_path(tmp_path: Path) -> None:
    """make compiles the trees under the cache by their real paths, and decode_stacktrace.sh and gcovr strip only
    the path they are given: a cache reached through a link (~/.cache on another disk) is handed on by its real path,
    so that crash frames read `lib/x.c:1` and coverage finds lib/kunit, not the tree's absolute name."""
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "cache").symlink_to(tmp_path / "elsewhere")
    assert trusted_cache_dir(tmp_path / "cache") == tmp_path / "elsewhere"


def test_a_link_to_someone_elses_directory_is_judged_by_that_directory(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (tmp_path / "cache").symlink_to(shared)
    with pytest.raises(UntrustedCache):
        trusted_cache_dir(tmp_path / "cache")


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text("precious\n")
    path.chmod(0o600)
    return path


def test_a_planted_holder_link_is_not_written_through(tmp_path: Path) -> None:
    """Before the fix, the lock's holder note was written through a `.holder` link onto the victim's file."""
    target = victim(tmp_path)
    (tmp_path / "cache/locks").mkdir(parents=True)
    (tmp_path / "cache/locks/build-x.holder").symlink_to(target)
    with cache_lock(tmp_path / "cache", "build-x", "building"):
        assert (tmp_path / "cache/locks/build-x.holder").read_text().endswith("building\n")
        assert not (tmp_path / "cache/locks/build-x.holder").is_symlink()
    assert target.read_text() == "precious\n"


def test_a_planted_lock_link_does_not_truncate_or_remode(tmp_path: Path) -> None:
    """filelock before 3.20.1 opened the lock path through a link, truncating and re-moding its target."""
    target = victim(tmp_path)
    (tmp_path / "cache/locks").mkdir(parents=True)
    (tmp_path / "cache/locks/build-x.lock").symlink_to(target)
    try:
        with cache_lock(tmp_path / "cache", "build-x"):
            pass
    except OSError:
        pass  # refusing the planted link outright is as good
    assert target.read_text() == "precious\n" and target.stat().st_mode & 0o777 == 0o600


def test_a_lock_held_past_the_deadline_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a waiter behind a stuck holder (a hung build) waited forever."""
    monkeypatch.setattr(locking, "WAIT_AT_MOST", 0.05)
    monkeypatch.setattr(locking, "NOTE_AFTER", 0.01)
    notes: list[str] = []
    # Another thread's FileLock contends as another process's would.
    with cache_lock(tmp_path, "build-x", "building the kernel"), ThreadPoolExecutor(1) as pool:
        failure = pool.submit(lambda: cache_lock(tmp_path, "build-x", note=notes.append).__enter__()).exception()
    assert isinstance(failure, KunitError)
    assert notes and "waiting for the cache lock build-x" in notes[0]
    assert f"held by pid {os.getpid()} (building the kernel)" in failure.what and "gave up" in failure.what
