"""pytest-xdist: kunit cases travel in whole boot batches, each booted once, in every --dist mode; every other test is
scheduled by xdist's own scheduler for the mode (ordinary tests beside kunit items spread, group, stay by file or
scope, are stolen, or run on every worker, as they would alone); and a run started inside another run's worker is a
run of its own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from xdist.remote import Producer

from pytest_kunit.scaleout.scheduling import KunitScheduling

from .conftest import FakeKernel

# Ordinary tests beside the kunit items; each notes which xdist worker ran it.
PYTHON_TESTS = """
import os, time
import pytest

def note(request):
    with open({log!r}, "a") as stream:
        stream.write(request.node.nodeid.split("@")[0] + " " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    time.sleep({delay})

@pytest.mark.parametrize("number", range(8))
def test_spread(request, number):
    note(request)

@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("number", range(4))
def test_grouped(request, number):
    note(request)

class TestScope:
    @pytest.mark.parametrize("number", range(3))
    def test_in_class(self, request, number):
        note(request)
"""


def ran_on(log: Path) -> dict[str, str]:
    """Each ordinary test's node id -> the worker that ran it."""
    return dict(line.split() for line in log.read_text().splitlines())


def workers(ran: dict[str, str], prefix: str) -> set[str]:
    return {worker for nodeid, worker in ran.items() if nodeid.startswith(prefix)}


def mixed(project: pytest.Pytester, tmp_path: Path, delay: float) -> Path:
    """The project's kunitconfig plus test_mixed.py, whose tests take `delay` s; returns the log they write."""
    log = tmp_path / "ran.log"
    project.makepyfile(test_mixed=PYTHON_TESTS.format(log=str(log), delay=delay))
    return log


def slow_boots(fake_kernel: FakeKernel) -> None:
    """Three suites whose cases take a while: a scheduler that deals a batch's cases to both workers makes the
    second worker boot that batch again while the first is still booting it."""
    spec = fake_kernel.spec()
    spec["suites"].append({"name": "third", "cases": [{"name": "one"}, {"name": "two"}]})
    spec["case_delay"] = 0.2
    fake_kernel.write_spec(spec)


def run(project: pytest.Pytester, fake_kernel: FakeKernel, *extra: str) -> None:
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2", *extra))
    third = 2 if len(fake_kernel.spec()["suites"]) == 3 else 0
    result.assert_outcomes(passed=3 + third + 15, failed=2, skipped=1)


def assert_batches_booted_once(fake_kernel: FakeKernel) -> None:
    """No suite was booted twice, and every suite was booted, each by an xdist worker."""
    boots = fake_kernel.test_boots()
    suites = [suite for boot in boots for suite in (boot["params"].get("kunit.filter_glob") or "").split(",")]
    assert sorted(suites) == sorted(suite["name"] for suite in fake_kernel.spec()["suites"])
    assert all(boot["worker"] in ("gw0", "gw1") for boot in boots)


def test_ordinary_tests_beside_kunit_items_spread_over_both_workers(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    # Tests slow enough that one worker cannot run them all while the other boots.
    log = mixed(project, tmp_path, delay=0.25)
    run(project, fake_kernel)
    ran = ran_on(log)
    assert len(ran) == 15
    assert workers(ran, "test_mixed.py::test_spread") == {"gw0", "gw1"}
    assert_batches_booted_once(fake_kernel)


def xdist_keeps_a_group_on_one_worker(project: pytest.Pytester, log: Path) -> bool:
    """Whether xdist's own loadgroup scheduler, without pytest-kunit, keeps test_mixed.py's group on one worker:
    pytest-xdist 3.8 on pytest 9.2 deals a group's tests to both workers by itself."""
    result = project.runpytest_subprocess("-p", "no:kunit", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup")
    result.assert_outcomes(passed=15)
    grouped = workers(ran_on(log), "test_mixed.py::test_grouped")
    log.unlink()
    return len(grouped) == 1


def test_loadgroup_keeps_a_group_on_one_worker_and_batches_whole(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    """pytest-kunit leaves the other tests to xdist's own scheduler: a group stays on one worker wherever xdist keeps
    it there alone, and the kernel's batches are each booted once either way."""
    slow_boots(fake_kernel)
    log = mixed(project, tmp_path, delay=0)
    xdist_keeps_groups = all(xdist_keeps_a_group_on_one_worker(project, log) for _ in range(2))
    run(project, fake_kernel, "--dist", "loadgroup")
    if xdist_keeps_groups:
        assert len(workers(ran_on(log), "test_mixed.py::test_grouped")) == 1
    assert_batches_booted_once(fake_kernel)


def test_worksteal_never_boots_a_batch_twice(project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path) -> None:
    # The worker that is still booting is the one worksteal would steal from.
    slow_boots(fake_kernel)
    mixed(project, tmp_path, delay=0)
    run(project, fake_kernel, "--dist", "worksteal")
    assert_batches_booted_once(fake_kernel)


def test_loadfile_keeps_a_file_on_one_worker(project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path) -> None:
    slow_boots(fake_kernel)
    log = mixed(project, tmp_path, delay=0)
    run(project, fake_kernel, "--dist", "loadfile")
    assert len(set(ran_on(log).values())) == 1
    assert_batches_booted_once(fake_kernel)


def test_loadscope_keeps_a_class_on_one_worker(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    slow_boots(fake_kernel)
    log = mixed(project, tmp_path, delay=0)
    run(project, fake_kernel, "--dist", "loadscope")
    ran = ran_on(log)
    assert len(workers(ran, "test_mixed.py::TestScope")) == 1
    # Module-level functions share the module's scope.
    assert len(workers(ran, "test_mixed.py::test_")) == 1
    assert_batches_booted_once(fake_kernel)


def test_each_runs_the_other_tests_on_every_worker_and_boots_each_batch_once(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    slow_boots(fake_kernel)
    log = mixed(project, tmp_path, delay=0)
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2", "--dist", "each"))
    result.assert_outcomes(passed=3 + 2 + 2 * 15, failed=2, skipped=1)
    assert Counter(line.split()[1] for line in log.read_text().splitlines()) == {"gw0": 15, "gw1": 15}
    assert_batches_booted_once(fake_kernel)


def test_a_batch_is_one_unit_of_work(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """With kunit items only, -n 2 boots each batch once on its own worker: both workers boot."""
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    assert_batches_booted_once(fake_kernel)
    assert Counter(boot["worker"] for boot in fake_kernel.test_boots()) == {"gw0": 1, "gw1": 1}


# --- the scheduler itself, driven as xdist's controller drives it -------------------------------------------------


class Worker:
    """A worker as xdist's runs: it runs the tests sent to it in order, one only once the next has arrived or it was
    told to shut down; it gives back stolen tests that are still waiting (xdist.remote's rule)."""

    def __init__(self, name: str, pace: int = 1) -> None:
        self.gateway = SimpleNamespace(id=name, spec=name)
        self.pace = pace  # runs a test every `pace` steps
        self.queue: list[int] = []
        self.ran: list[int] = []
        self.stolen: list[list[int]] = []  # answers to steal requests, not yet read by the controller
        self.steals = 0
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        assert not self.shutting_down, "sent tests after its shutdown"
        self.queue.extend(indices)

    def send_runtest_all(self) -> None:
        raise AssertionError("every test, kunit cases too, sent to one worker")

    def send_steal(self, indices: list[int]) -> None:
        self.steals += 1
        waiting = self.queue[1:]  # the first is already held as the next test
        stolen = list(indices) if all(index in waiting for index in indices) else []
        for index in stolen:
            self.queue.remove(index)
        self.stolen.append(stolen)

    def shutdown(self) -> None:
        self.shutting_down = True

    def step(self, number: int) -> int | None:
        if number % self.pace or not (len(self.queue) >= 2 or (self.queue and self.shutting_down)):
            return None
        self.ran.append(self.queue.pop(0))
        return self.ran[-1]


COLLECTION = [
    *(f"kunit.kunitconfig::example::case{number}" for number in range(4)),
    *(f"kunit.kunitconfig::other::case{number}" for number in range(4)),
    *(f"test_mixed.py::test_spread[{number}]" for number in range(8)),
    *(f"test_mixed.py::test_grouped[{number}]@shared" for number in range(4)),
    "test_mixed.py::test_mail[a@b]",  # an @ inside a parameter id is no group
    "test_mixed.py::test_mail[c@b]",
    *(f"test_mixed.py::TestScope::test_in_class[{number}]" for number in range(3)),
    *(f"test_other.py::test_other[{number}]" for number in range(40)),
]
MODES = ["load", "loadscope", "loadfile", "loadgroup", "worksteal", "each"]


def scheduler_for(pytester: pytest.Pytester, mode: str) -> KunitScheduling:
    config = pytester.parseconfigure(
        "-p", "no:cacheprovider", "-p", "no:benchmark", "--kunit", "--tx=2*popen", "--dist", mode
    )
    scheduler = config.hook.pytest_xdist_make_scheduler(config=config, log=Producer("test", enabled=False))
    assert isinstance(scheduler, KunitScheduling)
    return scheduler


def drive(scheduler: KunitScheduling, workers: list[Worker]) -> None:
    """xdist's controller: collections in, then each test done reported, until the scheduler says the tests are
    finished and every worker is shut down and has run what it was sent."""
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    for number in range(10_000):
        if scheduler.tests_finished:
            for worker in scheduler.nodes:
                worker.shutdown()
        for worker in workers:
            for stolen in worker.stolen:
                scheduler.remove_pending_tests_from_node(worker, stolen)
            worker.stolen.clear()
            done = worker.step(number)
            if done is not None:
                scheduler.mark_test_complete(worker, done)
        if all(worker.shutting_down and not worker.queue for worker in workers):
            return
    pytest.fail(f"never finished: {[(worker.queue, worker.shutting_down) for worker in workers]}")


def schedule(pytester: pytest.Pytester, mode: str, slow: bool = False) -> dict[str, str]:
    """Run the scheduler over COLLECTION on two workers (the second three times slower with `slow`): node id -> the
    worker that ran it; every test ran exactly once (under --dist each: every other test once on each worker)."""
    scheduler = scheduler_for(pytester, mode)
    workers = [Worker("gw0"), Worker("gw1", pace=3 if slow else 1)]
    drive(scheduler, workers)
    runs = Counter(COLLECTION[index] for worker in workers for index in worker.ran)
    kunit = [nodeid for nodeid in COLLECTION if nodeid.startswith("kunit.kunitconfig::")]
    expected = Counter({nodeid: 1 if nodeid in kunit or mode != "each" else 2 for nodeid in COLLECTION})
    assert runs == expected
    return {COLLECTION[index]: worker.gateway.id for worker in workers for index in worker.ran}


@pytest.mark.parametrize("slow", [False, True], ids=["even", "slow-worker"])
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_runs_each_test_once_and_each_batch_whole_on_one_worker(
    pytester: pytest.Pytester, mode: str, slow: bool
) -> None:
    ran = schedule(pytester, mode, slow)
    # Two suites of equal weight on two workers: one batch each.
    example, other = workers(ran, "kunit.kunitconfig::example"), workers(ran, "kunit.kunitconfig::other")
    assert len(example) == len(other) == 1
    assert example | other == {"gw0", "gw1"}


def test_worksteal_still_steals_the_other_tests(pytester: pytest.Pytester) -> None:
    scheduler = scheduler_for(pytester, "worksteal")
    workers_ = [Worker("gw0"), Worker("gw1", pace=5)]
    drive(scheduler, workers_)
    assert workers_[0].steals + workers_[1].steals > 0
    assert len(workers_[0].ran) > len(workers_[1].ran)  # the fast worker took over the slow one's tests


@pytest.mark.parametrize(
    ("mode", "together", "spread"),
    [
        ("load", [], ["test_mixed.py::test_spread", "test_other.py"]),
        ("worksteal", [], ["test_other.py"]),
        ("loadgroup", ["test_mixed.py::test_grouped"], ["test_other.py"]),
        ("loadscope", ["test_mixed.py::test_", "test_mixed.py::TestScope", "test_other.py"], []),
        ("loadfile", ["test_mixed.py", "test_other.py"], []),
    ],
)
def test_other_tests_are_scoped_as_their_mode_scopes_them(
    pytester: pytest.Pytester, mode: str, together: list[str], spread: list[str]
) -> None:
    ran = schedule(pytester, mode)
    for prefix in together:
        assert len(workers(ran, prefix)) == 1, prefix
    for prefix in spread:
        assert workers(ran, prefix) == {"gw0", "gw1"}, prefix


def test_a_worker_crashing_in_a_batch_loses_no_test(pytester: pytest.Pytester) -> None:
    """The crashed case is the one reported; its batch's other cases, and the other test xdist's scheduler takes
    for the crashed one, run on the other worker."""
    scheduler = scheduler_for(pytester, "load")
    crashing, other = Worker("gw0"), Worker("gw1")
    for worker in (crashing, other):
        scheduler.add_node(worker)
    for worker in (crashing, other):
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    first = crashing.queue[0]
    assert COLLECTION[first].startswith("kunit.kunitconfig::")
    crashing_sent = list(crashing.queue)
    assert scheduler.remove_node(crashing) == COLLECTION[first]
    drive_rest(scheduler, other)
    ran = Counter(COLLECTION[index] for index in other.ran)
    assert set(ran) == set(COLLECTION) - {COLLECTION[first]}
    assert set(ran.values()) == {1}
    assert {COLLECTION[index] for index in crashing_sent[1:]} <= set(ran)


def drive_rest(scheduler: KunitScheduling, worker: Worker) -> None:
    for number in range(10_000):
        if scheduler.tests_finished:
            worker.shutdown()
        done = worker.step(number)
        if done is not None:
            scheduler.mark_test_complete(worker, done)
        if worker.shutting_down and not worker.queue:
            return
    pytest.fail("never finished")


def test_an_outer_runs_identity_does_not_leak_into_the_build_stamp(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a worker of an outer xdist run (`pytest -n 2 tests/plugin`) exports to everything it starts.
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "outer-run")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    sessions: list[str] = []
    for run_pytest in (project.runpytest_inprocess, project.runpytest_inprocess, project.runpytest_subprocess):
        extra = ("-n", "2") if run_pytest == project.runpytest_subprocess else ()
        # An edit since the last build: the directory tree is built again, and the stamp records this run's id.
        (fake_kernel.tree / "lib/kunit/kunit-example-test.c").write_text(f"/* run {len(sessions)} */\n")
        run_pytest(*fake_kernel.options(*extra)).assert_outcomes(passed=3, failed=2, skipped=1)
        (stamp,) = fake_kernel.cache.glob("build/*/.pytest-kunit-stamp")
        sessions.append(stamp.read_text().split()[1])
    assert "outer-run" not in sessions
    # Each run its own id (the inner -n 2 run too: its two workers share their own run's id, and build once).
    assert len(set(sessions)) == 3
    (make_runs,) = fake_kernel.cache.glob("build/*/make-runs")
    assert make_runs.read_text().split().count("vmlinux") == 3


def test_the_controller_shows_each_worker_s_build_and_boot_progress(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """Under -n a CI log showed nothing while a worker built (28 minutes of silence on 6.12's alltests): a worker's
    progress lines now reach the controller's output, each naming its worker."""
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.re_match_lines(
        [
            r"\[gw[01]\] kunit: configuring kernel in .*",
            r"\[gw[01]\] kunit: building kernel: make -j\d+ vmlinux .*",
            r"\[gw[01]\] kunit: built kunit.kunitconfig in .*",
        ]
    )
    result.stdout.re_match_lines([r"\[gw[01]\] kunit: booting the kernel of kunit.kunitconfig .*"])
