"""Each case's outcome from a boot's console: its own result line, failed by any sanitizer report printed while it ran
(sanitizer_verdicts.py), with crash reports decoded against the kernel's build (decode.py); and the reports no case
owns."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..console import ktap, oops
from ..console.transcript import BootRecord
from ..model import CaseId
from .sanitizer_reports import Finding, find_reports, place
from .sanitizer_verdicts import OutsideReport, blame

# A crash report decoded against one kernel's build: here, or where that kernel was built (image_service.py).
Decode = Callable[[tuple[str, ...]], tuple[str, ...]]


@dataclass(frozen=True)
class Outcome:
    result: ktap.CaseResult
    console: Path  # the whole console of the boot, as a file
    evidence: tuple[str, ...] = ()
    error: str = ""  # why a case has no result line
    earlier: tuple[str, ...] = ()  # how each earlier guest stopped while this case ran (it was then rerun)
    lines: tuple[str, ...] = ()  # the case's own slice of the console
    seconds: float | None = None  # how long the case ran, by the console's times
    reports: tuple[Finding, ...] = ()  # sanitizer reports printed while the case ran, decoded
    said: ktap.Status | None = None  # what the case's own result line said, when a report overruled it
    # Whether the verdict is the case's own result line; False: the runner's, from how its guest stopped (died or went
    # silent while it ran), which kunit.py reports as an error.
    own_line: bool = True

    @classmethod
    def no_result(cls, case: CaseId, console: Path, why: str, lines: tuple[str, ...] = ()) -> Outcome:
        """A case the console printed no result line for: an error, never a pass."""
        return cls(ktap.CaseResult(case[0], case[1], ktap.Status.NO_RESULT), console, error=why, lines=lines)


@dataclass(frozen=True)
class Reported:
    """What one boot's console says beyond its cases in flight."""

    outcomes: dict[CaseId, Outcome]  # the wanted cases it printed a result line for
    outside: list[OutsideReport]  # the sanitizer reports it printed while no case ran


def case_outcomes(
    kernel: str,
    record: BootRecord,
    results: Iterable[ktap.CaseResult],
    console: Path,
    wanted: Collection[CaseId],
    decode: Decode,
    earlier: Mapping[CaseId, tuple[str, ...]],
) -> Reported:
    """The outcomes of the wanted cases among `results` (each with how its earlier guests stopped), and the reports
    printed outside any case, under `kernel` (its fragment's node id); `console` is where the boot's console is."""
    layout = record.console_map
    placement = place(find_reports(record.console), layout)
    outside = []
    for unowned in placement.outside:
        report = _decoded(unowned.finding, decode)
        outside.append(
            OutsideReport(kernel, report.sanitizer, report.title(), unowned.when, report.lines, str(console))
        )
    outcomes: dict[CaseId, Outcome] = {}
    for event in results:
        case = (event.suite, event.case)
        if case not in wanted:
            continue
        found = placement.by_case.get(case, ())
        result, said = blame(event, found)  # the raw lines leave the diagnostics: the report is shown once, decoded
        reports = tuple(_decoded(report, decode) for report in found)
        # Only a case that crashed or timed out needs its crash report decoded (some passing cases oops on purpose;
        # a failed one shows its own diagnostics).
        failed = result.status in (ktap.Status.CRASHED, ktap.Status.TIMED_OUT)
        crash_report = decode(tuple(oops.fault_lines(result.diagnostics))) if failed else ()
        outcomes[case] = Outcome(
            result,
            console,
            crash_report,
            earlier=earlier.get(case, ()),
            lines=layout.case_lines(record.console, case),
            seconds=layout.seconds.get(case),
            reports=reports,
            said=said,
        )
    return Reported(outcomes, outside)


def _decoded(finding: Finding, decode: Decode) -> Finding:
    return replace(finding, lines=decode(finding.lines))
