"""Batch planning and kunit.filter_glob construction: pure functions of node ids and case lists."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_kunit.guest.planning import (
    BootFilter,
    PlannedCase,
    case_from_nodeid,
    executed_cases,
    list_filters,
    single_glob_filters,
)
from pytest_kunit.guest.planning import plan_batches as plan_cases
from pytest_kunit.options import Isolate

from .test_ktap import KUNIT_ALL_CASES

KERNEL = "testsuites/kunit.kunitconfig"
NODEIDS = [f"{KERNEL}::{suite}::{case}" for suite, case in KUNIT_ALL_CASES]
SUITE_SIZES = Counter(suite for suite, _ in KUNIT_ALL_CASES)
# kunit-resource-test 8, kunit_executor_test 4, example 4, string-stream-test 3, kunit-try-catch-test 2,
# kunit_status 2, kunit-log-test 1: 24 cases.


def batches(plan: dict[str, str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for nodeid, batch in plan.items():
        grouped.setdefault(batch, []).append(nodeid)
    return grouped


def suites_of(nodeids: list[str]) -> set[str]:
    return {nodeid.split("::")[1] for nodeid in nodeids}


def plan_batches(
    nodeids: list[str], workers: int, isolate: Isolate, durations: dict[str, dict[str, float]] | None = None
) -> dict[str, str]:
    cases = [case_from_nodeid(nodeid) for nodeid in nodeids]
    return plan_cases([case for case in cases if case is not None], workers, isolate, durations)


# --- case_from_nodeid (the xdist controller's view) -----------------------------------------------------------------


def test_case_from_nodeid() -> None:
    assert case_from_nodeid(f"{KERNEL}::example::x") == PlannedCase(f"{KERNEL}::example::x", KERNEL, "example", "x")
    assert case_from_nodeid("/abs/lib/kunit/.kunitconfig::s::c") == PlannedCase(
        "/abs/lib/kunit/.kunitconfig::s::c", "/abs/lib/kunit/.kunitconfig", "s", "c"
    )
    assert case_from_nodeid("tests/test_x.py::test_y") is None
    assert case_from_nodeid("tests/test_x.py::Class::test_y") is None
    assert case_from_nodeid(f"{KERNEL}::example") is None
    assert case_from_nodeid(f"{KERNEL}::example::case::extra") is None
    assert case_from_nodeid("") is None


# --- plan_batches --------------------------------------------------------------------------------------------------


def test_isolate_case_gives_every_case_its_own_batch() -> None:
    assert plan_batches(NODEIDS, 3, Isolate.CASE) == {nodeid: nodeid for nodeid in NODEIDS}


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_isolate_suite_gives_one_batch_per_suite_whatever_the_workers(workers: int) -> None:
    plan = plan_batches(NODEIDS, workers, Isolate.SUITE)
    assert plan == {nodeid: f"{KERNEL}::{nodeid.split('::')[1]}" for nodeid in NODEIDS}
    assert len(batches(plan)) == 7


def test_isolate_none_one_worker_is_one_batch() -> None:
    assert plan_batches(NODEIDS, 1, Isolate.NONE) == {nodeid: f"{KERNEL}::batch0" for nodeid in NODEIDS}


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        # Largest first (8, 4, 4, 3, 2, 2, 1), each into the lightest batch (lowest index on a tie); suites sharing a
        # prefix go together where they weigh at most half a batch (at 2 workers: kunit_executor_test, kunit_status).
        (
            2,
            [
                {"kunit-resource-test", "string-stream-test", "kunit-log-test"},
                {"kunit_executor_test", "example", "kunit-try-catch-test", "kunit_status"},
            ],
        ),
        (
            3,
            [
                {"kunit-resource-test"},
                {"kunit_executor_test", "string-stream-test", "kunit-log-test"},
                {"example", "kunit-try-catch-test", "kunit_status"},
            ],
        ),
        (
            4,
            [
                {"kunit-resource-test"},
                {"kunit_executor_test", "kunit-try-catch-test"},
                {"example", "kunit-log-test"},
                {"string-stream-test", "kunit_status"},
            ],
        ),
    ],
)
def test_isolate_none_deals_suites_into_balanced_batches(workers: int, expected: list[set[str]]) -> None:
    grouped = batches(plan_batches(NODEIDS, workers, Isolate.NONE))
    assert sorted(grouped) == [f"{KERNEL}::batch{index}" for index in range(workers)]
    assert [suites_of(grouped[f"{KERNEL}::batch{index}"]) for index in range(workers)] == expected
    loads = [len(grouped[f"{KERNEL}::batch{index}"]) for index in range(workers)]
    assert loads == {2: [12, 12], 3: [8, 8, 8], 4: [8, 6, 5, 5]}[workers]


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
@pytest.mark.parametrize("isolate", list(Isolate))
def test_plans_are_deterministic_and_never_split_a_suite_unless_case_isolation(workers: int, isolate: Isolate) -> None:
    plan = plan_batches(NODEIDS, workers, isolate)
    assert plan == plan_batches(list(NODEIDS), workers, isolate)
    assert set(plan) == set(NODEIDS)
    if isolate is not Isolate.CASE:
        batch_of_suite: dict[str, set[str]] = {}
        for nodeid, batch in plan.items():
            batch_of_suite.setdefault(nodeid.split("::")[1], set()).add(batch)
        assert all(len(found) == 1 for found in batch_of_suite.values())
    if isolate is Isolate.NONE:
        assert len(batches(plan)) == min(workers, 7)


def test_more_workers_than_suites_and_zero_workers() -> None:
    nodeids = [f"{KERNEL}::a::x", f"{KERNEL}::a::y", f"{KERNEL}::b::z"]
    assert plan_batches(nodeids, 8, Isolate.NONE) == {
        nodeids[0]: f"{KERNEL}::batch0",
        nodeids[1]: f"{KERNEL}::batch0",
        nodeids[2]: f"{KERNEL}::batch1",
    }
    assert set(plan_batches(nodeids, 0, Isolate.NONE).values()) == {f"{KERNEL}::batch0"}


def test_kernels_are_never_mixed_and_other_items_are_left_out() -> None:
    nodeids = [
        "a.kunitconfig::s1::c1",
        "tests/test_plain.py::test_something",
        "b.kunitconfig::s1::c1",
        "a.kunitconfig::s2::c2",
        "b.kunitconfig::s2::c2",
    ]
    plan = plan_batches(nodeids, 2, Isolate.NONE)
    assert plan == {
        "a.kunitconfig::s1::c1": "a.kunitconfig::batch0",
        "a.kunitconfig::s2::c2": "a.kunitconfig::batch1",
        "b.kunitconfig::s1::c1": "b.kunitconfig::batch0",
        "b.kunitconfig::s2::c2": "b.kunitconfig::batch1",
    }
    assert plan_batches(nodeids, 1, Isolate.SUITE)["b.kunitconfig::s2::c2"] == "b.kunitconfig::s2"
    assert plan_batches([], 4, Isolate.NONE) == {}


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.lists(st.integers(1, 12), min_size=1, max_size=12),
    st.integers(1, 6),
)
def test_isolate_none_is_balanced_for_any_suite_sizes(sizes: list[int], workers: int) -> None:
    nodeids = [f"k.kunitconfig::suite{index}::case{n}" for index, size in enumerate(sizes) for n in range(size)]
    plan = plan_batches(nodeids, workers, Isolate.NONE)
    grouped = batches(plan)
    assert len(grouped) == min(workers, len(sizes))
    loads = [len(members) for members in grouped.values()]
    # Greedy largest-first: no batch exceeds the lightest by more than the largest suite.
    assert max(loads) - min(loads) <= max(sizes)
    assert sum(loads) == sum(sizes)
    for members in grouped.values():
        for suite in suites_of(members):
            assert sum(1 for member in members if member.split("::")[1] == suite) == sizes[int(suite[5:])]


# --- list_filters --------------------------------------------------------------------------------------------------

ALL = list(KUNIT_ALL_CASES)
ROOM = 1500  # what x86_64's 2048 bytes of command line leave a filter


def list_filter(all_cases: list[tuple[str, str]], wanted: list[tuple[str, str]], room: int = ROOM) -> str | None:
    """The one boot's filter, where the command line has room for one."""
    [glob] = list_filters(all_cases, wanted, room)
    return glob


