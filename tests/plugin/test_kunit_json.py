"""--kunit-json: the run's results in kunit.py's --json shape, what KernelCI reads: every case under its suite with
kunit.py's status for it, a parameterised case a group of its parameters, written once by the process that reports,
alone or under xdist; the same tree upstream kunit.py writes for the same console."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import FakeKernel
from .test_kcidb import troubled as kcidb_troubled
from .test_replay import DATA, options

COMMON_KEYS = ["arch", "defconfig", "build_environment", "lab_name", "kernel", "job", "git_branch"]


def tree(group: dict[str, Any]) -> dict[str, Any]:
    """A group's names and statuses, its common fields left out: {case: status, group: {...}}."""
    found: dict[str, Any] = {case["name"]: case["status"] for case in group["test_cases"]}
    found.update({sub["name"]: tree(sub) for sub in group["sub_groups"]})
    return found


def groups(group: dict[str, Any]) -> list[dict[str, Any]]:
    return [group, *(inner for sub in group["sub_groups"] for inner in groups(sub))]


def troubled(fake_kernel: FakeKernel) -> None:
    """KCIDB's troubled suite (a crash, a timeout, a case with no result), and a suite whose case kills the guest."""
    kcidb_troubled(fake_kernel)
    spec = fake_kernel.spec()
    # First, so that the guest it kills has run nothing else yet.
    dying = {"name": "dying", "cases": [{"name": "kills_the_guest", "outcome": "crash", "kills_guest": True}]}
    spec["suites"].insert(0, dying)
    fake_kernel.write_spec(spec)


EXPECTED = {
    "example": {
        "example_simple_test": "PASS",
        "example_failing_test": "FAIL",
        "example_skip_test": "SKIP",
        "example_params_test": {"value 1": "PASS", "value 2": "FAIL", "value 3": "PASS"},
    },
    "other": {"first": "PASS", "second": "PASS"},
    # KUnit's own `not ok` for a faulted or timed-out try is kunit.py's FAIL; no result line at all is its ERROR.
    "trouble": {"crashes": "FAIL", "times_out": "FAIL", "says_nothing": "ERROR"},
    "dying": {"kills_the_guest": "ERROR"},
}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_every_case_under_its_suite_with_kunit_py_s_status(
    project: pytest.Pytester, fake_kernel: FakeKernel, workers: list[str]
) -> None:
    troubled(fake_kernel)
    result = project.runpytest_subprocess(*fake_kernel.options("--kunit-json", "out/results.json", *workers))
    result.assert_outcomes(passed=3, failed=5, skipped=1, errors=1)
    document = json.loads((project.path / "out/results.json").read_text())
    assert document["name"] == "KUnit Test Group"
    assert document["test_cases"] == []
    assert tree(document) == EXPECTED
    # kunit.py's order: the kernel's, whatever order the workers reported in.
    assert [suite["name"] for suite in document["sub_groups"]] == ["dying", "example", "other", "trouble"]
    (build_dir,) = fake_kernel.cache.glob("build/*/")
    for group in groups(document):
        assert list(group) == ["name", "sub_groups", "test_cases", *COMMON_KEYS]
        assert group["arch"] == "x86_64" and group["defconfig"] == "kunit.kunitconfig"
        assert group["build_environment"] == str(build_dir.resolve()).rstrip("/")
        fixed = (group["lab_name"], group["kernel"], group["job"], group["git_branch"])
        assert fixed == (None, None, None, "kselftest")


def test_only_the_selected_cases_and_the_ini_twin(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_json = results.json\n")
    project.runpytest(*fake_kernel.options("-k", "other or simple")).assert_outcomes(passed=3)
    document = json.loads((project.path / "results.json").read_text())
    assert tree(document) == {"example": {"example_simple_test": "PASS"}, "other": {"first": "PASS", "second": "PASS"}}


def test_several_fragments_are_a_group_each(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makefile(".kunitconfig", second="CONFIG_KUNIT=y\nCONFIG_KUNIT_TEST=y\n")
    result = project.runpytest(*fake_kernel.options("-k", "first", "--kunit-json=r.json"))
    result.assert_outcomes(passed=2)
    document = json.loads((project.path / "r.json").read_text())
    assert tree(document) == {
        "kunit.kunitconfig": {"other": {"first": "PASS"}},
        "second.kunitconfig": {"other": {"first": "PASS"}},
    }
    assert [group["defconfig"] for group in document["sub_groups"]] == ["kunit.kunitconfig", "second.kunitconfig"]


@pytest.mark.parametrize("console", ["example-failing-6.1.192", "synthetic-crash-timeout", "synthetic-truncated-oops"])
def test_the_tree_upstream_kunit_py_writes_for_the_same_console(pytester: pytest.Pytester, console: str) -> None:
    """tests/data/kunitpy-6.12-parse-NAME.json is what Debian's 6.12 `tools/testing/kunit/kunit.py parse
    --json=FILE NAME.log` wrote (it names the cases of a suite the console left unfinished ""; we name them)."""
    shutil.copy(DATA / f"{console}.log", pytester.path)
    pytester.runpytest(*options(pytester, "--kunit-replay", f"{console}.log", "--kunit-json=ours.json"))
    ours = json.loads((pytester.path / "ours.json").read_text())
    theirs = json.loads((DATA / f"kunitpy-6.12-parse-{console}.json").read_text())
    assert ours["name"] == theirs["name"] == "KUnit Test Group"
    assert shape(ours["sub_groups"], theirs["sub_groups"]) == shape(theirs["sub_groups"], theirs["sub_groups"])
    assert [list(group) for group in groups(ours)] == [list(group) for group in groups(theirs)]


def shape(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[Any]:
    """Groups' names, cases and statuses in order; a case kunit.py names "" (it never saw its result line) takes
    kunit.py's name, so only its place and status are compared."""
    shaped: list[Any] = []
    for index, group in enumerate(ours):
        named = theirs[index]["test_cases"] if index < len(theirs) else []
        cases = [
            ("" if index < len(named) and named[index]["name"] == "" else case["name"], case["status"])
            for index, case in enumerate(group["test_cases"])
        ]
        inner = theirs[index]["sub_groups"] if index < len(theirs) else []
        shaped.append([group["name"], shape(group["sub_groups"], inner), cases])
    return shaped


def test_a_path_in_a_missing_directory_is_made(pytester: pytest.Pytester, tmp_path: Path) -> None:
    shutil.copy(DATA / "kunit-6.1.192-all.log", pytester.path)
    target = tmp_path / "deep" / "er" / "k.json"
    result = pytester.runpytest(*options(pytester, "--kunit-replay", "kunit-6.1.192-all.log", f"--kunit-json={target}"))
    result.assert_outcomes(passed=22, skipped=2)
    assert len([case for group in groups(json.loads(target.read_text())) for case in group["test_cases"]]) == 24
