"""A cache others could write is refused before anything in it is trusted; files the runner makes in the cache are
never written through a link planted in their place."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_kunit.errors import KunitError
from pytest_kunit.host import locking
from pytest_kunit.host.cache import write_atomically
from pytest_kunit.host.cachedir import UntrustedCache, trusted_cache_dir
from pytest_kunit.host.cachelayout import TOP_DIRECTORIES, CacheLayout
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


@pytest.fixture
def umask_002() -> Iterator[None]:
    """A umask that makes directories group-writable (Debian's for users with a group of their own)."""
    before = os.umask(0o002)
    yield
    os.umask(before)


def modes_below(cache: Path) -> dict[str, int]:
    return {
        str(path.relative_to(cache)): path.stat().st_mode & 0o777
        for path in cache.rglob("*")
        if path.is_dir() and not path.is_symlink()
    }


@pytest.mark.usefixtures("umask_002")
def test_under_umask_002_what_the_cache_holds_is_open_to_no_one_else(tmp_path: Path) -> None:
    """Before, with umask 002 and an existing 0755 cache, locks/, build/ and the build directories came out 0775:
    anyone of the user's group could replace the UML binary or the compiler wrappers a run executes."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)
    cache = trusted_cache_dir(cache)
    layout = CacheLayout(cache)
    with cache_lock(cache, "build-x"):
        layout.build_dir("x").mkdir()  # as build.py makes it: with the umask
        layout.mark_used(layout.build_dir("x"))
        write_atomically(layout.case_list("x"), "{}")
    modes = modes_below(cache)
    assert {name: modes[name] for name in TOP_DIRECTORIES} == dict.fromkeys(TOP_DIRECTORIES, 0o700)
    assert modes["used/build"] == 0o700
    # Made with the umask, but inside build/, which no one else may enter.
    assert modes["build/x"] == 0o775


@pytest.mark.parametrize("name", ["locks", "build", "src"])
def test_a_top_directory_others_can_write_is_refused(tmp_path: Path, name: str) -> None:
    cache = tmp_path / "cache"
    (cache / name).mkdir(parents=True)
    cache.chmod(0o755)
    (cache / name).chmod(0o775)  # as a run under umask 002 left it before
    with pytest.raises(UntrustedCache) as refused:
        trusted_cache_dir(cache)
    assert refused.value.what.startswith(f"{cache / name} in the pytest-kunit cache can be written by its group")
    assert f"chmod -R go-w {cache}" in refused.value.remedy


def test_a_top_directory_others_can_only_read_is_closed_to_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "build" / "x").mkdir(parents=True)
    (cache / "build").chmod(0o755)
    trusted_cache_dir(cache)
    assert (cache / "build").stat().st_mode & 0o777 == 0o700


def test_a_planted_top_directory_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "cache").mkdir(mode=0o700)
    (tmp_path / "cache" / "build").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UntrustedCache, match="is a link or a file, not a directory"):
        trusted_cache_dir(tmp_path / "cache")


def test_every_path_of_the_layout_lies_in_a_top_directory(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path)
    paths = [
        layout.build_dir("k"),
        layout.source_tree("k"),
        layout.config_dir("k"),
        layout.fetched_image_dir("d"),
        layout.used_stamp(layout.build_dir("k")),
        layout.console_dir("d"),
        layout.replay("d"),
        layout.coverage_run("r"),
        layout.case_list("d"),
        layout.durations(tmp_path),
        layout.kvm_verdict("k"),
        layout.shared_suites("d"),
        layout.initramfs(1),
        layout.locks(),
    ]
    assert {path.relative_to(tmp_path).parts[0] for path in paths} == set(TOP_DIRECTORIES)


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
    with pytest.raises(KunitError) as refused, cache_lock(tmp_path / "cache", "build-x"):
        pass
    assert target.read_text() == "precious\n" and target.stat().st_mode & 0o777 == 0o600
    # Before, a raw OSError (ELOOP) and its traceback: now a paragraph naming the link and what to do.
    lock = tmp_path / "cache/locks/build-x.lock"
    assert refused.value.what.startswith(f"The cache lock {lock} cannot be opened: ")
    assert "(it is a link, which a lock file never is)" in refused.value.what
    assert f"rm {lock}" in refused.value.remedy


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
