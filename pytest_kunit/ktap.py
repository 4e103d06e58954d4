"""Streaming parser for the KTAP / TAP output KUnit prints on the kernel console.

The parser is a pure function of the lines it is fed: it never raises on bad input and it only reports a case as
passed when that case's own ``ok`` line was seen.  It accepts both dialects 6.1 kernels print (``TAP version 14`` with
``ok 1 - name`` and ``KTAP version 1`` with ``ok 1 name``), any indentation (including none), ``[    1.234]``
timestamps and unrelated printk lines interleaved with the results.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

_TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
_VERSION = re.compile(r"^(?:K?TAP) version \d+\s*$")
_PLAN = re.compile(r"^1\.\.(\d+)\s*$")
_SUBTEST = re.compile(r"^# Subtest: (?P<name>.*?)\s*$")
_RESULT = re.compile(
    r"^(?P<ok>not ok|ok) (?P<number>\d+)(?: -)?(?: (?P<name>[^#]*?))?\s*"
    r"(?:#\s*(?P<directive>\w+)\b\s?(?P<reason>.*?))?\s*$"
)
_LOCATION = re.compile(r"(?:FAILED|failed) at (?P<file>[\w./+-]+):(?P<line>\d+)")
_LISTED = re.compile(r"^(?P<suite>[^\s#]+)\.(?P<case>[A-Za-z_]\w*)$")

# Lines the kernel prints when something died: the start of an oops, BUG or panic report.
_FAULT = re.compile(
    r"(BUG: |Oops: |general protection fault|kernel BUG at|invalid opcode: |double fault|"
    r"Kernel panic - not syncing|Unable to handle kernel|stack-protector: )"
)
_PANIC = re.compile(r"Kernel panic - not syncing")
# Diagnostics our kernel series (and 6.1 itself, for timeouts) prints before a case's `not ok` line.
_CRASHED_DIAGNOSTIC = re.compile(r"# \S+: test case crashed\b")
_TIMED_OUT_DIAGNOSTIC = re.compile(r"# \S+: (?:try timed out|test case timed out)\b")


class Status(enum.Enum):
    """The outcome of one kernel test case, as the console told it."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
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


@dataclass(frozen=True)
class Listed:
    """A `suite.case` line outside any suite: what a `kunit.action=list` boot prints for each case it holds."""

    suite: str
    case: str


@dataclass(frozen=True)
class Unfinished:
    """The console ended inside a suite: the lines logged since that suite's last result."""

    suite: str
    log: tuple[str, ...]


Event = KtapStarted | SuiteStarted | SuiteFinished | CaseResult | Listed | Unfinished


@dataclass
class _Group:
    """An open `# Subtest:` block: the root, a suite, or a parameterised case."""

    name: str
    indent: int
    indent_known: bool
    pending: list[str] = field(default_factory=list)
    params: list[ParamResult] = field(default_factory=list)
    planned: int | None = None
    results: int = 0


def _status(ok: bool, directive: str | None, diagnostics: Iterable[str]) -> Status:
    if directive and directive.upper() == "SKIP":
        return Status.SKIPPED
    if ok:
        return Status.PASSED
    lines = list(diagnostics)
    if any(_CRASHED_DIAGNOSTIC.search(line) for line in lines):
        return Status.CRASHED
    if any(_TIMED_OUT_DIAGNOSTIC.search(line) for line in lines):
        return Status.TIMED_OUT
    return Status.FAILED


def _worst(statuses: Iterable[Status]) -> Status | None:
    order = [Status.CRASHED, Status.TIMED_OUT, Status.FAILED]
    seen = set(statuses)
    return next((status for status in order if status in seen), None)


