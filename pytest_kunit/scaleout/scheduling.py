"""pytest-xdist integration: kunit cases travel in whole boot batches, each batch to one worker; every other test is
scheduled by the scheduler xdist (or another plugin) makes for the chosen `--dist` mode, which sees only those tests."""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from ..fragments.files import find_fragments
from ..fragments.session import STATE
from ..guest.planning import case_from_nodeid, plan_batches
from ..host.cache import cache_id, load_durations
from ..host.cachelayout import CacheLayout
from ..model import Durations
from .image_service import ImageService
from .protocol import ProtocolMismatch, WorkerInput, WorkerOutput
from .workers import given_run_id

# A worker is given more kunit work while fewer of its kunit cases than this are pending: a worker runs a test only
# once the next one has arrived (or it was told to shut down), so one pending case is a worker waiting for work.
MIN_PENDING = 2


class _Worker:
    """A worker as the other tests' scheduler sees it: its indices are into the collection of those tests alone, and
    its shutdown waits until no kunit work is left to hand out (the worker could take none after it). It has what
    xdist's schedulers use of a worker, and nothing else: its gateway (whose id and spec name it), whether it is
    shutting down, the three requests that send it tests or steal them back, and its shutdown."""

    def __init__(self, node: Any, scheduler: KunitScheduling) -> None:
        self.node = node
        self.scheduler = scheduler
        self.asked_down = False

    @property
    def gateway(self) -> Any:
        return self.node.gateway

    def __repr__(self) -> str:
        return f"<kunit view of {self.node!r}>"

    @property
    def shutting_down(self) -> bool:
        return self.asked_down or bool(self.node.shutting_down)

    def send_runtest_some(self, indices: Iterable[int]) -> None:
        self.scheduler.send(self.node, [self.scheduler.ordinary[index] for index in indices])

    def send_runtest_all(self) -> None:  # --dist each: every other test, never the kunit cases
        self.send_runtest_some(range(len(self.scheduler.ordinary)))

    def send_steal(self, indices: Sequence[int]) -> None:
        self.node.send_steal([self.scheduler.ordinary[index] for index in indices])

    def shutdown(self) -> None:
        self.asked_down = True
        self.scheduler.shut_down_idle()


