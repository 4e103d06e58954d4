"""A console saved elsewhere (a lab's, a CI job's: --kunit-replay) read as a boot of this run: its cases are those its
KTAP reports, each given the outcome a live boot's console would give it (the same parser, transcript and findings);
no kernel is built and no guest booted.

A console says nothing of the cases it never reached: a case's name first appears on its result line. So a console
that ends inside a suite gets, for each case its plan announced but did not report, a stand-in case (`(case 3 of 4)`,
or `(unfinished)` without a plan), an error as a live case without a result line is; the first carries what the
console logged after the suite's last result (a crash report, say).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..console import ktap, oops
from ..console.transcript import BootRecord, BoundedConsole, console_line
from ..errors import KunitError
from ..findings.outcomes import Outcome, case_outcomes
from ..model import CaseId, Kernel, Settings, Stats
from .runner import Runner

UNNAMED_SUITE = "(unnamed suite)"


class ReplayError(KunitError):
    """A saved console that cannot be replayed."""


@dataclass(frozen=True)
class Replayed:
    """A saved console, parsed once: its cases, and why each stand-in has no result."""

    console: Path
    digest: str  # of the console's text: the replayed "image"
    record: BootRecord
    events: tuple[ktap.Event, ...]
    cases: tuple[CaseId, ...]  # in the console's order, the stand-ins last
    missing: dict[CaseId, str]  # each stand-in: why it has no result
    unfinished_log: tuple[str, ...] = ()  # what the console logged after its unfinished suite's last result


def read_console(console: Path, text: str, shown: str) -> Replayed:
    """Parse `text`, the console saved in `console` (`shown` names it in errors), as a boot's console is parsed."""
    record = BootRecord([], program=f"the replayed console {shown}")
    bounded = BoundedConsole(record.console, record.console_map)
    parser = ktap.KtapParser()
    events: list[ktap.Event] = []
    for raw in text.splitlines():
        line = console_line(raw)
        bounded.append(line)
        for event in parser.feed(line):
            events.append(event)
            record.console_map.note(event, len(record.console) - 1, line, 0.0)
    events.extend(parser.finish())
    record.ktap_started = parser.started
    if not parser.started:
        raise ReplayError(
            f"The console {shown} holds no KTAP version line: KUnit did not run in it, or it is no kernel's console.",
            "replay the serial console of a boot that ran KUnit (kunit.py's or pytest-kunit's saved console, a "
            "lab's log of the kernel's output).",
        )
    cases = list(dict.fromkeys((event.suite, event.case) for event in events if isinstance(event, ktap.CaseResult)))
    missing: dict[CaseId, str] = {}
    unfinished = next((event for event in events if isinstance(event, ktap.Unfinished)), None)
    if unfinished is not None:
        missing = _stand_ins(unfinished, shown)
        cases.extend(missing)
    digest = hashlib.sha256(text.encode(errors="replace")).hexdigest()[:16]
    log = unfinished.log if unfinished is not None else ()
    return Replayed(console, digest, record, tuple(events), tuple(cases), missing, log)


def _stand_ins(unfinished: ktap.Unfinished, shown: str) -> dict[CaseId, str]:
    suite = unfinished.suite or UNNAMED_SUITE
    planned, reported = unfinished.planned, unfinished.reported
    if planned is not None and reported >= planned:
        return {}  # every case reported: only the suite's own closing line is missing
    why = f"The console {shown} ends inside suite {suite}, before this case's result line"
    if planned is None:
        return {(suite, "(unfinished)"): f"{why}; the suite printed no plan, so how many cases it had is unknown."}
    said = f"{why}: its plan announced {planned} cases, {reported} of them reported."
    return {(suite, f"(case {number} of {planned})"): said for number in range(reported + 1, planned + 1)}


class ReplayRunner(Runner):
    """The Runner of a replay: every outcome comes from the one saved console, read once."""

    def __init__(self, settings: Settings, stats: Stats, replayed: Replayed) -> None:
        super().__init__(settings, stats)
        self.replayed = replayed
        self._all: dict[CaseId, Outcome] | None = None

    def run(self, kernel: Kernel, wanted: Sequence[CaseId]) -> None:
        known = self.outcomes.setdefault(kernel.key, {})
        outcomes = self._outcomes(kernel)
        known.update((case, outcomes[case]) for case in wanted if case in outcomes)

    def _outcomes(self, kernel: Kernel) -> dict[CaseId, Outcome]:
        """Every case's outcome, read once (so each report printed outside any case is counted once)."""
        if self._all is not None:
            return self._all
        replayed = self.replayed
        record, console = replayed.record, replayed.console
        self.stats.filters.append(f"replayed {console}")
        results = [event for event in replayed.events if isinstance(event, ktap.CaseResult)]
        read = case_outcomes(kernel.key, record, results, console, set(replayed.cases), _as_printed, {})
        for report in read.outside:
            self.outside.add(report)
        outcomes = dict(read.outcomes)
        evidence = tuple(oops.fault_lines(replayed.unfinished_log))
        for number, (case, why) in enumerate(replayed.missing.items()):
            outcome = Outcome.no_result(case, console, why, record.console_map.case_lines(record.console, case))
            if number == 0 and replayed.unfinished_log:  # the case in flight when the console ended
                result = replace(outcome.result, diagnostics=replayed.unfinished_log)
                outcome = replace(outcome, result=result, evidence=evidence)
            outcomes[case] = outcome
        self._all = outcomes
        return outcomes


def _as_printed(lines: tuple[str, ...]) -> tuple[str, ...]:
    """A replayed crash report stays as the kernel printed it: no build here to decode it against."""
    return lines
