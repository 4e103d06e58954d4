"""What sanitizer reports mean for a run: the case each one fails, and a failure of the run itself for each printed
while no case ran (boot, between suites, a background scan), reported once per kernel even under xdist."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..console import ktap_lines as grammar
from ..console.ktap import CaseResult, Status
from .sanitizer_reports import Finding

# A case whose own result line says one of these is failed by a report printed while it ran.
_NOT_FAILING = (Status.PASSED, Status.SKIPPED, Status.XFAIL)


def without_reports(diagnostics: Sequence[str], reports: Iterable[Finding]) -> tuple[str, ...]:
    """The case's diagnostics without the reports' own lines: each report is shown once, decoded."""
    lines = list(diagnostics)
    for report in reports:
        wanted = [grammar.clean(line).strip() for line in report.lines]
        contents = [line.strip() for line in lines]
        for index in range(len(lines) - len(wanted) + 1):
            if contents[index : index + len(wanted)] == wanted:
                del lines[index : index + len(wanted)]
                break
    return tuple(lines)


def blame(result: CaseResult, reports: tuple[Finding, ...]) -> tuple[CaseResult, Status | None]:
    """The case's result with the reports printed while it ran: failed if its own line said otherwise (then that
    status is returned too, else None). A case KUnit itself failed for the report (KASAN's and UBSAN's KUnit
    integration) stays failed once."""
    if not reports:
        return result, None
    result = replace(result, diagnostics=without_reports(result.diagnostics, reports))
    if result.status not in _NOT_FAILING:
        return result, None
    return replace(result, status=Status.FAILED), result.status


def reports_text(reports: Iterable[Finding]) -> str:
    return "\n".join(f"{report.sanitizer} report:\n" + "\n".join(report.lines) for report in reports)


@dataclass(frozen=True)
class OutsideReport:
    """A report printed while no case of `kernel` (its fragment's node id) ran."""

    kernel: str
    sanitizer: str
    title: str
    when: str
    lines: tuple[str, ...]
    console: str
    missing: bool = False  # not a report printed but one the run cannot do without: its headline is the title

    def render(self) -> str:
        if self.missing:
            headline = (
                f"{self.title}\nWhat to do: see below why the guest ended first; it fails the run, since an "
                "unfinished scan may hide leaks."
            )
        else:
            headline = (
                f"The kernel printed a {self.sanitizer} report {self.when}, while no test case ran: {self.title}\n"
                "What to do: read the report below; it fails the run, since no case can own it (a case's own "
                "failure holds any report printed while it ran)."
            )
        return headline + "\n" + "\n".join(self.lines) + f"\nconsole: {self.console}"


class OutsideReports:
    """The distinct reports printed outside any case, per kernel (a boot-time report is seen by every boot)."""

    def __init__(self) -> None:
        self.reports: dict[tuple[str, str, str], OutsideReport] = {}

    def add(self, report: OutsideReport) -> None:
        self.reports.setdefault((report.kernel, report.title, report.when), report)

    def dump(self) -> list[dict[str, Any]]:
        """For xdist's workeroutput, which carries plain data only."""
        return [asdict(report) for report in self.reports.values()]

    def load(self, dumped: Iterable[Mapping[str, Any]]) -> None:
        for fields in dumped:
            self.add(OutsideReport(**{**fields, "lines": tuple(fields["lines"])}))

    def by_kernel(self) -> dict[str, str]:
        """What fails the run, per kernel: its reports, each rendered."""
        reports: dict[str, list[OutsideReport]] = {}
        for report in self.reports.values():
            reports.setdefault(report.kernel, []).append(report)
        return {kernel: "\n\n".join(report.render() for report in found) for kernel, found in reports.items()}
