"""pytest-kunit's hooks: wiring only; each concern lives in its own module."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from . import options
from .items import KunitconfigFile, collects
from .runner import plan_batches
from .state import STATE, SessionState, load_durations, save_durations


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = options.resolve(config)
    if not settings.enabled:
        return
    config.stash[STATE] = SessionState(config, settings)
    if config.pluginmanager.hasplugin("xdist"):
        from .xdist import KunitXdist

        config.pluginmanager.register(KunitXdist(config), "kunit-xdist")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if STATE in parent.config.stash and collects(parent.config, file_path):
        return KunitconfigFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    durations = load_durations(state.settings.cache_dir, session.config.rootpath)
    nodeids = [item.nodeid for item in session.items]
    state.runner.plan = plan_batches(nodeids, workers, state.settings.isolate, durations)


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        stats = asdict(state.stats)
        stats.pop("filters")
        workeroutput["kunit_stats"] = stats
        workeroutput["kunit_suite_seconds"] = state.runner.suite_seconds
    else:
        save_durations(state.settings.cache_dir, session.config.rootpath, state.runner.suite_seconds)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    stats = state.stats
    terminalreporter.write_sep("-", "kunit")
    terminalreporter.write_line(
        f"kernel builds: {stats.builds} ({stats.build_seconds:.1f} s); "
        f"guest boots: {stats.boots} ({stats.boot_seconds:.1f} s)"
    )
    if config.option.verbose > 0:
        for number, kernel_filter in enumerate(stats.filters, 1):
            terminalreporter.write_line(f"boot {number}: kunit.filter_glob={kernel_filter or '(none: every case)'}")