class KunitScheduling:
    """xdist's scheduler interface, by composition: `inner` (the chosen --dist mode's own scheduler) schedules the
    tests that are not kunit cases, over views of the workers; this hands out the kunit cases in the batches every
    worker plans too (planning.py), one worker per batch, batches before the other tests so every worker starts its
    guest at once."""

    def __init__(self, config: pytest.Config, log: Any, inner: Any, durations: Durations) -> None:
        self.config = config
        self.log = log
        self.inner = inner
        self.durations = durations
        self.matrix = config.stash[STATE].settings.matrix  # the architectures of a run over several
        self.workers: dict[Any, _Worker] = {}
        self.pending: dict[Any, list[int]] = {}  # every index sent to a worker and not yet done, in the order sent
        self.collections: dict[Any, list[str]] = {}
        self.collection: list[str] = []  # the first worker's: every other one must match it
        self.index: dict[str, int] = {}
        self.ordinary: list[int] = []  # the collection index of each test `inner` sees, by its own index
        self.inner_index: dict[int, int] = {}
        self.ours: set[int] = set()  # what this scheduler hands out: the kunit cases (and tests orphaned by a crash)
        self.batches: deque[list[int]] = deque()  # kunit work not yet handed out
        self.planned = False
        self.aborted = False

    # --- what xdist's controller asks --------------------------------------------------------------------------

    @property
    def nodes(self) -> list[Any]:
        return list(self.workers)

    @property
    def collection_is_completed(self) -> bool:
        return bool(self.inner.collection_is_completed)

    @property
    def tests_finished(self) -> bool:
        if self.aborted:
            return True
        if not self.planned or self.batches or not self.inner.tests_finished:
            return False
        return all(len(pending) < MIN_PENDING for pending in self.pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.inner.has_pending or self.batches or any(self.pending.values()))

    def add_node(self, node: Any) -> None:
        self.workers[node] = _Worker(node, self)
        self.pending[node] = []
        self.inner.add_node(self.workers[node])

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        if not self.collections:
            self.collection = list(collection)
            self.index = {nodeid: index for index, nodeid in enumerate(collection)}
            self.ours = {
                index for index, nodeid in enumerate(collection) if case_from_nodeid(nodeid, self.matrix) is not None
            }
            self.ordinary = [index for index in range(len(collection)) if index not in self.ours]
            self.inner_index = {index: position for position, index in enumerate(self.ordinary)}
        elif list(collection) != self.collection and self.planned:
            # A replacement worker that collected something else: given no test, as xdist's own schedulers do.
            self.log(collection_difference(self.collection, collection, self._first_id(), node.gateway.id))
            return
        self.collections[node] = list(collection)
        others = [nodeid for nodeid in collection if case_from_nodeid(nodeid, self.matrix) is None]
        self.inner.add_node_collection(self.workers[node], others)

    def schedule(self) -> None:
        if not self.planned:
            self.planned = True
            if not self._same_collections():
                self.aborted = True
                return
            self.batches = deque(self._plan())
        self.hand_out()  # before the other tests: a batch is a boot, the longest unit of work there is
        self.inner.schedule()

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        self.pending[node].remove(item_index)
        if item_index in self.ours:
            self.hand_out()
        else:
            self.inner.mark_test_complete(self.workers[node], self.inner_index[item_index], duration)

    def mark_test_pending(self, item: str) -> None:
        index = self.index[item]
        if index in self.ours:
            self.batches.appendleft([index])
            self.hand_out()
        else:
            self.inner.mark_test_pending(item)

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        """Tests stolen back from a worker (--dist worksteal): only ever the other tests."""
        for index in indices:
            self.pending[node].remove(index)
        self.inner.remove_pending_tests_from_node(self.workers[node], [self.inner_index[index] for index in indices])

    def remove_node(self, node: Any) -> str | None:
        """A worker gone: at its end with nothing pending, or crashed in the first test still pending on it (a worker
        runs its tests in the order they were sent)."""
        worker = self.workers.pop(node)
        pending = self.pending.pop(node)
        self.collections.pop(node, None)
        # A worker the other scheduler had no work for at all it has forgotten already (loadscope does).
        inner_crashed = self.inner.remove_node(worker) if worker in self.inner.nodes else None
        if not pending:
            return None
        crashed, left = pending[0], [index for index in pending[1:] if index in self.ours]
        if crashed in self.ours and inner_crashed is not None:
            # The other scheduler took its first test pending there for the crashed one; it never started: run it.
            orphan = self.index[inner_crashed]
            self.ours.add(orphan)
            left.append(orphan)
        if left:
            self.batches.appendleft(left)
        self.hand_out()
        return self.collection[crashed]

    # --- the kunit batches -------------------------------------------------------------------------------------

    def send(self, node: Any, indices: list[int]) -> None:
        if indices:
            self.pending[node].extend(indices)
            node.send_runtest_some(indices)

    def hand_out(self) -> None:
        """Give each worker that can take it kunit work until it has enough pending; then shut down the workers the
        other scheduler is done with."""
        for node in self.workers:
            if node not in self.collections:
                continue  # not collected yet, or collected something else
            while self.batches and not node.shutting_down and self._ours(node) < MIN_PENDING:
                self.send(node, self.batches.popleft())
        self.shut_down_idle()

    def shut_down_idle(self) -> None:
        if self.batches:
            return
        for node, worker in self.workers.items():
            if worker.asked_down and not node.shutting_down:
                node.shutdown()

    def _ours(self, node: Any) -> int:
        return sum(1 for index in self.pending[node] if index in self.ours)

    def _plan(self) -> list[list[int]]:
        """The batches, in the order of their first case; each the collection indices of its cases."""
        found = (case_from_nodeid(nodeid, self.matrix) for nodeid in self.collection)
        cases = [case for case in found if case is not None]
        plan = plan_batches(cases, len(self.workers), self.config.stash[STATE].settings.isolate, self.durations)
        batches: dict[str, list[int]] = {}
        for index in sorted(self.ours):
            batches.setdefault(plan[self.collection[index]], []).append(index)
        return list(batches.values())

    def _first_id(self) -> str:
        return str(next(iter(self.collections)).gateway.id)

    def _same_collections(self) -> bool:
        """Whether every worker collected the same tests (else the kunit cases' indices would mean different
        tests): a difference is a collection error, as with xdist's own schedulers."""
        same = True
        for node, collection in self.collections.items():
            difference = collection_difference(self.collection, collection, self._first_id(), node.gateway.id)
            if difference:
                same = False
                self.log(difference)
                report = pytest.CollectReport(node.gateway.id, "failed", difference, [])
                self.config.hook.pytest_collectreport(report=report)
        return same


