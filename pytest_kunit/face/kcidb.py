"""Results for KernelCI: the run as KCIDB v5 JSON (a checkout per kernel tree, a build per image, a test per case)."""

from __future__ import annotations

import enum
import hashlib
import json
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..console.ktap import Status
from ..fragments.session import STATE
from ..host.cache import write_atomically
from ..model import BuiltKernel

if TYPE_CHECKING:
    import pytest

    from .nodes import KunitCase

# The oldest v5 schema that holds every field written here: any KCIDB of major version 5 takes it.
VERSION = {"major": 5, "minor": 0}
EXCERPT_LIMIT = 16384  # KCIDB's maxLength of log_excerpt, in characters
# Bytes of one document at most. KCIDB's submissions travel as Google Pub/Sub messages, which take 10 MB each, and
# KernelCI has dropped uploads over its limit silently: a run too large for one is written as several, each whole.
DOCUMENT_LIMIT = 8 * 1024 * 1024
REPORT_KEY = "kunit_kcidb"  # the attribute a case's report carries its run in (xdist sends it to the controller)
_PATH_PART = re.compile(r"[^A-Za-z0-9_-]")


class KcidbStatus(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "ERROR"  # the case did not complete: crashed, timed out
    MISS = "MISS"  # the harness got no result for it
    SKIP = "SKIP"


# KCIDB has no expected failure: an XFAIL case neither passed nor failed the code under test, as a skip.
STATUSES = {
    Status.PASSED: KcidbStatus.PASS,
    Status.FAILED: KcidbStatus.FAIL,
    Status.SKIPPED: KcidbStatus.SKIP,
    Status.XFAIL: KcidbStatus.SKIP,
    Status.CRASHED: KcidbStatus.ERROR,
    Status.TIMED_OUT: KcidbStatus.ERROR,
    Status.NO_RESULT: KcidbStatus.MISS,
}


@dataclass(frozen=True)
class CaseRun:
    """One case's result as KCIDB takes it (sent by xdist workers as a dict, on the case's report)."""

    nodeid: str
    image_digest: str
    suite: str
    case: str
    status: str  # a KcidbStatus value
    kunit_status: str  # the case's own Status value, or why it has none
    excerpt: str
    seconds: float | None
    console: str  # the boot's console file, on the host that booted it
    host: str
    arch: str


def fit(text: str, limit: int = EXCERPT_LIMIT) -> str:
    """`text` within `limit` characters, its middle left out (a console's start and its end say the most)."""
    text = text.replace("\0", "")
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    while True:  # the note's own length counts toward what is cut: settle on a count that includes it
        marker = f"\n[... {cut} characters left out ...]\n"
        if len(text) - limit + len(marker) == cut:
            break
        cut = len(text) - limit + len(marker)
    head = (limit - len(marker)) // 2
    return text[:head] + marker + text[len(text) - (limit - len(marker) - head) :]


def excerpt(console: Sequence[str], crash_report: Sequence[str], error: str) -> str:
    """The case's console slice, then its decoded crash report and why it has no result; the console gives way
    first when they are too long together."""
    tail = "\n".join(
        part for part in ("kernel crash report:\n" + "\n".join(crash_report) if crash_report else "", error) if part
    )
    tail = fit(tail, EXCERPT_LIMIT // 2) if console else fit(tail)
    if not console:
        return tail
    room = EXCERPT_LIMIT - len(tail) - (1 if tail else 0)
    return "\n".join(part for part in (fit("\n".join(console), room), tail) if part)


def case_run(item: KunitCase, report: pytest.TestReport) -> CaseRun | None:
    """The run of the case this report settles: its call, or a set-up that failed or skipped; None otherwise."""
    outcome = item.outcome
    if report.when == "call" and outcome is not None:
        result = outcome.result
        status, kunit_status = STATUSES[result.status], result.status.value
        text = excerpt(outcome.lines, outcome.evidence, outcome.error)
    elif report.when == "setup" and report.skipped:
        status, kunit_status, text = KcidbStatus.SKIP, "skipped by pytest", fit(str(report.longrepr))
    elif report.when == "setup" and report.failed:
        # No result line, or no boot at all: the harness's miss, never a verdict on the code.
        status = KcidbStatus.MISS
        kunit_status = outcome.result.status.value if outcome is not None else "not run"
        console = outcome.lines if outcome is not None else ()
        text = excerpt(console, (), outcome.error if outcome is not None else str(report.longrepr))
    else:
        return None
    return CaseRun(
        nodeid=item.nodeid,
        image_digest=item.kernel.build.image_digest,
        suite=item.suite,
        case=item.name,
        status=status.value,
        kunit_status=kunit_status,
        excerpt=text,
        seconds=outcome.seconds if outcome is not None else None,
        console=str(outcome.console) if outcome is not None else "",
        host=socket.gethostname(),
        arch=item.kernel.arch.name,
    )


def _path_part(name: str) -> str:
    return _PATH_PART.sub("_", name) or "_"


def _nodeid_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def document(origin: str, run_id: str, kernels: Iterable[BuiltKernel], runs: Iterable[CaseRun]) -> dict[str, Any]:
    """The KCIDB report: each tree checked out and each image built once, whichever fragments share them."""
    checkouts: dict[str, dict[str, Any]] = {}
    builds: dict[str, dict[str, Any]] = {}
    for kernel in kernels:
        checkout_id = f"{origin}:{kernel.tree_key}"
        checkouts.setdefault(
            checkout_id,
            {
                "id": checkout_id,
                "origin": origin,
                "comment": kernel.tree,
                "patchset_hash": kernel.patchset_hash,
                "valid": True,
            },
        )
        build: dict[str, Any] = {
            "id": f"{origin}:{kernel.image_digest}",
            "checkout_id": checkout_id,
            "origin": origin,
            "architecture": kernel.arch,
            "config_name": kernel.key,
            "status": KcidbStatus.PASS.value,
            "misc": {"kunitconfig": kernel.config, "image_sha256_16": kernel.image_digest},
        }
        if kernel.seconds is not None:
            build["duration"] = round(kernel.seconds, 3)
        builds.setdefault(build["id"], build)
    tests = []
    for run in runs:
        test: dict[str, Any] = {
            "id": f"{origin}:{run_id}-{_nodeid_digest(run.nodeid)}",
            "build_id": f"{origin}:{run.image_digest}",
            "origin": origin,
            "path": f"kunit.{_path_part(run.suite)}.{_path_part(run.case)}",
            "status": run.status,
            "log_excerpt": run.excerpt,
            "environment": {"comment": f"{run.arch} kernel run on host {run.host}", "misc": {"host": run.host}},
            "misc": {"kunit_status": run.kunit_status, "nodeid": run.nodeid, "console": run.console},
        }
        if run.seconds is not None:
            test["duration"] = round(run.seconds, 3)
        tests.append(test)
    return {"version": VERSION, "checkouts": list(checkouts.values()), "builds": list(builds.values()), "tests": tests}


def _encoded(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=1) + "\n"


def split(report: dict[str, Any], limit: int = DOCUMENT_LIMIT) -> list[dict[str, Any]]:
    """The report as documents of at most `limit` bytes, each valid on its own: the first with every checkout and
    build, each later one with its tests and the builds and checkouts they name (KCIDB merges objects of one id).
    A test larger than the limit alone is a document of its own."""
    if len(_encoded(report).encode()) <= limit:
        return [report]
    builds = {build["id"]: build for build in report["builds"]}
    checkouts = {checkout["id"]: checkout for checkout in report["checkouts"]}

    def frame(build_ids: set[str], first: bool) -> dict[str, Any]:
        named = list(builds.values()) if first else [build for key, build in builds.items() if key in build_ids]
        trees = {build["checkout_id"] for build in named}
        kept = list(checkouts.values()) if first else [tree for key, tree in checkouts.items() if key in trees]
        return {"version": report["version"], "checkouts": kept, "builds": named, "tests": []}

    def size(test: dict[str, Any]) -> int:
        # Inside the document each of a test's lines is indented by two more, and tests are joined by ",\n".
        alone = json.dumps(test, indent=1)
        return len(alone.encode()) + 2 * (alone.count("\n") + 1) + 2

    parts: list[dict[str, Any]] = []
    tests: list[dict[str, Any]] = []
    build_ids: set[str] = set()
    held = 0
    for test in report["tests"]:
        framed = len(_encoded(frame(build_ids | {test["build_id"]}, not parts)).encode()) + 4  # "[]" opens up
        if tests and framed + held + size(test) > limit:
            parts.append(frame(build_ids, not parts) | {"tests": tests})
            tests, build_ids, held = [], set(), 0
        tests.append(test)
        build_ids.add(test["build_id"])
        held += size(test)
    parts.append(frame(build_ids, not parts) | {"tests": tests})
    return parts


def part_paths(path: Path, count: int) -> list[Path]:
    """Where a report split in `count` documents goes: PATH itself, then PATH's stem with .2, .3, ... before its
    suffix (kcidb.json, kcidb.2.json)."""
    return [path] + [path.with_name(f"{path.stem}.{number}{path.suffix}") for number in range(2, count + 1)]


def write(path: Path, report: dict[str, Any], limit: int = DOCUMENT_LIMIT) -> list[Path]:
    """The report in as many documents as its size needs; the files written."""
    documents = split(report, limit)
    paths = part_paths(path, len(documents))
    for where, document_part in zip(paths, documents, strict=True):
        write_atomically(where, _encoded(document_part))
    return paths


class KcidbWriter:
    """The process that reports (never an xdist worker): gathers every case's run from its report, and writes the
    file once at the end, with the kernels the session (or its workers) built."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.runs: list[CaseRun] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        fields = getattr(report, REPORT_KEY, None)
        if isinstance(fields, dict):
            self.runs.append(CaseRun(**fields))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = session.config.stash[STATE]
        settings = state.settings
        assert settings.kcidb is not None
        path = session.config.invocation_params.dir / settings.kcidb
        written = write(path, document(settings.kcidb_origin, state.session, state.kernels.values(), self.runs))
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if len(written) > 1 and reporter is not None:
            reporter.write_line(
                f"kunit: the KCIDB report is {len(written)} documents, each under {DOCUMENT_LIMIT // 2**20} MiB (what "
                f"a KCIDB submission takes): {', '.join(str(where) for where in written)}"
            )
