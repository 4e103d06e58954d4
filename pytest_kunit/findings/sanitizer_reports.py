"""Sanitizer reports on a kernel console: where each begins and ends, and which case was running when it was printed.

Pure. The shapes are those the 6.1 tree prints (and its documentation shows):
* between two rules of `=`: KASAN and KFENCE (`BUG: KASAN: ...`, mm/kasan/report.c), UBSAN (`UBSAN: ...`,
  lib/ubsan.c), KCSAN (`BUG: KCSAN: ...`, kernel/kcsan/report.c);
* a headline (lockdep's after a rule), ending with the stack trace dump_stack() prints: lockdep's `WARNING: possible
  circular locking dependency detected` and its kin (kernel/locking/lockdep.c), DEBUG_ATOMIC_SLEEP's `BUG: sleeping
  function called from invalid context` (kernel/sched/core.c);
* a WARN() from `cut here` to `---[ end trace`: debug objects' `ODEBUG: ...` (lib/debugobjects.c);
* a headline and its indented lines: kmemleak's `unreferenced object 0x...` (mm/kmemleak.c; `kmemleak: ` before each
  line when printed by a scan with kmemleak.verbose, none when read from debugfs).

A KASAN `null-ptr-deref` report followed by the kernel's own NULL pointer oops is not a finding: it is the first half
of that crash (KASAN checks the access, then the access faults), which the case's own result line judges as it would
without KASAN (KUnit's try-catch tests crash on purpose and pass).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..console import ktap_lines as grammar
from ..console.transcript import ConsoleMap
from ..model import CaseId

# A report whose end never comes (the console was cut) stops here, or at the next KTAP result line.
MAX_REPORT_LINES = 400


class Shape(enum.Enum):
    RULED = "ruled"
    BACKTRACE = "backtrace"
    WARN = "warn"
    INDENTED = "indented"


@dataclass(frozen=True)
class Pattern:
    sanitizer: str
    headline: re.Pattern[str]
    shape: Shape
    whenever: bool = False  # printed by a background scan, whenever it runs: never blamed on the case running then


_LOCKDEP = (
    r"WARNING: (?:possible circular locking dependency detected|possible recursive locking detected|"
    r"inconsistent lock state|possible irq lock inversion dependency detected|\S+-safe -> \S+-unsafe lock order|"
    r"bad unlock balance detected|held lock freed|.+ still has locks held|lock held when returning to user space|"
    r"suspicious RCU usage|Nested lock was not taken|bad contention detected|chain_key collision)|"
    r"\[ BUG: Invalid wait context \]"
)
PATTERNS = (
    Pattern("KASAN", re.compile(r"^BUG: KASAN: "), Shape.RULED),
    Pattern("KFENCE", re.compile(r"^BUG: KFENCE: "), Shape.RULED),
    Pattern("UBSAN", re.compile(r"^UBSAN: "), Shape.RULED),
    Pattern("KCSAN", re.compile(r"^BUG: KCSAN: "), Shape.RULED),
    Pattern("lockdep", re.compile(rf"^(?:{_LOCKDEP})"), Shape.BACKTRACE),
    Pattern(
        "atomic sleep",
        re.compile(r"^BUG: (?:sleeping function called from invalid context|scheduling while atomic)"),
        Shape.BACKTRACE,
    ),
    Pattern("debug objects", re.compile(r"^ODEBUG: (?!Out of memory)"), Shape.WARN),
    Pattern("kmemleak", re.compile(r"^(?:kmemleak: )?unreferenced object 0x"), Shape.INDENTED, whenever=True),
)

_RULE = re.compile(r"^={20,}\s*$")
_CUT_HERE = re.compile(r"^-+\[ cut here \]-+\s*$")
_END_TRACE = re.compile(r"^---\[ end trace")
_CALL_TRACE = re.compile(r"^Call [Tt]race:")
_KMEMLEAK_MORE = re.compile(r"^(?:kmemleak: )?  ")
_NULL_DEREF = re.compile(r"^BUG: KASAN: null-ptr-deref ")
# The oops a NULL dereference ends in (x86's page fault handler, arm64's), a few lines after KASAN's report.
_NULL_OOPS = re.compile(r"^(?:BUG: kernel NULL pointer dereference|Unable to handle kernel NULL pointer dereference)")
_OOPS_WITHIN = 5


@dataclass(frozen=True)
class Finding:
    """One sanitizer report: `start` and `end` (inclusive) index the lines it was found in."""

    sanitizer: str
    headline: str
    start: int
    end: int
    lines: tuple[str, ...]
    whenever: bool = False

    def title(self) -> str:
        """The headline, naming its sanitizer where the headline itself does not (lockdep's WARNING, ODEBUG)."""
        return self.headline if self.sanitizer in self.headline else f"{self.sanitizer}: {self.headline}"


def _content(line: str) -> str:
    return grammar.clean(line).strip()


def _end(lines: Sequence[str], headline: int, shape: Shape) -> int:
    """The index of the report's last line."""
    last = min(len(lines), headline + MAX_REPORT_LINES) - 1
    in_trace = False
    for index in range(headline + 1, last + 1):
        raw = grammar.clean(lines[index])
        content = raw.strip()
        if grammar.result(content):
            return index - 1
        if shape is Shape.RULED and _RULE.match(content):
            return index
        if shape is Shape.WARN and _END_TRACE.match(content):
            return index
        if shape is Shape.INDENTED and not _KMEMLEAK_MORE.match(raw):
            return index - 1
        if shape is Shape.BACKTRACE:
            if _CALL_TRACE.match(content):
                in_trace = True
            elif in_trace and not raw[:1].isspace():
                return index - 1
    return last


def _start(lines: Sequence[str], headline: int, shape: Shape) -> int:
    """The report's first line: the rule or `cut here` line just above its headline, if there is one."""
    above = headline - 1
    if above < 0:
        return headline
    content = _content(lines[above])
    if (shape in (Shape.RULED, Shape.BACKTRACE) and _RULE.match(content)) or (
        shape is Shape.WARN and _CUT_HERE.match(content)
    ):
        return above
    return headline


def _oops_follows(lines: Sequence[str], end: int) -> bool:
    return any(_NULL_OOPS.match(_content(line)) for line in lines[end + 1 : end + 1 + _OOPS_WITHIN])


def find_reports(lines: Sequence[str]) -> list[Finding]:
    """Every sanitizer report in `lines` (console lines, printk prefixes and all), in order."""
    found: list[Finding] = []
    index = 0
    while index < len(lines):
        content = _content(lines[index])
        pattern = next((p for p in PATTERNS if p.headline.match(content)), None)
        if pattern is None:
            index += 1
            continue
        start, end = _start(lines, index, pattern.shape), _end(lines, index, pattern.shape)
        if _NULL_DEREF.match(content) and _oops_follows(lines, end):
            index = end + 1
            continue
        if found and start <= found[-1].end:
            start = index  # a rule shared with the report before
        headline = content.removeprefix("kmemleak: ")
        report = tuple(lines[start : end + 1])
        found.append(Finding(pattern.sanitizer, headline, start, end, report, pattern.whenever))
        index = end + 1
    return found


@dataclass(frozen=True)
class Outside:
    """A report printed while no case ran, and when that was."""

    finding: Finding
    when: str


@dataclass(frozen=True)
class Placement:
    by_case: dict[CaseId, tuple[Finding, ...]]
    outside: tuple[Outside, ...]
    in_flight: tuple[Finding, ...]  # in a case the console ended inside: its crash report already holds them


def _when(boundaries: list[tuple[int, str, str]], position: int, suite: str | None) -> str:
    """When a report at `position` was printed, in words, from the suite headers and ends around it."""
    if suite is not None:
        return f"in suite {suite} after its last case (its exit function, or a background task)"
    ended = [name for index, kind, name in boundaries if index < position and kind == "end"]
    upcoming = [name for index, kind, name in boundaries if index > position and kind == "header"]
    if not ended:
        return "before KUnit's first suite started (boot)"
    if upcoming:
        return f"between suites {ended[-1]} and {upcoming[0]}"
    return f"after the last suite ({ended[-1]}) ended"


def place(findings: Sequence[Finding], layout: ConsoleMap) -> Placement:
    """Give each report to the case whose span holds its first line (its suite's header or the previous case's
    result line, to its own result line); the rest are outside any case, or in the case the console ended in.
    A report a background scan prints whenever it runs (kmemleak) is never blamed on the case running then."""
    boundaries = sorted(
        [(index, "header", suite) for suite, index in layout.headers.items()]
        + [(index, "end", suite) for suite, index in layout.ends.items()]
    )
    results = sorted((index, case) for case, index in layout.results.items())
    by_case: dict[CaseId, list[Finding]] = {}
    outside: list[Outside] = []
    in_flight: list[Finding] = []
    for finding in findings:
        position = finding.start
        opened = [b for b in boundaries if b[0] < position]
        suite = opened[-1][2] if opened and opened[-1][1] == "header" else None
        case = None
        if suite is not None:
            case = next((c for index, c in results if index > position and c[0] == suite), None)
        if finding.whenever:
            running = f"while {case[0]}.{case[1]} ran, though the leak may be older" if case else ""
            outside.append(Outside(finding, running or _when(boundaries, position, suite)))
        elif case is not None:
            by_case.setdefault(case, []).append(finding)
        elif suite is not None and suite not in layout.ends:
            in_flight.append(finding)
        else:
            outside.append(Outside(finding, _when(boundaries, position, suite)))
    return Placement({case: tuple(found) for case, found in by_case.items()}, tuple(outside), tuple(in_flight))
