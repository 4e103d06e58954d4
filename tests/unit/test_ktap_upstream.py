"""Our parser against upstream's kunit_parser.py, on every console in upstream's tools/testing/kunit/test_data.

The logs come from the kernel source tarballs the set-up installs (/usr/src/linux-source-*.tar.xz: 6.1 and 6.12):
each one's tools/testing/kunit is extracted once into a cache of its own ($XDG_CACHE_HOME/pytest-kunit-upstream),
or from the test_data directories KUNIT_TEST_DATA names (os.pathsep-separated). With neither, the test fails: it
never skips for want of logs.

For each log, upstream's `parse_run_tests` (imported from that tree: upstream is a peer to measure against, none of
its code is ours) and ours must find the same (suite, case, status) triples, except the deliberate differences
listed below, each with its reason. `python3 tests/unit/test_ktap_upstream.py` prints the comparison table.
"""

from __future__ import annotations

import functools
import importlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_kunit.console import ktap
from pytest_kunit.console.ktap import Status

Triple = tuple[str, str, Status]
# (suite, case) -> (upstream's statuses, ours) for every triple only one side found.
Differences = dict[tuple[str, str], tuple[tuple[Status, ...], tuple[Status, ...]]]

# Upstream's TestStatus names, as our statuses.
UPSTREAM_STATUS = {
    "SUCCESS": Status.PASSED,
    "FAILURE": Status.FAILED,
    "SKIPPED": Status.SKIPPED,
    "TEST_CRASHED": Status.CRASHED,
    "NO_TESTS": Status.SKIPPED,  # a case that ran nothing: ours skips an empty parameter block
    "FAILURE_TO_PARSE_TESTS": Status.NO_RESULT,
}

# log -> (suite, case) -> (upstream's statuses, ours, why we differ).
DELIBERATE: dict[str, dict[tuple[str, str], tuple[tuple[Status, ...], tuple[Status, ...], str]]] = {
    "test_kernel_panic_interrupt.log": {
        ("string-stream-test", ""): (
            (Status.CRASHED, Status.CRASHED),
            (),
            "the console ends mid-suite: upstream invents a nameless crashed case for each result its plan still "
            "expected; we report Unfinished(string-stream-test) and the runner names the case in flight from its list",
        ),
    },
}


TARBALLS = Path("/usr/src")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-kunit-upstream"


def extracted(tarball: Path) -> Path:
    """tools/testing/kunit of one tarball, extracted once (atomically: xdist workers may race) into the cache."""
    stat = tarball.stat()
    target = CACHE / f"{tarball.name}-{stat.st_size}-{stat.st_mtime_ns}"
    if not target.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=CACHE))
        members = "*/tools/testing/kunit/*"
        command = ["tar", "-I", "xz -T0", "-xf", str(tarball), "-C", str(scratch), "--wildcards", members]
        subprocess.run(command, check=True, capture_output=True, timeout=600)
        try:
            scratch.rename(target)
        except OSError:  # another process got there first
            shutil.rmtree(scratch, ignore_errors=True)
    return target


@functools.cache
def upstream_data_dirs() -> list[Path]:
    named = os.environ.get("KUNIT_TEST_DATA")
    if named:
        return [Path(part) for part in named.split(os.pathsep) if part]
    found = []
    for tarball in sorted(TARBALLS.glob("linux-source-*.tar.xz")):
        found += sorted(extracted(tarball).glob("*/tools/testing/kunit/test_data"))
    return found


@functools.cache
def upstream_parser(tool_dir: Path) -> ModuleType:
    """That tree's kunit_parser module, its progress report silenced, leaving sys.modules as it was."""
    names = ("kunit_parser", "kunit_printer")
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    sys.path.insert(0, str(tool_dir))
    try:
        parser = importlib.import_module("kunit_parser")
        printer = importlib.import_module("kunit_printer")
    finally:
        sys.path.remove(str(tool_dir))
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
    setattr(parser, "stdout", printer.Printer(io.StringIO()))  # noqa: B010 - a module global, not an attribute
    return parser


def upstream_cases(tool_dir: Path, lines: list[str]) -> Counter[Triple]:
    main: Any = upstream_parser(tool_dir).parse_run_tests(lines)
    return Counter(
        (suite.name, test.name, UPSTREAM_STATUS[test.status.name]) for suite in main.subtests for test in suite.subtests
    )


def our_cases(lines: list[str]) -> Counter[Triple]:
    events = ktap.parse(lines)
    return Counter((e.suite, e.case, e.status) for e in events if isinstance(e, ktap.CaseResult))


def differences(upstream: Counter[Triple], ours: Counter[Triple]) -> Differences:
    only_upstream, only_ours = upstream - ours, ours - upstream
    keys = sorted({(suite, case) for suite, case, _ in (only_upstream + only_ours).elements()})

    def statuses(side: Counter[Triple], key: tuple[str, str]) -> tuple[Status, ...]:
        found = [status for suite, case, status in side.elements() if (suite, case) == key]
        return tuple(sorted(found, key=lambda status: status.value))

    return {key: (statuses(only_upstream, key), statuses(only_ours, key)) for key in keys}


def logs() -> list[Any]:
    found = [(data, log) for data in upstream_data_dirs() for log in sorted(data.glob("*.log"))]
    if not found:
        return [pytest.param(None, None, id="no-upstream-tree")]
    return [pytest.param(data, log, id=f"{data.parents[3].name}/{log.name}") for data, log in found]


def read(log: Path) -> list[str]:
    return log.read_text(errors="replace").splitlines()


@pytest.mark.parametrize(("data", "log"), logs())
def test_same_cases_as_upstream_or_a_listed_reason(data: Path | None, log: Path) -> None:
    assert data is not None, (
        f"no upstream tools/testing/kunit/test_data: install linux-source-6.1 and linux-source-6.12 "
        f"(scripts/setup.sh --test puts them in {TARBALLS}), or name test_data directories in KUNIT_TEST_DATA"
    )
    tool_dir = data.parent
    assert (tool_dir / "kunit_parser.py").is_file(), f"no kunit_parser.py beside {data}"
    lines = read(log)
    expected = {key: (up, ours) for key, (up, ours, _) in DELIBERATE.get(log.name, {}).items()}
    assert differences(upstream_cases(tool_dir, lines), our_cases(lines)) == expected


@pytest.mark.parametrize(("data", "log"), [p for p in logs() if not p.values[1] or p.values[1].name in DELIBERATE])
def test_where_upstream_invents_cases_ours_reports_the_suite_unfinished(data: Path, log: Path) -> None:
    events = list(ktap.parse(read(log)))
    assert [e.suite for e in events if isinstance(e, ktap.Unfinished)] == ["string-stream-test"]


def test_deliberate_differences_all_say_why() -> None:
    for entries in DELIBERATE.values():
        for upstream, ours, why in entries.values():
            assert upstream != ours
            assert why


def table() -> str:
    rows = ["tree  log  upstream  ours  agree  deliberate"]
    for data in upstream_data_dirs():
        for log in sorted(data.glob("*.log")):
            lines = read(log)
            upstream, ours = upstream_cases(data.parent, lines), our_cases(lines)
            found = differences(upstream, ours)
            deliberate = sum(len(a) + len(b) for a, b in found.values())
            agree = sum((upstream & ours).values())
            row = [data.parents[3].name, log.name, upstream.total(), ours.total(), agree, deliberate]
            rows.append("  ".join(str(cell) for cell in row))
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
