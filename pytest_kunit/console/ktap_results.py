"""What the KTAP parser (ktap.py) yields: each case's result and the events around it, and the verdict a result line
gives (its word, its directive, the diagnostics before it)."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..model import Attributes
from . import ktap_lines as grammar

_LOCATION = re.compile(r"(?:FAILED|failed) at (?P<file>[\w./+-]+):(?P<line>\d+)")

# Diagnostics KUnit prints before a case's `not ok` line when its thread died: "try faulted" (upstream since
# 2024, and our kernel series, which follows it) or "test case crashed" (the series' first version); timeouts are
# worded alike everywhere. A case's name may hold spaces; anchored, the lazy name runs in linear time.
_CRASHED_DIAGNOSTIC = re.compile(r"^\s*# .+?: (?:try faulted|test case crashed)\b")
_TIMED_OUT_DIAGNOSTIC = re.compile(r"^\s*# .+?: (?:try timed out|test case timed out)\b")


class Status(enum.Enum):
    """The outcome of one kernel test case, as the console told it."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    XFAIL = "xfailed"  # failed, and its result line said that was expected (KTAP's XFAIL and TODO)
    CRASHED = "crashed"
    TIMED_OUT = "timed out"
    NO_RESULT = "no result"


@dataclass(frozen=True)
class Location:
    file: str
    line: int


@dataclass(frozen=True)
class ParamResult:
    """One parameter of a parameterised case (KUNIT_CASE_PARAM)."""

    name: str
    status: Status
    reason: str
    diagnostics: tuple[str, ...]


@dataclass(frozen=True)
class CaseResult:
    suite: str
    case: str
    status: Status
    reason: str = ""
    diagnostics: tuple[str, ...] = ()
    params: tuple[ParamResult, ...] = ()
    attributes: Attributes = ()  # (name, value) in print order: the case's own, else its suite's

    @property
    def location(self) -> Location | None:
        """Where the first failed expectation or assertion of this case sits in the C source."""
        for line in self.diagnostics:
            match = _LOCATION.search(line)
            if match:
                return Location(match["file"], int(match["line"]))
        return None


@dataclass(frozen=True)
class KtapStarted:
    """The first KTAP/TAP version line: KUnit is running."""


@dataclass(frozen=True)
class SuiteStarted:
    suite: str


@dataclass(frozen=True)
class SuiteFinished:
    suite: str
    status: Status
    attributes: Attributes = ()  # the suite's own, printed after its header


@dataclass(frozen=True)
class Listed:
    """A `suite.case` line outside any suite: what a `kunit.action=list` boot prints for each case it holds.

    After `kunit.action=list_attr` it carries the case's effective attributes, so it is emitted when the line after
    its attribute lines arrives (or the console ends).
    """

    suite: str
    case: str
    attributes: Attributes = ()


@dataclass(frozen=True)
class Unread:
    """A line of a `kunit.action=list` boot that names no case, in a list that names no suite alone (list boots
    only): what pytest-kunit cannot read, reported so that no name is dropped unseen."""

    line: str


@dataclass(frozen=True)
class EmptySuite:
    """A suite a `kunit.action=list` boot named with no case after it (6.12+ name every suite before its cases; 6.6+
    with list_attr): it holds no case in this kernel (one whose cases its config leaves out). A test boot prints it
    as `1..0` and `ok N suite # SKIP`, as kunit.py reports it: skipped."""

    suite: str
    attributes: Attributes = ()


@dataclass(frozen=True)
class Unfinished:
    """The console ended inside a suite: the lines logged since that suite's last result.

    `suite` is "" for a suite opened without `# Subtest:`, whose name its missing closing line would have given.
    """

    suite: str
    log: tuple[str, ...]
    planned: int | None = None  # how many tests the suite's plan line announced, if it printed one
    reported: int = 0  # how many of them had a result line


Event = KtapStarted | SuiteStarted | SuiteFinished | CaseResult | Listed | EmptySuite | Unread | Unfinished


def verdict(ok: bool, directive: str | None, diagnostics: Iterable[str]) -> Status:
    """A result line's verdict: its word, its directive, and the diagnostics logged before it."""
    if directive == "SKIP":
        return Status.SKIPPED
    if directive == "XFAIL" or (directive == "TODO" and not ok):
        return Status.XFAIL
    if directive == "TIMEOUT":
        return Status.TIMED_OUT
    if ok and directive != "ERROR":
        return Status.PASSED
    lines = list(diagnostics)
    if any(_CRASHED_DIAGNOSTIC.search(line) for line in lines):
        return Status.CRASHED
    if any(_TIMED_OUT_DIAGNOSTIC.search(line) for line in lines):
        return Status.TIMED_OUT
    return Status.FAILED


def worst(statuses: Iterable[Status]) -> Status | None:
    order = [Status.CRASHED, Status.TIMED_OUT, Status.FAILED]
    seen = set(statuses)
    return next((status for status in order if status in seen), None)


def with_params(status: Status, params: Iterable[ParamResult]) -> Status:
    """A parameterised case fails if any parameter failed, whatever its own line says (unless it skipped)."""
    if status is Status.PASSED or status is Status.FAILED:
        return worst(param.status for param in params) or status
    return status


def old_params(name: str, lines: list[str]) -> list[ParamResult]:
    """The `# name: ok 1 - param` lines of a 5.11-5.15 case, each with the lines logged since the previous one."""
    params: list[ParamResult] = []
    since: list[str] = []
    for line in lines:
        found = grammar.old_param(line.strip())
        if found and found[0] == name:
            param = found[1]
            status = verdict(param.ok, param.directive, since)
            params.append(ParamResult(param.name, status, param.reason, tuple(since)))
            since = []
        else:
            since.append(line)
    return params
