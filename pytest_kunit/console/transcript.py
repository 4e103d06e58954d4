"""A guest's console as users read it: terminal control sequences stripped, where and when each case ran, how the
boot ended.

The KTAP parser (ktap.py) says what each line means; this module only notes, per parsed event, the line it came
from and the time it was printed, so a failing case's report can hold its own slice of the console and its duration.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model import CaseId
from . import ktap
from . import ktap_lines as grammar

# What firmware and the kernel send to a terminal (SeaBIOS clears the screen: ESC c, ESC[?7l, ESC[2J): CSI and OSC
# sequences, other two-character escapes, C0 control characters but tab, C1 control characters (U+0080-U+009F, a
# terminal's other CSI and OSC), and the bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069) that
# make a report or a terminal show text in another order than it holds.
_CONTROL = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
# Characters a report would show as nothing, or as a line break no line holds: zero-width spaces and joiners, the
# bidirectional marks (U+200E/F, U+061C), the soft hyphen, the word joiner and invisible operators, the byte order
# mark, and the line and paragraph separators (U+2028/9). A report shows each as its code point.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u2028\u2029\u2060-\u2064\ufeff]")
# The longest console line parsed and kept: the kernel's own lines are at most 1 KiB (printk's record), so only a
# hostile or broken guest reaches it. Longer lines are cut here, once, before anything reads them.
MAX_LINE = 4096
# The console one boot keeps in memory (and in its saved file): a guest that prints forever keeps its first half and
# its latest lines, with a line saying how much was dropped between them.
MAX_CONSOLE_CHARACTERS = 64 * 1024 * 1024
# printk's time prefix, `[    1.234567]` (CONFIG_PRINTK_TIME), possibly followed by a caller id.
_PRINTK_TIME = re.compile(r"^\[\s*(\d+\.\d+)\]")


def strip_controls(text: str) -> str:
    """The text without terminal control sequences or control characters (tabs and newlines kept)."""
    return _CONTROL.sub("", text)


def visible(text: str) -> str:
    """The text as a report shows it: each invisible or line-separating character as `<U+XXXX>` (names keep theirs
    everywhere else: the guest's filter must match what the kernel printed)."""
    return _INVISIBLE.sub(lambda match: f"<U+{ord(match[0]):04X}>", text)


def console_line(text: str, unread: int = 0) -> str:
    """A line as the console keeps it and the parser reads it: controls stripped, cut to MAX_LINE characters with a
    note of how much was cut; `unread` more characters of it were let go before it reached here (a line cut as it
    streamed in)."""
    dropped = max(0, len(text) - MAX_LINE) + unread
    if not dropped:
        return strip_controls(text)
    return (
        f"{strip_controls(text[:MAX_LINE])} [pytest-kunit: line cut at {MAX_LINE} characters, {dropped} more dropped]"
    )


@dataclass
class ConsoleMap:
    """Where each suite's header and each case's result line sit in one boot's console (line indices), and how
    long each case ran: from the previous result line or suite header to its own result line, by the kernel's
    printk time stamps where both lines have one, else by when the host read them."""

    headers: dict[str, int] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    results: dict[CaseId, int] = field(default_factory=dict)
    starts: dict[CaseId, int] = field(default_factory=dict)  # a case's first own line: after the one before it
    seconds: dict[CaseId, float] = field(default_factory=dict)
    _boundaries: dict[str, int] = field(default_factory=dict)  # each suite's last header or result line
    _last: tuple[float | None, float] | None = None  # the previous boundary's (printk, host) time

    def note(self, event: ktap.Event, index: int, line: str, host_seconds: float) -> None:
        """Record `event`, which console line `index` (`line`, read at `host_seconds`) completed."""
        if isinstance(event, ktap.SuiteStarted):
            self.headers[event.suite] = self._boundaries[event.suite] = index
        elif isinstance(event, ktap.SuiteFinished):
            self.ends[event.suite] = index
        elif isinstance(event, ktap.CaseResult):
            case = (event.suite, event.case)
            self.starts.setdefault(case, self._boundaries.get(event.suite, index) + 1)
            self.results[case] = self._boundaries[event.suite] = index
        else:
            return
        kernel_now = printk_seconds(line)
        if isinstance(event, ktap.CaseResult) and self._last is not None:
            kernel_then, host_then = self._last
            if kernel_then is not None and kernel_now is not None:
                elapsed = kernel_now - kernel_then
            else:
                elapsed = host_seconds - host_then
            self.seconds[(event.suite, event.case)] = max(0.0, elapsed)
        self._last = (kernel_now, host_seconds)

    def shift(self, start: int, removed: int) -> None:
        """Lines [start, start + removed) left the console (`removed` < 0: that many were inserted at `start`):
        indices at or after them move; one into the removed lines points at the line before them (the note)."""

        def moved(index: int) -> int:
            if index >= start + max(removed, 0):
                return index - removed
            return start - 1 if index >= start else index

        self.headers = {suite: moved(index) for suite, index in self.headers.items()}
        self.ends = {suite: moved(index) for suite, index in self.ends.items()}
        self.results = {case: moved(index) for case, index in self.results.items()}
        self.starts = {case: moved(index) for case, index in self.starts.items()}
        self._boundaries = {suite: moved(index) for suite, index in self._boundaries.items()}

    def case_lines(self, console: Sequence[str], case: CaseId) -> tuple[str, ...]:
        """A case's own slice of the console: its suite's header lines, then what followed the result line before
        its own (the suite's header, for its first case) up to its own; without a result line, up to the suite's end
        (or the console's, if the suite never ended). Earlier cases' lines are theirs, shown in their own reports."""
        header = self.headers.get(case[0])
        if header is None:
            return ()
        start = self.starts.get(case, self._boundaries.get(case[0], header) + 1)
        end = self.results.get(case, self.ends.get(case[0], len(console) - 1))
        head = [console[header]]
        for line in console[header + 1 : start]:
            if not _suite_header_line(line):
                break
            head.append(line)
        return (*head, *console[max(start, header + len(head)) : end + 1])


@dataclass
class BoundedConsole:
    """Keeps a boot's console within `limit` characters: its head, then its latest lines. When the limit is passed,
    a quarter of it is dropped at once from just after the head (so a flood costs linear time), a line in its place
    saying how much, and the console map's indices are moved to match."""

    lines: list[str]
    console_map: ConsoleMap
    limit: int = MAX_CONSOLE_CHARACTERS
    characters: int = 0
    head: int | None = None  # lines kept at the start, once anything was dropped; the note follows them
    dropped_lines: int = 0
    dropped_characters: int = 0

    def append(self, line: str) -> None:
        self.lines.append(line)
        self.characters += len(line)
        if self.characters > self.limit:
            self._drop()

    def _drop(self) -> None:
        if self.head is None:
            kept, self.head = 0, 0
            while self.head < len(self.lines) and kept + len(self.lines[self.head]) <= self.limit // 2:
                kept += len(self.lines[self.head])
                self.head += 1
            self.lines.insert(self.head, "")
            self.console_map.shift(self.head, -1)
        start = self.head + 1
        end, freed = start, 0
        while end < len(self.lines) - 1 and freed < self.limit // 4:
            freed += len(self.lines[end])
            end += 1
        del self.lines[start:end]
        self.console_map.shift(start, end - start)
        self.characters -= freed
        self.dropped_lines += end - start
        self.dropped_characters += freed
        self.lines[self.head] = (
            f"[pytest-kunit: {self.dropped_lines} console lines ({self.dropped_characters} characters) dropped here: "
            f"the guest printed more than the {self.limit} characters kept per boot]"
        )


def _suite_header_line(line: str) -> bool:
    """A line of a suite's header: its `# Subtest:`, version, plan and attribute lines."""
    content = grammar.clean(line).strip()
    return (
        grammar.is_version(content)
        or grammar.plan(content) is not None
        or grammar.subtest(content) is not None
        or grammar.suite_attribute(content) is not None
    )


def printk_seconds(line: str) -> float | None:
    """The kernel's own time stamp of a console line, if it has one."""
    match = _PRINTK_TIME.match(line)
    return float(match[1]) if match else None


@dataclass
class BootRecord:
    """What one boot produced: its console and how it ended."""

    command: list[str]
    console: list[str] = field(default_factory=list)
    timed_out: bool = False
    silent: bool = False  # killed for printing nothing (not for its deadline)
    killed_for: str = ""  # why the runner killed the guest (silence, or its deadline); empty if it ended by itself
    exit_status: int | None = None
    seconds: float = 0.0
    suite_seconds: dict[str, float] = field(default_factory=dict)  # wall time from each suite's header to its result
    console_map: ConsoleMap = field(default_factory=ConsoleMap)  # where and when each suite and case ran
    ktap_started: bool = False  # the console reached a KTAP/TAP version line: KUnit ran
    stopped: bool = False  # pytest-kunit ended the guest on purpose before it finished (not the watchdog)
    outside_signal: int | None = None  # the signal that ended the guest, when pytest-kunit did not send it
    program: str = "QEMU"  # what ran the kernel, as reports name it
