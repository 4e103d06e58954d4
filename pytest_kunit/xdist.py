"""pytest-xdist integration: every worker gets whole batches, so a suite is booted by one guest only."""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from .runner import plan_batches
from .state import STATE


class KunitScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """LoadScope scheduling whose scopes are the runner's boot batches (the same plan each worker computes)."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._plan: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._plan is None:
            collection = next(iter(self.registered_collections.values()))
            self._plan = plan_batches(collection, len(self.nodes), self.config.stash[STATE].settings.isolate)
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
        stats = getattr(node, "workeroutput", {}).get("kunit_stats")
        if stats:
            self.config.stash[STATE].stats.merge(stats)
