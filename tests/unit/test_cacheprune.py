"""Eviction on a planted cache: what no run used for a while goes, what a run used lately or holds locked stays, and
the consoles of all but the latest runs go."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_kunit.host.cachelayout import BUILDS, CONFIGS, IMAGES, SOURCES, CacheLayout
from pytest_kunit.host.cacheprune import DAY, Bounds, prune, summary
from pytest_kunit.host.locking import cache_lock

NOW = 1_800_000_000.0


def aged(path: Path, days: float) -> Path:
    os.utime(path, (NOW - days * DAY, NOW - days * DAY))
    return path


def planted(layout: CacheLayout, area_dir: Path, key: str, used_days_ago: float | None) -> Path:
    """An entry with a file in it, its use stamp `used_days_ago` (None: an entry from before stamps, as old)."""
    entry = area_dir / key
    entry.mkdir(parents=True)
    (entry / "vmlinux").write_bytes(b"x" * 8192)
    aged(entry, 100)
    if used_days_ago is not None:
        stamp = layout.used_stamp(entry)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
        aged(stamp, used_days_ago)
    return entry


def test_entries_unused_past_the_bound_go_and_the_rest_stay(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path)
    old_build = planted(layout, layout.builds(), "old", 40)
    new_build = planted(layout, layout.builds(), "new", 2)  # made long ago, used lately
    unstamped = planted(layout, layout.area(SOURCES), "unstamped", None)  # from before use stamps: its own time
    old_config = planted(layout, layout.area(CONFIGS), "cfg", 31)
    old_image = planted(layout, layout.area(IMAGES), "digest", 45)
    removed = prune(tmp_path, Bounds(max_age_days=30, keep_runs=20), now=NOW)
    assert {entry.path for entry in removed} == {old_build, unstamped, old_config, old_image}
    assert all(not path.exists() for path in (old_build, unstamped, old_config, old_image))
    assert not layout.used_stamp(old_build).exists()
    assert new_build.exists() and layout.used_stamp(new_build).exists()
    assert all(entry.size >= 8192 for entry in removed)
    assert "unused for more than 30 days" in summary(removed)


def test_an_entry_another_run_holds_locked_stays(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path)
    busy = planted(layout, layout.builds(), "busy", 90)
    with cache_lock(tmp_path, layout.lock_name(BUILDS, "busy"), "building"):
        assert prune(tmp_path, Bounds(30, 20), now=NOW) == []
    assert busy.exists()
    assert [entry.path for entry in prune(tmp_path, Bounds(30, 20), now=NOW)] == [busy]


def test_zero_bounds_keep_everything(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path)
    old = planted(layout, layout.builds(), "old", 4000)
    console = layout.console_dir("digest") / "20200101-000000-abc-1-1.log"
    console.parent.mkdir(parents=True)
    console.write_text("ok\n")
    assert prune(tmp_path, Bounds(0, 0), now=NOW) == []
    assert old.exists() and console.exists()


def console(layout: CacheLayout, digest: str, run: str, pid: int, boot: int, days: float) -> Path:
    path = layout.console_dir(digest) / CacheLayout.console_name("20240101-000000", run, pid, boot)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("console\n")
    return aged(path, days)


def test_consoles_of_all_but_the_latest_runs_go(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path)
    # Three runs, newest first; a run's boots may be of several images and several processes (xdist workers).
    newest = [console(layout, "a", "ccc", 11, 1, 1), console(layout, "b", "ccc", 12, 1, 1)]
    middle = [console(layout, "a", "bbb", 10, 1, 5)]
    oldest = [console(layout, "c", "aaa", 9, 1, 9), console(layout, "c", "aaa", 9, 2, 9)]
    legacy = layout.console_dir("c") / "20200101-000000-4242-1.log"  # written before runs were named: its pid's run
    legacy.write_text("old\n")
    aged(legacy, 20)
    stray = layout.console_dir("a") / "notes.log"  # not a console a run wrote
    stray.write_text("mine\n")
    removed = prune(tmp_path, Bounds(max_age_days=30, keep_runs=2), now=NOW)
    assert {entry.path for entry in removed} == {*oldest, legacy}
    assert all(path.exists() for path in [*newest, *middle, stray])
    assert not layout.console_dir("c").exists()  # emptied: gone too


def test_coverage_counters_of_all_but_the_latest_runs_go(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path)
    runs = [layout.coverage_run(f"run{number}") for number in range(3)]
    for days, run in zip((9, 5, 1), runs, strict=True):
        (run / "1-1").mkdir(parents=True)
        aged(run, days)
    removed = prune(tmp_path, Bounds(max_age_days=30, keep_runs=2), now=NOW)
    assert [entry.path for entry in removed] == [runs[0]]
    assert runs[1].exists() and runs[2].exists()


def test_consoles_replayed_from_stdin_but_the_latest_go(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path)
    replays = [layout.replay(f"{number:016x}") for number in range(3)]
    layout.replays().mkdir(parents=True)
    for days, replay in zip((9, 5, 1), replays, strict=True):
        replay.write_text("KTAP version 1\n")
        aged(replay, days)
    removed = prune(tmp_path, Bounds(max_age_days=30, keep_runs=2), now=NOW)
    assert [entry.path for entry in removed] == [replays[0]]
    assert replays[1].exists() and replays[2].exists()


def test_a_cache_with_nothing_in_it_prunes_nothing(tmp_path: Path) -> None:
    assert prune(tmp_path, Bounds(30, 20), now=NOW) == []
    assert summary([]) == "removed 0 cache entries, 0.0 MB freed"
