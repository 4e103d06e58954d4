"""kunit.py's --json shape: the tree of groups and cases, kunit.py's status for each of our verdicts (its own result
line decides, as kunit_parser reads it; none is ERROR), and a round trip through the per-case summary that
tests/data/kunitpy-6.12-*.json records of kunit.py's runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_kunit.console.ktap import CaseResult, ParamResult, Status
from pytest_kunit.face.kunitpy_json import TOP_GROUP, JsonCase, KunitPyStatus, document, outcome_status
from pytest_kunit.findings.outcomes import Outcome

DATA = Path(__file__).resolve().parent.parent / "data"
KEYS = ["name", "sub_groups", "test_cases", "arch", "defconfig", "build_environment", "lab_name", "kernel", "job"]


def entry(
    suite: str, case: str, status: str, order: int, kernel: str = "lib/kunit/.kunitconfig", **more: Any
) -> JsonCase:
    fields: dict[str, Any] = {"params": (), "arch": "x86_64", "build_dir": "/cache/build/abc"} | more
    return JsonCase(kernel, order, suite, case, status, **fields)


def summary(group: dict[str, Any], suite: str = "") -> dict[str, str]:
    """`suite.case` -> status, as tests/data/kunitpy-6.12-*.json record kunit.py's runs: a parameterised case is one
    entry, FAIL if a parameter failed, else PASS if one passed, else SKIP."""
    flat = {f"{suite}.{case['name']}": case["status"] for case in group["test_cases"]}
    for sub in group["sub_groups"]:
        if suite and not sub["sub_groups"]:  # a case's parameters
            statuses = {case["status"] for case in sub["test_cases"]}
            flat[f"{suite}.{sub['name']}"] = next(
                (status for status in ("ERROR", "FAIL", "PASS") if status in statuses), "SKIP"
            )
        else:
            flat.update(summary(sub, sub["name"]))
    return flat


def test_a_round_trip_through_kunit_py_s_recorded_verdicts_of_lib_kunit() -> None:
    recorded: dict[str, str] = json.loads((DATA / "kunitpy-6.12-lib-kunit.json").read_text())["cases"]
    entries = []
    for order, (name, status) in enumerate(recorded.items()):
        suite, _, case = name.partition(".")
        params = (("param 0", status), ("param 1", "PASS")) if case == "example_params_test" else ()
        entries.append(entry(suite, case, status, order, params=params))
    made = document(reversed(entries))  # in whatever order reports arrive
    assert made["name"] == TOP_GROUP and made["test_cases"] == []
    assert summary(made) == recorded
    assert [suite["name"] for suite in made["sub_groups"]] == list(dict.fromkeys(n.split(".")[0] for n in recorded))
    (params,) = [group for suite in made["sub_groups"] for group in suite["sub_groups"]]
    assert params["name"] == "example_params_test" and params["sub_groups"] == []
    assert json.loads(json.dumps(made)) == made


def test_every_group_has_kunit_py_s_keys_and_common_fields() -> None:
    made = document([entry("s", "a", "PASS", 0), entry("s", "p", "FAIL", 1, params=(("x", "FAIL"),))])
    groups = [made, made["sub_groups"][0], made["sub_groups"][0]["sub_groups"][0]]
    for group in groups:
        assert list(group) == [*KEYS, "git_branch"]
        assert group["arch"] == "x86_64" and group["defconfig"] == "lib/kunit/.kunitconfig"
        assert group["build_environment"] == "/cache/build/abc"
        fixed = (group["lab_name"], group["kernel"], group["job"], group["git_branch"])
        assert fixed == (None, None, None, "kselftest")
    assert groups[2]["test_cases"] == [{"name": "x", "status": "FAIL"}]


def test_several_kernels_are_a_group_each_with_its_own_fields() -> None:
    made = document(
        [
            entry("s", "a", "PASS", 0, kernel="k.kunitconfig::x86_64"),
            entry("s", "a", "FAIL", 0, kernel="k.kunitconfig::arm64", arch="arm64", build_dir="/b/arm"),
        ]
    )
    assert made["arch"] == "" and made["sub_groups"][1]["arch"] == "arm64"
    names = [(group["name"], group["sub_groups"][0]["test_cases"]) for group in made["sub_groups"]]
    assert names == [
        ("k.kunitconfig::x86_64", [{"name": "a", "status": "PASS"}]),
        ("k.kunitconfig::arm64", [{"name": "a", "status": "FAIL"}]),
    ]
    assert made["sub_groups"][1]["sub_groups"][0]["build_environment"] == "/b/arm"


def outcome(
    status: Status, lines: tuple[str, ...], params: tuple[ParamResult, ...] = (), own_line: bool = True
) -> Outcome:
    return Outcome(CaseResult("s", "c", status, params=params), Path("/console"), lines=lines, own_line=own_line)


@pytest.mark.parametrize(
    ("status", "last_line", "own_line", "expected"),
    [
        (Status.PASSED, "    ok 1 c", True, KunitPyStatus.PASS),
        (Status.SKIPPED, "    ok 1 c # SKIP why", True, KunitPyStatus.SKIP),
        (Status.FAILED, "    not ok 1 c", True, KunitPyStatus.FAIL),
        (Status.XFAIL, "    not ok 1 c # XFAIL", True, KunitPyStatus.FAIL),
        # KUnit's own verdict on a faulted or timed-out try is a `not ok` line: kunit.py's FAIL.
        (Status.CRASHED, "[    1.5] not ok 1 c", True, KunitPyStatus.FAIL),
        (Status.TIMED_OUT, "    not ok 1 c", True, KunitPyStatus.FAIL),
        # No line of its own (the guest died or went silent; the runner judged it): kunit_parser's TEST_CRASHED, its
        # JSON's ERROR.
        (Status.CRASHED, "Kernel panic - not syncing: Fatal exception", False, KunitPyStatus.ERROR),
        (Status.TIMED_OUT, "    # c: initializing", False, KunitPyStatus.ERROR),
        (Status.CRASHED, "    not ok 1 other_case", False, KunitPyStatus.ERROR),
        (Status.NO_RESULT, "    ok 1 c", True, KunitPyStatus.ERROR),
    ],
)
def test_kunit_py_s_status_for_each_verdict(
    status: Status, last_line: str, own_line: bool, expected: KunitPyStatus
) -> None:
    assert outcome_status(outcome(status, ("    # Subtest: s", last_line), own_line=own_line)) is expected


def test_a_crash_the_runner_judged_with_no_console_slice_is_an_error() -> None:
    assert outcome_status(outcome(Status.CRASHED, (), own_line=False)) is KunitPyStatus.ERROR


def test_a_parameterised_case_s_own_verdict_is_never_lost() -> None:
    """A case that crashed after its parameters passed (or that a sanitizer report failed) reads as failed."""
    passing = (("a", "PASS"), ("b", "PASS"))
    made = document(
        [
            entry("s", "crashed", "ERROR", 0, params=passing),
            entry("s", "reported", "FAIL", 1, params=passing),
            entry("s", "failed", "FAIL", 2, params=(("a", "PASS"), ("b", "FAIL"))),
            entry("s", "passed", "PASS", 3, params=passing),
        ]
    )
    cases = {group["name"]: group["test_cases"] for group in made["sub_groups"][0]["sub_groups"]}
    assert cases["crashed"][-1] == {"name": "", "status": "ERROR"}
    assert cases["reported"][-1] == {"name": "", "status": "FAIL"}
    assert len(cases["failed"]) == len(cases["passed"]) == 2
