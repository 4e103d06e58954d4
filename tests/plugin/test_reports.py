"""What a failing case's report holds (its own slice of the console, no terminal escapes; the whole console only with
-v), and the times JUnit gets: each case its own, the builds and boots the session's."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import FakeKernel


def test_a_failure_holds_its_own_slice_of_the_console(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-k", "example_failing_test or other"))
    result.assert_outcomes(passed=2, failed=1)
    text = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "console: */consoles/*.log",  # the whole console is in a file the report names
            "*Captured kunit console: example.example_failing_test call*",
            "*# Subtest: example",
            "*# example_failing_test: EXPECTATION FAILED at lib/kunit/kunit-example-test.c:11",
            "*not ok 1 example_failing_test",
        ]
    )
    # Nothing of the boot before the suite, of the other suite, or any terminal escape.
    assert "SeaBIOS" not in text and "Linux version" not in text and "# Subtest: other" not in text
    assert "\x1b" not in text
    (console,) = fake_kernel.cache.glob("consoles/*/*.log")
    whole = console.read_text()
    assert "SeaBIOS (version fake)" in whole and "\x1b" not in whole


def test_verbose_adds_the_whole_console_without_escapes(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-v", "-k", "example_failing_test"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Captured kunit console (*.log) call*", "SeaBIOS (version fake)", "*Linux version*"])
    assert "\x1b" not in result.stdout.str()


def test_raw_console_is_streamed_without_escapes(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-raw", "-k", "example_simple_test"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["[[]guest[]] SeaBIOS (version fake)", "[[]guest[]] Booting from ROM..Linux version*"])
    assert "\x1b" not in result.stdout.str()


def test_a_crash_report_is_in_the_crashed_cases_slice(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "second", outcome="crash", kills_guest=True)
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*Captured kunit console: other.second call*", "*# Subtest: other", "BUG: kernel NULL*"]
    )
    assert "ok 1 first" not in result.stdout.str()  # the passing case before it is no part of its slice


def test_a_second_failure_in_a_suite_does_not_repeat_the_first(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """Each failure's slice is its suite's header and its own lines: the second failure of a suite once reprinted
    every earlier case's lines, the first failure's among them."""
    fake_kernel.set_case("other", "first", outcome="fail", log=["EXPECTATION FAILED at lib/a.c:1", "first's own"])
    fake_kernel.set_case("other", "second", outcome="fail", log=["EXPECTATION FAILED at lib/a.c:2", "second's own"])
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    second = text[text.index("Captured kunit console: other.second") :]
    second = second[: second.index("short test summary")]
    assert "# Subtest: other" in second and "1..2" in second and "second's own" in second
    assert "first's own" not in second and "not ok 1 first" not in second
    first = text[text.index("Captured kunit console: other.first") : text.index("other.second FAILED at")]
    assert "first's own" in first and "second's own" not in first


def junit_times(report: Path) -> dict[str, float]:
    cases = ET.parse(report).getroot().iter("testcase")
    return {case.get("name", ""): float(case.get("time", "nan")) for case in cases}


def suite_properties(report: Path) -> dict[str, str]:
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    return {prop.get("name", ""): prop.get("value", "") for prop in suite.iterfind("properties/property")}


def test_junit_times_are_each_cases_own_by_printk_time(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    spec["printk_time"] = True
    for index, case in enumerate(spec["suites"][0]["cases"]):
        case["seconds"] = 0.25 * (index + 1)
    fake_kernel.write_spec(spec)
    xml = project.path / "junit.xml"
    project.runpytest(*fake_kernel.options(f"--junitxml={xml}")).assert_outcomes(passed=3, failed=2, skipped=1)
    times = junit_times(xml)
    # The kernel's own times (the first case's includes no boot), plus pytest's own few microseconds per phase.
    expected = {"example_simple_test": 0.25, "example_failing_test": 0.5, "example_params_test": 1.0}
    for name, seconds in expected.items():
        assert seconds <= times[name] < seconds + 0.05, (name, times)
    assert times["first"] < 0.05 and times["second"] < 0.05
    properties = suite_properties(xml)
    assert properties["kunit_builds"] == "1" and properties["kunit_boots"] == "2"
    assert float(properties["kunit_build_seconds"]) > 0 and float(properties["kunit_boot_seconds"]) > 0


def test_junit_times_by_the_host_without_printk_time(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    # Host times are when the runner read each line: on a loaded machine two lines can be read together, so the
    # guest's delay is long and the bound loose (a run at load 10 once read lines 0.3 s apart as one).
    spec["case_delay"] = 1.0
    fake_kernel.write_spec(spec)
    xml = project.path / "junit.xml"
    project.runpytest(*fake_kernel.options(f"--junitxml={xml}", "-k", "other")).assert_outcomes(passed=2)
    times = junit_times(xml)
    assert times["first"] >= 0.5 and times["second"] >= 0.5


def test_junit_session_figures_under_xdist(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    xml = project.path / "junit.xml"
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2", f"--junitxml={xml}"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    properties = suite_properties(xml)
    # Built once between the workers; the listing boot, then one boot per worker.
    assert (properties["kunit_builds"], properties["kunit_boots"]) == ("1", "3")


HEADLINE = "example.example_failing_test FAILED at lib/kunit/kunit-example-test.c:11"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_a_failures_message_is_its_headline_and_its_body_the_whole_paragraph(
    project: pytest.Pytester, fake_kernel: FakeKernel, workers: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")  # the short summary's lines whole, on every pytest
    fake_kernel.set_case("other", "second", outcome="noresult")
    xml = project.path / "junit.xml"
    result = project.runpytest_subprocess(*fake_kernel.options(*workers, "-rfEs", f"--junitxml={xml}"))
    result.assert_outcomes(passed=2, failed=2, skipped=1, errors=1)
    # The short summary: the headline alone, and a skip located at the case (its fragment here), not at the plugin.
    result.stdout.fnmatch_lines([f"FAILED *::example_failing_test - {HEADLINE}"])
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] kunit.kunitconfig:1: this test should be skipped"])
    failures = {
        case.get("name"): failure
        for case in ET.parse(xml).iter("testcase")
        for failure in [*case.iter("failure"), *case.iter("error")]
    }
    failure = failures["example_failing_test"]
    assert failure.get("message") == HEADLINE
    body = failure.text or ""
    assert body.startswith(HEADLINE) and "Expected 1 + 1 == 3, but" in body and "console: " in body
    # A case with no result line is an error at set-up: its message is its own headline too.
    no_result = "other.second NO RESULT: the kernel printed no result line for this case"
    assert failures["second"].get("message") == f'failed on setup with "{no_result}"'


def test_a_failure_line_with_tb_line_points_at_the_case(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--tb=line", "-k", "example_failing_test"))
    result.stdout.fnmatch_lines([f"*lib/kunit/kunit-example-test.c:9: {HEADLINE}"])
