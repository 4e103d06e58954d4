"""Suites dealt as groups sharing a name prefix, and a set of them named by few single globs, exactly."""

from __future__ import annotations

import fnmatch

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_kunit.guest.planning import BootFilter, PlannedCase, executed_cases, plan_batches, single_glob_filters
from pytest_kunit.guest.prefix_groups import covering_globs, prefix_groups
from pytest_kunit.model import CaseId
from pytest_kunit.options import Isolate

from .test_planning import plan_batches as plan_nodeids

# Names as KUnit suites have them: lower-case words joined by `_` or `-`, sharing prefixes (kunit_, kunit-, ...).
SUITE_NAMES = st.lists(
    st.from_regex(r"(kunit|net|ext4|string|drm)[_-]?[a-z]{0,3}(_[a-z0-9]{1,3})?", fullmatch=True),
    min_size=1,
    max_size=40,
    unique=True,
)


def matched(globs: list[str], suites: list[str]) -> set[str]:
    return {suite for suite in suites if any(fnmatch.fnmatchcase(suite, glob) for glob in globs)}


@settings(max_examples=100, deadline=None, database=None)
@given(SUITE_NAMES, st.data())
def test_covering_globs_match_exactly_the_wanted_suites(suites: list[str], data: st.DataObject) -> None:
    wanted = data.draw(st.sets(st.sampled_from(suites)))
    globs = covering_globs(suites, wanted)
    assert matched(globs, suites) == wanted
    # Each glob is a boot: never more of them than suites named one by one.
    assert len(globs) <= len(wanted)
    assert all("," not in glob and "." not in glob for glob in globs)


@settings(max_examples=100, deadline=None, database=None)
@given(SUITE_NAMES, st.integers(1, 4))
def test_prefix_groups_partition_the_suites_and_each_is_one_glob(suites: list[str], at_least: int) -> None:
    weights = {suite: 1.0 for suite in suites}
    groups = prefix_groups(weights, len(suites) / (2 * at_least), at_least)
    assert sorted(name for group in groups for name in group) == sorted(suites)
    assert len(groups) >= min(at_least, len(suites))
    for group in groups:
        assert len(group) == 1 or len(group) <= len(suites) / (2 * at_least)
        assert len(covering_globs(suites, group)) == 1


def test_a_group_of_sibling_prefixes_is_one_class_glob() -> None:
    suites = ["kunit_status", "kunit_executor_test", "kunit-log-test", "kunit-resource-test", "example"]
    assert covering_globs(suites, ["kunit_status", "kunit_executor_test"]) == ["kunit_*"]
    assert covering_globs(suites, ["kunit-log-test", "kunit-resource-test", "example"]) == ["example", "kunit-*"]
    assert covering_globs(suites, ["kunit_status", "kunit-log-test"]) == ["kunit_status", "kunit-log-test"]
    assert covering_globs(["ab", "ac", "ad", "b"], ["ab", "ac"]) == ["a[bc]*"]
    # A `-` in a class stands first, where the kernel's glob_match() and fnmatch both read it as itself.
    assert covering_globs(["a-x", "a_y", "ab", "c"], ["a-x", "a_y"]) == ["a[-_]*"]
    # A suite named by a prefix of others is named exactly.
    assert covering_globs(["net", "net_a", "net_b"], ["net", "net_a"]) == ["net", "net_a"]


def cases_of(suites: list[str], per_suite: int = 2) -> list[CaseId]:
    return [(suite, f"case{n}") for suite in suites for n in range(per_suite)]


@settings(max_examples=100, deadline=None, database=None)
@given(SUITE_NAMES, st.integers(2, 4))
def test_a_dealt_batch_boots_a_few_times_on_a_one_glob_tree_and_runs_exactly_its_cases(
    suites: list[str], workers: int
) -> None:
    cases = cases_of(suites)
    nodeids = [f"k.kunitconfig::{suite}::{case}" for suite, case in cases]
    plan = plan_nodeids(nodeids, workers, Isolate.NONE)
    for batch in set(plan.values()):
        wanted = [case for case, nodeid in zip(cases, nodeids, strict=True) if plan[nodeid] == batch]
        boots = single_glob_filters(cases, wanted)
        ran = [case for boot in boots for case in executed_cases(cases, boot)]
        assert sorted(ran) == sorted(wanted)
        assert len(boots) <= max(1, len(wanted) // 2)  # a boot per suite at most, and usually far fewer


def test_forty_suites_in_two_batches_boot_a_few_times_each() -> None:
    """The workload that made a boot per suite (6.12's all_tests.config under -n 2, on a tree without the series):
    many suites, few prefixes."""
    families = ("kunit", "net", "ext4", "drm", "string", "time", "mm", "fortify")
    suites = [f"{family}_{n}" for family in families for n in range(5)]
    cases = cases_of(suites)
    plan = plan_batches([PlannedCase(_nodeid(case), "k.kunitconfig", *case) for case in cases], 2, Isolate.NONE)
    boots = {
        batch: single_glob_filters(cases, [case for case in cases if plan[_nodeid(case)] == batch])
        for batch in set(plan.values())
    }
    assert len(boots) == 2
    assert all(len(filters) <= 4 for filters in boots.values()), boots
    assert all(boot != BootFilter() for filters in boots.values() for boot in filters)


def _nodeid(case: CaseId) -> str:
    return f"k.kunitconfig::{case[0]}::{case[1]}"
