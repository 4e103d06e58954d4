"""The cache's bounds through the whole plugin: `--kunit-cache-prune` prunes, says what went and exits without a
boot; every run keeps the consoles of the latest runs only; without --kunit nothing is touched."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_kunit.host.cachelayout import CacheLayout

from .conftest import FakeKernel, no_traceback


def age(path: Path, days: float) -> None:
    when = time.time() - days * 86400
    os.utime(path, (when, when))


def old_console(cache: Path) -> Path:
    """A console an earlier run left, 10 days ago."""
    path = CacheLayout(cache).console_dir("0123") / CacheLayout.console_name("20240101-000000", "abcdef", 7, 1)
    path.parent.mkdir(parents=True)
    path.write_text("# qemu\n")
    age(path, 10)
    return path


def test_prune_removes_what_no_run_used_lately_and_exits(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    layout = CacheLayout(fake_kernel.cache)
    (build,) = layout.builds().iterdir()
    age(layout.used_stamp(build), 40)
    boots = len(fake_kernel.boots())
    result = project.runpytest(*fake_kernel.options("--kunit-cache-prune"))
    assert result.ret == 0
    no_traceback(result)
    result.stdout.fnmatch_lines([f"removed {build} (*MB): unused for more than 30 days", "kunit cache *: removed 1 *"])
    assert not build.exists()
    assert len(fake_kernel.boots()) == boots  # nothing collected, built or booted
    assert "passed" not in result.stdout.str()


def test_prune_keeps_what_its_bounds_allow(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    (build,) = CacheLayout(fake_kernel.cache).builds().iterdir()
    age(CacheLayout(fake_kernel.cache).used_stamp(build), 40)
    result = project.runpytest(*fake_kernel.options("--kunit-cache-prune", "-o", "kunit_cache_max_age=60"))
    assert result.ret == 0
    result.stdout.fnmatch_lines(["kunit cache *: removed 0 cache entries, 0.0 MB freed"])
    assert build.exists()


def test_a_run_keeps_the_consoles_of_the_latest_runs(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    earlier = old_console(fake_kernel.cache)
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-cache-keep-consoles=1"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["kunit cache: removed 1 cache entry, * (a console of a run before the last 1)*"])
    assert not earlier.exists()
    assert len(list(fake_kernel.cache.glob("consoles/*/*.log"))) == 1  # this run's own


def test_a_run_within_the_bounds_removes_nothing(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    earlier = old_console(fake_kernel.cache)
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=2)
    assert "kunit cache: removed" not in result.stdout.str()
    assert earlier.exists()


def test_without_kunit_the_prune_flag_touches_nothing(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    earlier = old_console(fake_kernel.cache)
    options = [option for option in fake_kernel.options() if option != "--kunit"]
    result = project.runpytest(*options, "--kunit-cache-prune", "--kunit-cache-keep-consoles=bad")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert earlier.exists()
    assert "kunit cache" not in result.stdout.str()


def test_a_bad_bound_is_a_usage_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-cache-prune", "--kunit-cache-max-age=-1"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    no_traceback(result)
    result.stderr.fnmatch_lines(["*--kunit-cache-max-age: '-1' is not a whole number, 0 or more*"])