class KunitXdist:
    """The controller's side: the scheduler, the durations workers plan with, the figures workers send back."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        settings = config.stash[STATE].settings
        self.durations = load_durations(settings.cache_dir, config.rootpath)
        self.images: ImageService | None = None  # made for the first worker: a worker process has no use for it

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # Every worker may use it: only one whose cache is not this one does (image_service.py).
        if self.images is None:
            self.images = ImageService(self.config.stash[STATE], find_fragments(self.config))
        given = WorkerInput(
            self.durations,
            self.images.fragments.tokens,
            cache_id(self.config.stash[STATE].settings.cache_dir),
            self.images.open_for(node),
        )
        node.workerinput.update(given.to_dict())

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        # The scheduler the run would have without pytest-kunit (xdist's for the --dist mode, or another plugin's).
        others = config.pluginmanager.subset_hook_caller("pytest_xdist_make_scheduler", remove_plugins=[self])
        inner = others(config=config, log=log)
        if inner is None:
            return None
        return KunitScheduling(config, log.kunitsched, inner, self.durations)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        try:
            output = WorkerOutput.from_dict(getattr(node, "workeroutput", {}))
        except ProtocolMismatch as error:
            pytest.exit(error.render(), returncode=pytest.ExitCode.INTERNAL_ERROR)
        if output is None:
            return  # a worker that crashed hands back nothing
        state = self.config.stash[STATE]
        state.stats.merge(output.stats)
        state.runner.outside.load(output.outside_reports)
        # Found by name where the worker kept them, in this process's cache (a worker on another host finds none).
        run = given_run_id(getattr(node, "workerinput", None))
        if run is not None:
            runs = CacheLayout(state.settings.cache_dir).coverage_run(run)
            found = (CacheLayout.coverage_boot(runs, name) for name in output.coverage_boots)
            state.runner.coverage_boots += [str(boot) for boot in found if boot is not None]
        for kernel_key, suites in output.suite_seconds.items():
            state.runner.suite_seconds.setdefault(kernel_key, {}).update(suites)
        for kernel in output.kernels:
            known = state.kernels.get(kernel.key)
            if known is None or known.seconds is None:  # the worker that built it knows how long it took
                state.kernels[kernel.key] = kernel


def collection_difference(first: Sequence[str], other: Sequence[str], first_id: str, other_id: str) -> str | None:
    """Why two workers' collections differ, as a unified diff of their node ids; None where they do not."""
    if list(first) == list(other):
        return None
    diff = difflib.unified_diff(list(first), list(other), fromfile=first_id, tofile=other_id, lineterm="")
    return f"Different tests were collected between {first_id} and {other_id}. The difference is:\n" + "\n".join(diff)
