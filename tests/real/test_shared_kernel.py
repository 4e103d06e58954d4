"""The real tier for --kunit-share-kernels: the main job's fragments (testsuites/: all-tests, kunit, of) built as one
union kernel, each fragment's cases and verdicts compared with the same fragment's built alone, case by case.

Gated by PYTEST_KUNIT_REAL_SHARED=1: from an empty cache it costs the three fragments' cold builds and the union's (the
main job's alone builds are usually warm where scripts/kunit.sh ran)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .test_real_kernel import ROOT, report

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(not os.environ.get("PYTEST_KUNIT_REAL_SHARED"), reason="set PYTEST_KUNIT_REAL_SHARED=1"),
]

FRAGMENTS = ("all-tests.kunitconfig", "kunit.kunitconfig", "of.kunitconfig")


def main_job(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[tuple[str, str], str]]:
    """`pytest --kunit testsuites/` as scripts/kunit.sh runs it; {(fragment's class name, case): outcome}."""
    junit = tmp_path / "junit.xml"
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--kunit",
            f"--junitxml={junit}",
            "testsuites/",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=7200,
    )
    outcomes: dict[tuple[str, str], str] = {}
    for case in ET.parse(junit).getroot().iter("testcase") if junit.exists() else ():
        tags = [tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None]
        outcomes[(case.get("classname", ""), case.get("name", ""))] = tags[0] if tags else "passed"
    return process, outcomes


def test_every_fragment_keeps_its_cases_and_verdicts_in_the_shared_kernel(tmp_path: Path) -> None:
    (tmp_path / "alone").mkdir()
    (tmp_path / "shared").mkdir()
    alone_process, alone = main_job(tmp_path / "alone")
    shared_process, shared = main_job(tmp_path / "shared", "--kunit-share-kernels")
    for fragment in FRAGMENTS:
        assert f"{fragment} runs in the kernel shared by" in shared_process.stdout, report(shared_process)
    # Each fragment has cases of its own (a fragment that listed nothing would compare equal, and prove nothing).
    assert all(any(f".{fragment}." in f".{name}" for name, _ in alone) for fragment in FRAGMENTS), report(alone_process)
    differences = {
        case: (alone.get(case), shared.get(case))
        for case in sorted(set(alone) | set(shared))
        if alone.get(case) != shared.get(case)
    }
    assert not differences, report(shared_process)
    assert alone_process.returncode == shared_process.returncode == 0, report(shared_process)
