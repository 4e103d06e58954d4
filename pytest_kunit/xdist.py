"""pytest-xdist integration: kunit cases travel in whole boot batches; every other test is scheduled as the chosen
`--dist` mode would schedule it."""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling, LoadGroupScheduling, LoadScopeScheduling

from .blame import OUTSIDE_KEY
from .cache import load_durations
from .coverage_report import COVERAGE_KEY
from .fragments import find_fragments
from .kcidb import BuiltKernel
from .planning import Durations, case_from_nodeid, plan_batches
from .remote import CACHE_ID_KEY, FRAGMENTS_KEY, SERVICE_KEY, ImageService, cache_id
from .session import STATE
from .workers import DURATIONS_KEY

# The --dist modes this scheduler serves, each with how it scopes tests that are not kunit cases: None for the test
# itself (load, worksteal), else the rule of xdist's own scheduler for that mode (so it is the installed xdist's rule).
SCOPE_RULES: dict[str, Any] = {
    "load": None,
    "worksteal": None,
    "loadscope": LoadScopeScheduling._split_scope,
    "loadfile": LoadFileScheduling._split_scope,
    "loadgroup": LoadGroupScheduling._split_scope,
}
BATCH_SCOPE = "kunit-batch:"


class KunitScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """LoadScope scheduling whose scope, for a kunit case, is its boot batch (the plan every worker computes too),
    and for any other test the unit its --dist mode uses: the test itself (load, worksteal), its module or class
    (loadscope), its file (loadfile), its xdist_group (loadgroup)."""

    def __init__(self, config: pytest.Config, log: Any, mode: str, durations: Durations) -> None:
        super().__init__(config, log)
        self._mode = mode
        self._durations = durations
        self._plan: dict[str, str] | None = None
        self._boots_first = False

    def _kunit_plan(self) -> dict[str, str]:
        if self._plan is None:
            collection = next(iter(self.registered_collections.values()))
            cases = [case for case in map(case_from_nodeid, collection) if case is not None]
            isolate = self.config.stash[STATE].settings.isolate
            self._plan = plan_batches(cases, len(self.nodes), isolate, self._durations)
        return self._plan

    def _split_scope(self, nodeid: str) -> str:
        batch = self._kunit_plan().get(nodeid)
        if batch is not None:
            return BATCH_SCOPE + batch
        rule = SCOPE_RULES[self._mode]
        return nodeid if rule is None else str(rule(self, nodeid))

    def _assign_work_unit(self, node: Any) -> None:
        if not self._boots_first:
            # A batch is a boot, the longest unit there is: hand batches out first (in their order), so every worker
            # starts its guest at once instead of one worker booting batch after batch while the other runs tests.
            self._boots_first = True
            for scope in [scope for scope in self.workqueue if scope.startswith(BATCH_SCOPE)][::-1]:
                self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)


class KunitXdist:
    """The controller's side: the scheduler, the durations workers plan with, the figures workers send back."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        settings = config.stash[STATE].settings
        self.durations = load_durations(settings.cache_dir, config.rootpath)
        self.images: ImageService | None = None  # made for the first worker: a worker process has no use for it

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[DURATIONS_KEY] = self.durations
        # Every worker may use it: only one whose cache is not this one does (remote.py).
        if self.images is None:
            self.images = ImageService(self.config.stash[STATE], find_fragments(self.config))
        node.workerinput[SERVICE_KEY] = self.images.open_for(node)
        node.workerinput[FRAGMENTS_KEY] = self.images.fragments.tokens
        node.workerinput[CACHE_ID_KEY] = cache_id(self.config.stash[STATE].settings.cache_dir)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        mode = config.getvalue("dist")
        if mode in SCOPE_RULES:
            return KunitScheduling(config, log, mode, self.durations)
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        state = self.config.stash[STATE]
        if output.get("kunit_stats"):
            state.stats.merge(output["kunit_stats"])
        state.runner.outside.load(output.get(OUTSIDE_KEY, []))
        state.runner.coverage_boots += output.get(COVERAGE_KEY, [])
        for kernel, suites in output.get("kunit_suite_seconds", {}).items():
            state.runner.suite_seconds.setdefault(kernel, {}).update(suites)
        for fields in output.get("kunit_kernels", []):
            kernel = BuiltKernel(**fields)
            known = state.kernels.get(kernel.key)
            if known is None or known.seconds is None:  # the worker that built it knows how long it took
                state.kernels[kernel.key] = kernel
