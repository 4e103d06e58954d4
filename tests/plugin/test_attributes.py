"""KUnit test attributes (6.6+): listed with kunit.action=list_attr, carried by each case as markers."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from .conftest import FakeKernel

# Lines of 6.12's lib/kunit/executor.c the runner reads: one glob only, attributes and their filter.
EXECUTOR_6_12 = """\
module_param_named(filter_glob, filter_glob_param, charp, 0600);
MODULE_PARM_DESC(filter_glob, "Filter which KUnit test suites/tests run at boot-time, e.g. list* or list*.*del_test");
module_param_named(filter, filter_param, charp, 0600);
MODULE_PARM_DESC(action, "'list_attr' to list test names and attributes instead of running them.");
	else if (strcmp(action_param, "list_attr") == 0)
"""


@pytest.fixture
def attributed(fake_kernel: FakeKernel) -> FakeKernel:
    """A 6.12-like kernel: one glob, attributes; example_params_test is slow, the example suite is a module's."""
    (fake_kernel.tree / "lib/kunit/executor.c").write_text(EXECUTOR_6_12)
    spec = fake_kernel.spec()
    spec["single_glob"] = True
    spec["suites"][0]["attributes"] = {"module": "kunit_example_test"}
    fake_kernel.write_spec(spec)
    fake_kernel.set_case("example", "example_params_test", attributes={"speed": "slow"})
    fake_kernel.set_case("other", "second", attributes={"speed": "very_slow"})
    return fake_kernel


def test_not_slow_boots_once_and_runs_only_the_selected_cases(project: pytest.Pytester, attributed: FakeKernel) -> None:
    result = project.runpytest(*attributed.options("-m", "not slow", "-v"))
    result.assert_outcomes(passed=2, failed=1, skipped=1, deselected=2)
    (boot,) = attributed.test_boots()
    assert boot["params"].get("kunit.filter") == "speed>slow"
    assert "kunit.filter_glob" not in boot["params"]
    result.stdout.fnmatch_lines(["boot 1: kunit.filter=speed>slow"])


def test_slow_selects_the_slow_cases(project: pytest.Pytester, attributed: FakeKernel) -> None:
    result = project.runpytest(*attributed.options("-m", "slow"))
    result.assert_outcomes(passed=1, failed=1, deselected=4)


def test_not_slow_within_one_suite(project: pytest.Pytester, attributed: FakeKernel) -> None:
    result = project.runpytest(*attributed.options("-m", "not slow", "-k", "example"))
    result.assert_outcomes(passed=1, failed=1, skipped=1, deselected=3)
    assert attributed.filters() == ["example"]
    assert [boot["params"].get("kunit.filter") for boot in attributed.test_boots()] == ["speed>slow"]


def test_module_reaches_the_report_and_junit(project: pytest.Pytester, attributed: FakeKernel) -> None:
    xml = project.path / "junit.xml"
    result = project.runpytest(*attributed.options("-k", "example_failing_test", f"--junitxml={xml}"))
    result.stdout.fnmatch_lines(["*example.example_failing_test FAILED at *(module kunit_example_test)*"])
    (case,) = ET.parse(xml).getroot().findall(".//testcase")
    properties = {prop.get("name"): prop.get("value") for prop in case.findall(".//property")}
    assert properties == {"kunit_module": "kunit_example_test"}


def test_markers_are_registered(project: pytest.Pytester, attributed: FakeKernel) -> None:
    result = project.runpytest(*attributed.options("--markers"))
    result.stdout.fnmatch_lines(["@pytest.mark.slow: a kernel test case KUnit marks speed: slow or very_slow"])
    strict = project.runpytest(*attributed.options("--strict-markers", "-m", "not slow"))
    strict.assert_outcomes(passed=2, failed=1, skipped=1, deselected=2)