def of(suite: str) -> list[tuple[str, str]]:
    return [case for case in ALL if case[0] == suite]


def test_everything_wanted_is_no_filter() -> None:
    assert list_filter(ALL, ALL) is None
    assert list_filter(ALL, list(reversed(ALL))) is None
    assert list_filter(ALL, [*ALL, ("unknown", "case")]) is None
    assert list_filter([], []) is None


def test_whole_suites_compress_to_the_suite_name_in_execution_order() -> None:
    wanted = of("example") + of("kunit_executor_test")
    assert list_filter(ALL, wanted) == "kunit_executor_test,example"


def test_partial_suites_name_exact_cases() -> None:
    wanted = [
        ("example", "example_skip_test"),
        *of("kunit-log-test"),
        ("kunit-resource-test", "kunit_resource_test_named"),
        ("kunit-resource-test", "kunit_resource_test_init_resources"),
    ]
    assert list_filter(ALL, wanted) == (
        "kunit-resource-test.kunit_resource_test_init_resources,"
        "kunit-resource-test.kunit_resource_test_named,"
        "kunit-log-test,"
        "example.example_skip_test"
    )
    assert list_filter(ALL, [("example", "example_simple_test")]) == "example.example_simple_test"


def test_everything_but_one_case() -> None:
    wanted = [case for case in ALL if case != ("kunit_status", "kunit_status_mark_skipped_test")]
    assert list_filter(ALL, wanted) == (
        "kunit_executor_test,kunit-try-catch-test,kunit-resource-test,kunit-log-test,"
        "kunit_status.kunit_status_set_failure_test,string-stream-test,example"
    )


