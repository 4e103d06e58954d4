"""A guest's console as users read it: terminal control sequences stripped, and where and when each case ran.

The KTAP parser (ktap.py) says what each line means; this module only notes, per parsed event, the line it came
from and the time it was printed, so a failing case's report can hold its own slice of the console and its duration.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import ktap
from .planning import CaseId

# What firmware and the kernel send to a terminal (SeaBIOS clears the screen: ESC c, ESC[?7l, ESC[2J): CSI and OSC
# sequences, other two-character escapes, and C0 control characters but tab.
_CONTROL = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])?|[\x00-\x08\x0b-\x1f\x7f]"
)
# printk's time prefix, `[    1.234567]` (CONFIG_PRINTK_TIME), possibly followed by a caller id.
_PRINTK_TIME = re.compile(r"^\[\s*(\d+\.\d+)\]")


def strip_controls(text: str) -> str:
    """The text without terminal control sequences or control characters (tabs and newlines kept)."""
    return _CONTROL.sub("", text)


def printk_seconds(line: str) -> float | None:
    """The kernel's own time stamp of a console line, if it has one."""
    match = _PRINTK_TIME.match(line)
    return float(match[1]) if match else None


@dataclass
class ConsoleMap:
    """Where each suite's header and each case's result line sit in one boot's console (line indices), and how
    long each case ran: from the previous result line or suite header to its own result line, by the kernel's
    printk time stamps where both lines have one, else by when the host read them."""

    headers: dict[str, int] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    results: dict[CaseId, int] = field(default_factory=dict)
    seconds: dict[CaseId, float] = field(default_factory=dict)
    _last: tuple[float | None, float] | None = None  # the previous boundary's (printk, host) time

    def note(self, event: ktap.Event, index: int, line: str, host_seconds: float) -> None:
        """Record `event`, which console line `index` (`line`, read at `host_seconds`) completed."""
        if isinstance(event, ktap.SuiteStarted):
            self.headers[event.suite] = index
        elif isinstance(event, ktap.SuiteFinished):
            self.ends[event.suite] = index
        elif isinstance(event, ktap.CaseResult):
            self.results[(event.suite, event.case)] = index
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

    def case_lines(self, console: Sequence[str], case: CaseId) -> tuple[str, ...]:
        """A case's slice of the console: its suite's header to its result line; without a result line, to the
        suite's end (or the console's, if the suite never ended)."""
        start = self.headers.get(case[0])
        if start is None:
            return ()
        end = self.results.get(case, self.ends.get(case[0], len(console) - 1))
        return tuple(console[start : end + 1])