class KtapParser:
    """Feed console lines one at a time; each call returns the events that line completed."""

    def __init__(self) -> None:
        self._stack: list[_Group] = []
        self.started = False

    def feed(self, raw: str) -> list[Event]:
        line = _TIMESTAMP.sub("", raw.rstrip("\r\n").replace("\r", ""))
        content = line.lstrip(" \t")
        indent = len(line) - len(content)
        events: list[Event] = []

        if _VERSION.match(content):
            if not self.started:
                self.started = True
                events.append(KtapStarted())
            if not self._stack:
                self._stack.append(_Group("", indent, indent_known=False))
            return events
        if not self.started:
            return events

        subtest = _SUBTEST.match(content)
        if subtest:
            if not self._stack:
                self._stack.append(_Group("", 0, indent_known=False))
            parent = self._stack[-1]
            if parent.name == subtest["name"] and parent.indent == indent and not (parent.results or parent.pending):
                return events  # the same header echoed twice

            group = _Group(subtest["name"], indent, indent_known=indent > parent.indent)
            self._stack.append(group)
            if len(self._stack) == 2:
                events.append(SuiteStarted(group.name))
            return events

        plan = _PLAN.match(content)
        if plan:
            if self._stack and self._stack[-1].planned is None and not self._stack[-1].results:
                self._stack[-1].planned = int(plan.group(1))
            return events

        result = _RESULT.match(content)
        if result and self._stack:
            events.extend(self._result(result, indent))
            return events

        listed = _LISTED.match(content.rstrip()) if len(self._stack) == 1 else None
        if listed:
            events.append(Listed(listed["suite"], listed["case"]))
        if self._stack:
            # Dedent by the suite's indentation, so nested lines keep their own steps.
            base = self._stack[1].indent if len(self._stack) > 1 else self._stack[-1].indent
            self._stack[-1].pending.append(line[min(indent, base) :])
        return events

    def finish(self) -> list[Event]:
        """The console ended: report the innermost open suite, if any, as unfinished."""
        events: list[Event] = []
        if len(self._stack) >= 2:
            suite = self._stack[1]
            log = [line for group in self._stack[1:] for line in group.pending]
            events.append(Unfinished(suite.name, tuple(log)))
        self._stack.clear()
        return events

    def _closing_depth(self, name: str, indent: int) -> int | None:
        """Index in the stack of the open group this result line closes, if it closes one."""
        for depth in range(len(self._stack) - 1, 0, -1):
            group = self._stack[depth]
            if group.name != name or (group.indent_known and indent >= group.indent):
                continue
            if not group.indent_known and group.planned is not None and group.results < group.planned:
                continue  # without indentation, a same-named leaf is told apart by the unmet plan
            return depth
        return None

    def _result(self, match: re.Match[str], indent: int) -> list[Event]:
        ok = match["ok"] == "ok"
        name = (match["name"] or "").strip()
        directive = match["directive"]
        reason = (match["reason"] or "").strip() if directive else ""
        depth = self._closing_depth(name, indent)

        if depth is None:
            top = self._stack[-1]
            top.results += 1
            diagnostics = tuple(top.pending)
            top.pending.clear()
            status = _status(ok, directive, diagnostics)
            if len(self._stack) == 2:
                return [CaseResult(top.name, name, status, reason, diagnostics)]
            if len(self._stack) >= 3:
                top.params.append(ParamResult(name, status, reason, diagnostics))
            return []

        closed = self._stack[depth]
        del self._stack[depth:]
        if depth == 1:
            return [SuiteFinished(closed.name, _status(ok, directive, closed.pending))]
        suite = self._stack[1].name
        diagnostics = tuple(line for param in closed.params for line in param.diagnostics) + tuple(closed.pending)
        status = _status(ok, directive, diagnostics)
        if status is Status.PASSED or status is Status.FAILED:
            # A parameterised case fails if any parameter failed, whatever its own line says.
            status = _worst(param.status for param in closed.params) or status
        self._stack[-1].pending.clear()
        self._stack[-1].results += 1
        return [CaseResult(suite, closed.name, status, reason, diagnostics, tuple(closed.params))]


def parse(lines: Iterable[str]) -> Iterator[Event]:
    """Parse a whole console (or a live stream of lines) into events."""
    parser = KtapParser()
    for line in lines:
        yield from parser.feed(line)
    yield from parser.finish()


def parse_list(lines: Iterable[str]) -> list[tuple[str, str]]:
    """Parse the output of a `kunit.action=list` boot into (suite, case) pairs, in execution order."""
    return listed_cases(parse(lines))


def listed_cases(events: Iterable[Event]) -> list[tuple[str, str]]:
    """The (suite, case) pairs a `kunit.action=list` boot printed, from its parsed events."""
    return [(event.suite, event.case) for event in events if isinstance(event, Listed)]


def fault_lines(lines: Iterable[str]) -> list[str]:
    """The kernel's own crash report (oops, BUG, panic) within `lines`, from its first line on."""
    collected = list(lines)
    for index, line in enumerate(collected):
        if _FAULT.search(line):
            return collected[index:]
    return []


def since_last_result(lines: list[str]) -> list[str]:
    """The lines after the last `ok`/`not ok` line (all of them if there is none)."""
    for index in range(len(lines) - 1, -1, -1):
        if _RESULT.match(_TIMESTAMP.sub("", lines[index]).strip()):
            return lines[index + 1 :]
    return list(lines)


def is_panic(line: str) -> bool:
    return bool(_PANIC.search(line))