def test_too_long_filter_falls_back_to_whole_suites() -> None:
    suites = [f"suite_{n:02d}" for n in range(30)]
    all_cases = [(suite, f"a_fairly_long_case_name_number_{n:02d}") for suite in suites for n in range(4)]
    wanted = [case for case in all_cases if case[1].endswith(("00", "01", "02"))]
    exact = ",".join(f"{suite}.{case}" for suite, case in wanted)
    assert len(exact) > ROOM
    assert list_filter(all_cases, wanted) == ",".join(suites)
    # The fallback runs more than was asked for, never less.
    ran = executed_cases(all_cases, list_filter(all_cases, wanted))
    assert set(ran) >= set(wanted)
    assert len(ran) == len(all_cases)
    # Just under the limit the filter stays exact.
    few = wanted[:30]
    exact_few = ",".join(f"{suite}.{case}" for suite, case in few)
    assert len(exact_few) <= ROOM
    assert list_filter(all_cases, few) == exact_few


def test_filter_at_exactly_the_room_is_kept() -> None:
    # One case whose "suite.case" entry is exactly ROOM characters long.
    case = ("s", "c" * (ROOM - 2))
    all_cases = [case, ("s", "other")]
    assert list_filter(all_cases, [case]) == f"s.{case[1]}"
    longer = ("s", "c" * (ROOM - 1))
    assert list_filter([longer, ("s", "other")], [longer]) == "s"


