"""pytest-xdist: kunit cases travel in whole boot batches and every other test is scheduled as its --dist mode
schedules it (ordinary tests beside kunit items spread, group, or stay by file or scope as they would alone); and a
run started inside another run's worker is a run of its own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from xdist.remote import Producer

from pytest_kunit.xdist import KunitScheduling

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


def test_loadgroup_keeps_a_group_on_one_worker_and_batches_whole(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    slow_boots(fake_kernel)
    log = mixed(project, tmp_path, delay=0)
    run(project, fake_kernel, "--dist", "loadgroup")
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


def test_a_batch_is_one_unit_of_work(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """With kunit items only, -n 2 boots each batch once on its own worker: both workers boot."""
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    assert_batches_booted_once(fake_kernel)
    assert Counter(boot["worker"] for boot in fake_kernel.test_boots()) == {"gw0": 1, "gw1": 1}


# --- the scheduler itself, driven as xdist's controller drives it -------------------------------------------------


class Node:
    """What the scheduler sees of a worker: it is sent test indices and told to shut down."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    *(f"kunit.kunitconfig::example::case{number}" for number in range(4)),
    *(f"kunit.kunitconfig::other::case{number}" for number in range(4)),
    *(f"test_mixed.py::test_spread[{number}]" for number in range(8)),
    *(f"test_mixed.py::test_grouped[{number}]@shared" for number in range(4)),
    "test_mixed.py::test_mail[a@b]",  # an @ inside a parameter id is no group
    "test_mixed.py::test_mail[c@b]",
    *(f"test_mixed.py::TestScope::test_in_class[{number}]" for number in range(3)),
    *(f"test_other.py::test_other[{number}]" for number in range(3)),
]


def scheduler_for(pytester: pytest.Pytester, mode: str) -> KunitScheduling:
    config = pytester.parseconfigure(
        "-p", "no:cacheprovider", "-p", "no:benchmark", "--kunit", "--tx=2*popen", "--dist", mode
    )
    scheduler = config.hook.pytest_xdist_make_scheduler(config=config, log=Producer("test", enabled=False))
    assert isinstance(scheduler, KunitScheduling)
    return scheduler


def schedule(pytester: pytest.Pytester, mode: str) -> dict[str, str]:
    """Run the scheduler over COLLECTION on two workers that finish tests at the same pace: node id -> worker."""
    scheduler = scheduler_for(pytester, mode)
    nodes = [Node("gw0"), Node("gw1")]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, COLLECTION)
    scheduler.schedule()
    done = dict.fromkeys(nodes, 0)
    while any(done[node] < len(node.sent) for node in nodes):
        for node in nodes:
            if done[node] < len(node.sent):
                scheduler.mark_test_complete(node, node.sent[done[node]])
                done[node] += 1
    ran = {COLLECTION[index]: node.gateway.id for node in nodes for index in node.sent}
    assert sorted(ran) == sorted(COLLECTION)  # every test sent once
    return ran


@pytest.mark.parametrize("mode", ["load", "worksteal", "loadscope", "loadfile", "loadgroup"])
def test_every_mode_sends_each_batch_whole_to_one_worker(pytester: pytest.Pytester, mode: str) -> None:
    ran = schedule(pytester, mode)
    # Two suites of equal weight on two workers: one batch each.
    example, other = workers(ran, "kunit.kunitconfig::example"), workers(ran, "kunit.kunitconfig::other")
    assert len(example) == len(other) == 1
    assert example | other == {"gw0", "gw1"}


@pytest.mark.parametrize(
    ("mode", "together", "spread"),
    [
        ("load", [], ["test_mixed.py::test_spread", "test_mixed.py::TestScope"]),
        ("worksteal", [], ["test_mixed.py::test_spread"]),
        ("loadgroup", ["test_mixed.py::test_grouped"], ["test_mixed.py::test_spread"]),
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


def test_an_at_sign_in_a_parameter_id_names_no_group(pytester: pytest.Pytester) -> None:
    scheduler = scheduler_for(pytester, "loadgroup")
    scheduler.add_node(Node("gw0"))
    scheduler.add_node_collection(scheduler.nodes[0], COLLECTION)
    assert scheduler._split_scope("test_mixed.py::test_mail[a@b]") == "test_mixed.py::test_mail[a@b]"
    assert scheduler._split_scope("test_mixed.py::test_grouped[0]@shared") == "shared"


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
