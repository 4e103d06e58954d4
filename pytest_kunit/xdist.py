"""pytest-xdist integration: every worker gets whole batches, so a suite is booted by one guest only."""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from .runner import plan_batches
from .state import STATE, load_durations


class KunitScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """LoadScope scheduling whose scopes are the runner's boot batches (the same plan each worker computes)."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._plan: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._plan is None:
            collection = next(iter(self.registered_collections.values()))
            settings = self.config.stash[STATE].settings
            durations = load_durations(settings.cache_dir, self.config.rootpath)
            self._plan = plan_batches(collection, len(self.nodes), settings.isolate, durations)
        return self._plan.get(nodeid) or super()._split_scope(nodeid)


class KunitXdist:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") in ("load", "loadscope", "loadgroup"):
            return KunitScheduling(config, log)
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        state = self.config.stash[STATE]
        if output.get("kunit_stats"):
            state.stats.merge(output["kunit_stats"])
        for kernel, suites in output.get("kunit_suite_seconds", {}).items():
            state.runner.suite_seconds.setdefault(kernel, {}).update(suites)
