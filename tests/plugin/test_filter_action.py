"""--kunit-filter-action=skip, kunit.py's --filter_action=skip: the cases a run does not select (-k, -m, node ids
naming other cases of their fragment) are reported skipped, "filtered out", in the terminal and JUnit, instead of
deselected; only the selected cases boot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from .conftest import FakeKernel


def junit(project: pytest.Pytester) -> dict[str, str]:
    """Each case (suite.case) and how it ended, with a skip's message."""
    ended = {}
    for case in ET.parse(project.path / "junit.xml").getroot().iter("testcase"):
        suite = case.get("classname", "").rsplit(".", 1)[-1]
        skipped = case.find("skipped")
        failed = case.find("failure")
        outcome = f"skipped: {skipped.get('message')}" if skipped is not None else "failed" if failed else "passed"
        ended[f"{suite}.{case.get('name')}"] = outcome
    return ended


FILTERED = "skipped: filtered out"


def test_k_deselected_cases_are_skipped_as_filtered_out(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(
        *fake_kernel.options("-k", "other", "--kunit-filter-action=skip", "--junitxml=junit.xml", "-rs")
    )
    result.assert_outcomes(passed=2, skipped=4)
    result.stdout.no_fnmatch_line("*[0-9] deselected*")
    result.stdout.fnmatch_lines(["SKIPPED [[]*[]] *: filtered out"])
    assert junit(project) == {
        "example.example_simple_test": FILTERED,
        "example.example_failing_test": FILTERED,
        "example.example_skip_test": FILTERED,
        "example.example_params_test": FILTERED,
        "other.first": "passed",
        "other.second": "passed",
    }
    # One boot, of the selected suite alone: the skipped cases ran nowhere.
    assert fake_kernel.filters() == ["other"]


def test_without_it_they_are_deselected(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-filter-action=deselect"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 passed, 4 deselected*"])


def test_m_deselected_cases_and_the_ini_twin(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_filter_action = skip\n")
    result = project.runpytest(*fake_kernel.options("-m", "not kunit_arch", "--junitxml=junit.xml"))
    result.assert_outcomes(skipped=6)
    assert set(junit(project).values()) == {FILTERED}
    assert fake_kernel.test_boots() == []


def test_cases_a_node_id_leaves_out_are_skipped(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    nodeid = "kunit.kunitconfig::other::first"
    result = project.runpytest(*fake_kernel.options("--kunit-filter-action=skip", "-v", nodeid))
    result.assert_outcomes(passed=1, skipped=5)
    result.stdout.fnmatch_lines(
        [
            "kunit.kunitconfig::example::example_simple_test SKIPPED (filtered out)*",
            "kunit.kunitconfig::example::example_failing_test SKIPPED (filtered out)*",
            "kunit.kunitconfig::example::example_skip_test SKIPPED (filtered out)*",
            "kunit.kunitconfig::example::example_params_test SKIPPED (filtered out)*",
            "kunit.kunitconfig::other::first PASSED*",
            "kunit.kunitconfig::other::second SKIPPED (filtered out)*",
        ]
    )
    assert fake_kernel.filters() == ["other.first"]


def test_under_xdist(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    options = fake_kernel.options("-n", "2", "-k", "example_simple_test or first", "--kunit-filter-action=skip")
    result = project.runpytest_subprocess(*options)
    result.assert_outcomes(passed=2, skipped=4)
    assert sorted(filter(None, fake_kernel.filters())) in (
        ["example.example_simple_test", "other.first"],
        ["example.example_simple_test,other.first"],
    )


def test_a_bad_value_is_a_usage_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-filter-action=hide"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-filter-action: 'hide' is not one of deselect, skip*"])
