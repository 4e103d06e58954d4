"""The KCIDB report: every status and a long console fit KCIDB v5's schema (kcidb-io's own), and the ids and hashes
follow KCIDB's rules."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import kcidb_io
import pytest

from pytest_kunit.console.ktap import Status
from pytest_kunit.face.kcidb import (
    EXCERPT_LIMIT,
    STATUSES,
    VERSION,
    CaseRun,
    KcidbStatus,
    document,
    excerpt,
    fit,
    split,
    write,
)
from pytest_kunit.kernel.tree import patchset_hash
from pytest_kunit.model import BuiltKernel


def schema() -> Any:
    """kcidb-io's schemas (the test extra's, which command two's set-up installs): a missing one fails the checks."""
    return kcidb_io.schema


KERNEL = BuiltKernel(
    key="testsuites/kunit.kunitconfig",
    tree_key="0123456789abcdef",
    tree="kernel tree /usr/src/linux-source-6.1.tar.xz (default), 12 patches, arch x86_64",
    patchset_hash=hashlib.sha256(b"").hexdigest(),
    image_digest="fedcba9876543210",
    arch="x86_64",
    config="CONFIG_KUNIT=y\n",
    seconds=12.5,
)


def run(case: str, status: Status, text: str = "ok 1 case", suite: str = "example") -> CaseRun:
    return CaseRun(
        nodeid=f"testsuites/kunit.kunitconfig::{suite}::{case}",
        image_digest=KERNEL.image_digest,
        suite=suite,
        case=case,
        status=STATUSES[status].value,
        kunit_status=status.value,
        excerpt=text,
        seconds=0.25,
        console="/tmp/console.log",
        host="builder",
        arch="x86_64",
    )


def test_every_status_validates_against_kcidb_v5() -> None:
    runs = [run(f"case_{index}", status) for index, status in enumerate(Status)]
    report = document("pytest_kunit", "run1", [KERNEL, KERNEL], runs)
    schema().V5_0.validate_exactly(report)  # the version it says it is
    schema().LATEST.validate(report)
    assert report["version"] == VERSION
    assert len(report["checkouts"]) == len(report["builds"]) == 1  # one tree, one image, whoever shares them
    assert [test["status"] for test in report["tests"]] == ["PASS", "FAIL", "SKIP", "SKIP", "ERROR", "ERROR", "MISS"]
    assert {test["build_id"] for test in report["tests"]} == {report["builds"][0]["id"]}
    assert report["builds"][0]["checkout_id"] == report["checkouts"][0]["id"]
    assert len({test["id"] for test in report["tests"]}) == len(runs)
    assert all(test["id"].startswith("pytest_kunit:") for test in report["tests"])


def test_statuses_say_what_kcidb_means() -> None:
    """Crashed and timed out did not complete (ERROR); no result line is the harness's miss, never a pass."""
    assert STATUSES[Status.CRASHED] is KcidbStatus.ERROR
    assert STATUSES[Status.TIMED_OUT] is KcidbStatus.ERROR
    assert STATUSES[Status.NO_RESULT] is KcidbStatus.MISS
    assert set(STATUSES) == set(Status)


def test_names_kcidb_refuses_in_a_path_are_replaced() -> None:
    report = document("ci", "run1", [KERNEL], [run("case.with dots", Status.PASSED, suite="odd/suite")])
    schema().V5_0.validate_exactly(report)
    assert report["tests"][0]["path"] == "kunit.odd_suite.case_with_dots"


def test_a_long_console_is_cut_to_kcidb_limit_keeping_its_ends() -> None:
    console = [f"line {number} " + "x" * 60 for number in range(2000)]
    text = excerpt(console, ["RIP: 0010:kunit_crash+0x1/0x2 lib/kunit/crash.c:10"], "")
    assert len(text) <= EXCERPT_LIMIT
    assert text.startswith("line 0 ") and "line 1999 " in text
    assert text.endswith("RIP: 0010:kunit_crash+0x1/0x2 lib/kunit/crash.c:10")  # the crash report is kept whole
    assert "characters left out" in text
    report = document("ci", "run1", [KERNEL], [run("long", Status.CRASHED, text)])
    schema().V5_0.validate_exactly(report)


@pytest.mark.parametrize("length", [EXCERPT_LIMIT, EXCERPT_LIMIT + 1, EXCERPT_LIMIT + 95, 10 * EXCERPT_LIMIT])
def test_fit_uses_the_whole_limit_and_no_more(length: int) -> None:
    text = "".join(chr(ord("a") + index % 26) for index in range(length))
    fitted = fit(text)
    assert len(fitted) == min(length, EXCERPT_LIMIT)
    if length > EXCERPT_LIMIT:
        told = int(fitted.split("[... ")[1].split(" ")[0])
        kept = len(fitted) - len(fitted.split("\n", 1)[1].split("\n", 1)[0]) - 2
        assert told == length - kept  # the note counts exactly what is missing


def test_nul_bytes_kcidb_refuses_are_dropped() -> None:
    assert fit("a\0b") == "ab"


def test_patchset_hash_is_the_shell_recipe_kcidb_gives(tmp_path: Path) -> None:
    patches = []
    for number in range(3):
        patch = tmp_path / f"000{number}.patch"
        patch.write_text(f"patch {number}\n")
        patches.append(patch)
    recipe = subprocess.run(
        "sha256sum *.patch | cut -c-64 | sha256sum | cut -c-64",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert patchset_hash(patches) == recipe.stdout.strip()
    assert patchset_hash([]) == ""


def test_a_report_over_the_size_a_receiver_takes_is_split_and_nothing_is_lost(tmp_path: Path) -> None:
    """KernelCI dropped an upload over its size limit in silence: a report past the limit is several documents,
    each under it and valid on its own, holding between them every test once."""
    other = BuiltKernel(**{**KERNEL.__dict__, "image_digest": "0011223344556677", "tree_key": "fedcba9876543210"})
    runs = [run(f"case_{index}", Status.PASSED, "x" * 3000) for index in range(40)]
    runs += [
        replace(run(f"other_{index}", Status.FAILED, "y" * 3000), image_digest=other.image_digest)
        for index in range(40)
    ]
    report = document("pytest_kunit", "run1", [KERNEL, other], runs)
    assert split(report) == [report]  # far under the real limit: one document, as before
    limit = 40_000
    written = write(tmp_path / "kcidb.json", report, limit)
    assert [path.name for path in written][:3] == ["kcidb.json", "kcidb.2.json", "kcidb.3.json"]
    documents = [json.loads(path.read_text()) for path in written]
    assert len(documents) >= len(json.dumps(report, indent=1)) // limit
    assert all(path.stat().st_size <= limit for path in written)
    assert [test for part in documents for test in part["tests"]] == report["tests"]
    for part in documents:
        schema().V5_0.validate_exactly(part)
        named = {build["id"] for build in part["builds"]}
        assert {test["build_id"] for test in part["tests"]} <= named
        assert {build["checkout_id"] for build in part["builds"]} <= {tree["id"] for tree in part["checkouts"]}
    assert documents[0]["builds"] == report["builds"] and documents[0]["checkouts"] == report["checkouts"]


def test_a_test_larger_than_the_limit_is_a_document_of_its_own() -> None:
    report = document(
        "pytest_kunit", "run1", [KERNEL], [run("big", Status.FAILED, "z" * 5000), run("small", Status.PASSED)]
    )
    parts = split(report, 3000)
    assert [[test["path"] for test in part["tests"]] for part in parts] == [
        ["kunit.example.big"],
        ["kunit.example.small"],
    ]
