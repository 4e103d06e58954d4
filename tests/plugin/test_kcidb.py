"""--kunit-kcidb: the run as KCIDB v5 JSON, valid by kcidb-io's schema, with one test per selected case and the
status KCIDB means (crashed and timed out are ERROR, no result line is MISS), written once by the process that
reports, alone or under xdist; its ini twin; a bad origin is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kcidb_io
import pytest

from .conftest import FakeKernel


def schema() -> Any:
    """kcidb-io's schemas (the test extra's, which command two's set-up installs): a missing one fails the checks."""
    return kcidb_io.schema


EXPECTED = {
    "kunit.example.example_simple_test": "PASS",
    "kunit.example.example_failing_test": "FAIL",
    "kunit.example.example_skip_test": "SKIP",
    "kunit.example.example_params_test": "FAIL",
    "kunit.other.first": "PASS",
    "kunit.other.second": "PASS",
    "kunit.trouble.crashes": "ERROR",
    "kunit.trouble.times_out": "ERROR",
    "kunit.trouble.says_nothing": "MISS",
}


def troubled(fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    cases = [
        {"name": "crashes", "outcome": "crash"},
        {"name": "times_out", "outcome": "timeout"},
        {"name": "says_nothing", "outcome": "noresult"},
    ]
    spec["suites"].append({"name": "trouble", "cases": cases})
    fake_kernel.write_spec(spec)


def load(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    schema().V5_0.validate_exactly(report)
    return report


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {test["path"]: test["status"] for test in report["tests"]}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_every_case_with_the_status_kcidb_means(
    project: pytest.Pytester, fake_kernel: FakeKernel, workers: list[str]
) -> None:
    troubled(fake_kernel)
    out = project.path / "kcidb.json"
    result = project.runpytest_subprocess(*fake_kernel.options("--kunit-kcidb", "kcidb.json", *workers))
    result.assert_outcomes(passed=3, failed=4, skipped=1, errors=1)
    report = load(out)
    assert statuses(report) == EXPECTED
    (build,) = report["builds"]
    (checkout,) = report["checkouts"]
    assert build["checkout_id"] == checkout["id"] and build["status"] == "PASS"
    assert build["config_name"] == "kunit.kunitconfig"
    assert "CONFIG_KUNIT_EXAMPLE_TEST=y" in build["misc"]["kunitconfig"]
    assert build["architecture"] == "x86_64" and build["duration"] > 0  # this run built it
    assert {test["build_id"] for test in report["tests"]} == {build["id"]}
    tests = {test["path"]: test for test in report["tests"]}
    assert "Expected 1 + 1 == 3" in tests["kunit.example.example_failing_test"]["log_excerpt"]
    crashed = tests["kunit.trouble.crashes"]["log_excerpt"]
    assert "BUG: kernel NULL pointer dereference" in crashed and "kernel crash report:" in crashed
    assert "try timed out" in tests["kunit.trouble.times_out"]["log_excerpt"]
    assert "without printing this case's result" in tests["kunit.trouble.says_nothing"]["log_excerpt"]
    # Each case's own slice, not the boot's or another case's.
    assert "Expected 1 + 1 == 3" not in tests["kunit.other.first"]["log_excerpt"]
    assert tests["kunit.trouble.crashes"]["misc"]["kunit_status"] == "crashed"


def test_only_the_selected_cases_and_a_warm_build_has_no_duration(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.runpytest_subprocess(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    result = project.runpytest_subprocess(*fake_kernel.options("-k", "first", "--kunit-kcidb", "out/k.json"))
    result.assert_outcomes(passed=1)
    report = load(project.path / "out" / "k.json")
    assert statuses(report) == {"kunit.other.first": "PASS"}
    assert "duration" not in report["builds"][0]


def test_ini_twin_and_origin(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_kcidb = reports/kcidb.json\nkunit_kcidb_origin = my_ci\n")
    result = project.runpytest_subprocess(*fake_kernel.options("-k", "first"))
    result.assert_outcomes(passed=1)
    report = load(project.path / "reports" / "kcidb.json")
    ids = [item["id"] for kind in ("checkouts", "builds", "tests") for item in report[kind]]
    assert ids and all(name.startswith("my_ci:") for name in ids)


def test_an_origin_kcidb_refuses_is_a_usage_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-kcidb", "k.json", "--kunit-kcidb-origin", "My CI"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-kcidb-origin: 'My CI' is not an origin of a-z, 0-9 and _*"])
    assert not (project.path / "k.json").exists()
