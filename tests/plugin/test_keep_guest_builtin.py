"""--kunit-keep-guest without --kunit-modules, on a tree whose KUnit has kunit.autorun (the series; 6.14+): the guest
boots with kunit.autorun=0, runs each batch's whole built-in suites again through their debugfs run files, and stays
up for the next run. The fake QEMU honours kunit.autorun=0 and serves `check` and `run` as the real /init does."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_kunit.guest import keepers

from .conftest import FakeKernel

# What the series' lib/kunit/test.c declares (versions.has_autorun reads it).
AUTORUN_C = "module_param_named(autorun, autorun_param, bool, 0);\n"


@pytest.fixture
def autorun(fake_kernel: FakeKernel) -> Iterator[FakeKernel]:
    spec = fake_kernel.spec()
    spec["autorun"] = True
    fake_kernel.write_spec(spec)
    (fake_kernel.tree / "lib/kunit/test.c").write_text(AUTORUN_C)
    yield fake_kernel
    keepers.end_all(fake_kernel.cache)  # no keeper outlives its test


def run(project: pytest.Pytester, kernel: FakeKernel, *extra: str) -> pytest.RunResult:
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    return project.runpytest(*kernel.options("--kunit-keep-guest", "-rA", *extra))


def runs_served(kernel: FakeKernel) -> list[list[str]]:
    log = kernel.qemu_log.with_name(kernel.qemu_log.name + ".served")
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [line["run"] for line in lines if isinstance(line, dict)]


def verdicts(report: Path) -> dict[str, str]:
    """Each case's outcome in a JUnit XML report: passed, failure, error or skipped."""
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = kinds[0] if kinds else "passed"
    return outcomes


def test_the_next_run_of_whole_suites_runs_them_again_on_the_kept_guest(
    project: pytest.Pytester, autorun: FakeKernel
) -> None:
    first = run(project, autorun, "-k", "example")
    first.assert_outcomes(passed=1, failed=2, skipped=1)
    (boot,) = autorun.test_boots()
    assert boot["params"]["kunit.autorun"] == "0" and "kunit.filter_glob" not in boot["params"]
    second = run(project, autorun, "-k", "example")
    second.assert_outcomes(passed=1, failed=2, skipped=1)
    second.stdout.fnmatch_lines(["*guest boots: 0 *batches on a kept guest: 1"])
    assert len(autorun.test_boots()) == 1  # no boot of its own
    assert runs_served(autorun) == [["example"], ["example"]]


def test_verdicts_from_the_kept_guest_equal_those_of_fresh_boots_case_by_case(
    project: pytest.Pytester, autorun: FakeKernel
) -> None:
    autorun.set_case("other", "second", outcome="fail")
    fresh = project.path / "fresh.xml"
    time.sleep(1.1)
    project.runpytest(*autorun.options(f"--junitxml={fresh}")).assert_outcomes(passed=2, failed=3, skipped=1)
    kept = [project.path / f"kept{index}.xml" for index in range(2)]
    for report in kept:
        run(project, autorun, f"--junitxml={report}").assert_outcomes(passed=2, failed=3, skipped=1)
    assert verdicts(fresh) == verdicts(kept[0]) == verdicts(kept[1])
    assert len(verdicts(fresh)) == 6
    assert runs_served(autorun) == [["example", "other"]] * 2


def test_a_batch_that_selects_part_of_a_suite_boots_as_usual(project: pytest.Pytester, autorun: FakeKernel) -> None:
    result = run(project, autorun, "-k", "example_simple_test")
    result.assert_outcomes(passed=1)
    (boot,) = autorun.test_boots()
    assert "kunit.autorun" not in boot["params"] and boot["params"]["kunit.filter_glob"]
    assert runs_served(autorun) == []


def test_a_suite_without_a_run_file_boots_as_usual_and_the_guest_serves_the_next_run(
    project: pytest.Pytester, autorun: FakeKernel
) -> None:
    autorun.set_suite("other", init=True)  # in init memory: no debugfs run file
    run(project, autorun, "-k", "other").assert_outcomes(passed=2)
    kept, booted = autorun.test_boots()  # the kept guest came up, said "no run file", and the batch booted
    assert kept["params"]["kunit.autorun"] == "0" and booted["params"]["kunit.filter_glob"] == "other"
    again = run(project, autorun, "-k", "example")
    again.assert_outcomes(passed=1, failed=2, skipped=1)
    again.stdout.fnmatch_lines(["*guest boots: 0 *batches on a kept guest: 1"])
    assert runs_served(autorun) == [["example"]]


def test_a_crash_ends_the_kept_guest_and_the_next_run_boots_afresh(
    project: pytest.Pytester, autorun: FakeKernel
) -> None:
    autorun.set_case("other", "first", outcome="crash")
    first = run(project, autorun, "-k", "other")
    first.assert_outcomes(passed=1, failed=1)
    first.stdout.fnmatch_lines(["*the kept guest of * was ended (its console shows a fault: *"])
    run(project, autorun, "-k", "other").assert_outcomes(passed=1, failed=1)
    assert len(autorun.test_boots()) == 2


def test_a_tree_without_autorun_keeps_no_guest_and_the_run_says_why(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    result = run(project, fake_kernel, "-k", "example_simple_test")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*--kunit-keep-guest keeps no guest up for the kernel in *has no kunit.autorun*"])
    assert not list((fake_kernel.cache / "guests").glob("*.sock"))


def test_under_xdist_one_worker_uses_the_kept_guest_and_every_verdict_stays(
    project: pytest.Pytester, autorun: FakeKernel
) -> None:
    autorun.set_case("other", "second", outcome="fail")
    for _ in range(2):
        run(project, autorun, "-n", "2").assert_outcomes(passed=2, failed=3, skipped=1)
    assert len(list((autorun.cache / "guests").glob("*.json"))) == 1
    assert runs_served(autorun)  # a batch went to the kept guest


def test_within_a_run_one_guest_serves_every_batch(project: pytest.Pytester, autorun: FakeKernel) -> None:
    result = run(project, autorun, "--kunit-isolate=suite")
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    # The list boot and the kept guest's; the second suite's batch ran on the guest the first one booted.
    result.stdout.fnmatch_lines(["*guest boots: 2 *batches on a kept guest: 1"])
    assert len(autorun.test_boots()) == 1
    assert runs_served(autorun) == [["example"], ["other"]]