def test_suites_too_many_for_one_command_line_are_dealt_into_boots_in_the_kernel_s_order() -> None:
    # m68k keeps 256 bytes: what the framework fragment's 16 suites, named whole, do not fit in.
    suites = [f"a_suite_with_a_long_name_{n:02d}" for n in range(16)]
    all_cases = [(suite, case) for suite in suites for case in ("kept", "left_out")]
    wanted = [case for case in all_cases if case[1] == "kept"]
    filters = list_filters(all_cases, wanted, 100)
    assert len(filters) == 6
    assert all(glob is not None and len(glob) <= 100 for glob in filters)
    assert ",".join(glob or "" for glob in filters) == ",".join(suites)  # each suite once, in order
    ran = [case for glob in filters for case in executed_cases(all_cases, glob)]
    assert set(ran) >= set(wanted) and len(ran) == len(all_cases)


def test_the_room_is_counted_in_bytes() -> None:
    # "é" takes two bytes of the command line: four such suites of 5 bytes each fit 11 bytes two by two.
    all_cases = [(f"s{n}é", "a") for n in range(4)] + [("t", "b")]
    assert list_filters(all_cases, all_cases[:4], 11) == ["s0é,s1é", "s2é,s3é"]


def test_a_name_longer_than_the_room_boots_unfiltered() -> None:
    all_cases = [("s" * 40, "a"), ("s" * 40, "b"), ("t", "c")]
    assert list_filters(all_cases, all_cases[:1], 30) == [None]
    assert list_filters(all_cases, all_cases[2:], 30) == ["t"]


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=8).filter(lambda n: n[0] != "-")


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.lists(st.tuples(names, names), min_size=1, max_size=25, unique=True).flatmap(
        lambda cases: st.tuples(st.just(cases), st.lists(st.sampled_from(cases), max_size=25))
    )
)
def test_a_list_filter_runs_exactly_what_is_wanted(data: tuple[list[tuple[str, str]], list[tuple[str, str]]]) -> None:
    all_cases, wanted = data
    # The kernel runs each suite's cases together: make the listing suite-contiguous like a real one.
    order = list(dict.fromkeys(suite for suite, _ in all_cases))
    all_cases = sorted(all_cases, key=lambda case: order.index(case[0]))
    kernel_filter = list_filter(all_cases, wanted)
    ran = executed_cases(all_cases, kernel_filter)
    if kernel_filter is None:
        assert set(wanted) >= set(all_cases)
        assert ran == all_cases
    else:
        assert ran == [case for case in all_cases if case in set(wanted)]


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.lists(st.tuples(names, names), min_size=1, max_size=25, unique=True).flatmap(
        lambda cases: st.tuples(st.just(cases), st.lists(st.sampled_from(cases), max_size=25))
    ),
    st.integers(min_value=1, max_value=120),
)
def test_split_filters_fit_their_room_and_run_every_wanted_case_once(
    data: tuple[list[tuple[str, str]], list[tuple[str, str]]], room: int
) -> None:
    all_cases, wanted = data
    order = list(dict.fromkeys(suite for suite, _ in all_cases))
    all_cases = sorted(all_cases, key=lambda case: order.index(case[0]))
    filters = list_filters(all_cases, wanted, room)
    ran = [case for glob in filters for case in executed_cases(all_cases, glob)]
    assert set(ran) >= set(wanted)
    assert len(ran) == len(set(ran))  # no case runs in two boots
    assert filters == [None] or all(glob is not None and len(glob) <= room for glob in filters)


# --- executed_cases ------------------------------------------------------------------------------------------------


def test_executed_cases() -> None:
    assert executed_cases(ALL, None) == ALL
    assert executed_cases(ALL, "example") == of("example")
    assert executed_cases(ALL, "example.example_skip_test,kunit_status") == [
        ("kunit_status", "kunit_status_set_failure_test"),
        ("kunit_status", "kunit_status_mark_skipped_test"),
        ("example", "example_skip_test"),
    ]
    assert executed_cases(ALL, "kunit-*") == of("kunit-try-catch-test") + of("kunit-resource-test") + of(
        "kunit-log-test"
    )
    assert executed_cases(ALL, "example.*skip*") == [
        ("example", "example_skip_test"),
        ("example", "example_mark_skipped_test"),
    ]
    assert executed_cases(ALL, "nothing") == []
    assert executed_cases(ALL, "Example") == []


# --- single_glob_filters -------------------------------------------------------------------------------------------


def globs(filters: list[BootFilter]) -> list[str | None]:
    assert all(boot.attributes is None for boot in filters)
    return [boot.glob for boot in filters]


def test_single_glob_filters() -> None:
    assert globs(single_glob_filters(ALL, [("example", "example_skip_test")])) == ["example.example_skip_test"]
    # A one-case suite is named whole; several wanted cases of one suite boot the whole suite.
    assert globs(single_glob_filters(ALL, of("kunit-log-test"))) == ["kunit-log-test"]
    assert globs(
        single_glob_filters(
            ALL, [("example", "example_skip_test"), ("example", "example_simple_test"), *of("kunit_status")[:1]]
        )
    ) == ["example", "kunit_status.kunit_status_set_failure_test"]
    assert single_glob_filters(ALL, []) == []
    # Suites come in the order the wanted cases name them.
    assert globs(single_glob_filters(ALL, [("example", "example_simple_test"), ALL[0]])) == [
        "example.example_simple_test",
        "kunit_executor_test.parse_filter_test",
    ]
    for boot in single_glob_filters(ALL, ALL[1:]):
        assert boot.glob is not None and "," not in boot.glob
    # Everything wanted: one boot with no filter at all, whatever the tree's filter can express.
    assert single_glob_filters(ALL, ALL) == [BootFilter()]


def test_single_glob_filters_use_the_attribute_filter_for_not_slow() -> None:
    slow = {("example", "example_simple_test"): (("speed", "slow"),), ALL[0]: (("speed", "very_slow"),)}
    not_slow = [case for case in ALL if case not in slow]
    assert single_glob_filters(ALL, not_slow, slow) == [BootFilter(attributes="speed>slow")]
    example_not_slow = [case for case in of("example") if case not in slow]
    assert single_glob_filters(ALL, example_not_slow, slow) == [BootFilter("example", "speed>slow", single=True)]
    # Without attributes (a kernel before 6.6) the same selection boots the suite and reports what was chosen.
    assert single_glob_filters(ALL, example_not_slow) == [BootFilter("example", single=True)]
    assert executed_cases(ALL, BootFilter(attributes="speed>slow"), slow) == not_slow
    assert executed_cases(ALL, BootFilter("example", "speed>slow"), slow) == example_not_slow
    assert BootFilter("example", "speed>slow").kernel_args() == ("kunit.filter_glob=example", "kunit.filter=speed>slow")
    assert BootFilter().describe() == "(none: every case)"


def test_measured_durations_balance_batches_by_time_not_case_count() -> None:
    nodeids = [f"k.kunitconfig::big::case{i}" for i in range(6)]
    nodeids += ["k.kunitconfig::slow::only", "k.kunitconfig::small::a", "k.kunitconfig::small::b"]
    by_count = plan_batches(nodeids, 2, Isolate.NONE)
    # By case count the six-case suite stands alone.
    assert by_count["k.kunitconfig::slow::only"] == by_count["k.kunitconfig::small::a"]
    durations = {"k.kunitconfig": {"big": 0.5, "slow": 9.0, "small": 0.2}}
    by_time = plan_batches(nodeids, 2, Isolate.NONE, durations)
    # Measured, the one slow case is the heavy suite: it gets a guest to itself.
    slow_batch = by_time["k.kunitconfig::slow::only"]
    assert [nodeid for nodeid, batch in by_time.items() if batch == slow_batch] == ["k.kunitconfig::slow::only"]
