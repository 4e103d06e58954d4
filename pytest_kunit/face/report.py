"""What a user reads of a case: its failure paragraph, its parameters, its reruns; the session's figures in JUnit."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pytest

from ..compat import add_junit_testcase_attributes
from ..console import oops
from ..console.ktap import CaseResult, Status
from ..console.transcript import visible
from ..findings.sanitizer_verdicts import reports_text

if TYPE_CHECKING:
    from ..findings.outcomes import Outcome
    from ..model import Stats


def params_text(result: CaseResult) -> str:
    lines = []
    for param in result.params:
        suffix = f" # {param.reason}" if param.reason else ""
        lines.append(f"{param.status.value:>10}  {param.name}{suffix}")
    return visible("\n".join(lines)) + "\n"


_HEADLINES = {
    Status.FAILED: "FAILED",
    Status.CRASHED: "CRASHED: the test thread died",
    Status.TIMED_OUT: "TIMED OUT",
    Status.NO_RESULT: "NO RESULT: the kernel printed no result line for this case",
}


def render_failure(outcome: Outcome) -> str:
    result = outcome.result
    headline = f"{result.suite}.{result.case} {_HEADLINES.get(result.status, result.status.value.upper())}"
    if result.location is not None:
        headline += f" at {result.location.file}:{result.location.line}"
    module = dict(result.attributes).get("module")
    if module:
        headline += f" (module {module})"
    parts = [headline]
    if outcome.reports:
        titles = "; ".join(report.title() for report in outcome.reports)
        said = f" (its own result line said {outcome.said.value}: KUnit did not see it)" if outcome.said else ""
        parts.append(f"sanitizer report while this case ran{said}: {titles}")
    if outcome.error:
        parts.append(outcome.error)
    if outcome.earlier:
        parts.append(earlier_text(outcome))
    failing = [param for param in result.params if param.status not in (Status.PASSED, Status.SKIPPED)]
    if failing:
        parts.append("failing parameters: " + ", ".join(param.name for param in failing))
    crash_report = bool(outcome.evidence) and result.status is not Status.FAILED
    diagnostics = list(result.diagnostics)
    if crash_report:
        # The decoded crash report below replaces the raw one the diagnostics hold: the oops is shown once.
        diagnostics = diagnostics[: len(diagnostics) - len(oops.fault_lines(diagnostics))]
    if diagnostics:
        parts.append("\n".join(diagnostics))
    if crash_report:
        parts.append("kernel crash report:\n" + "\n".join(outcome.evidence))
    if outcome.reports:
        parts.append(reports_text(outcome.reports))
    parts.append(f"console: {outcome.console}")
    return visible("\n".join(parts))


def earlier_text(outcome: Outcome) -> str:
    """How the guests before the one that gave this outcome stopped while the case ran."""
    lines = [f"guest {number}: {stop}" for number, stop in enumerate(outcome.earlier, 1)]
    lines.append(f"guest {len(outcome.earlier) + 1}, fresh: the result above")
    why = "run again in a fresh guest, since an earlier one stopped for a reason that may not have been this case's:"
    return why + "\n" + "\n".join(lines)


def junit_properties(stats: Stats) -> list[tuple[str, str]]:
    """The session's own figures, as JUnit <testsuite> properties: what no single case's time includes."""
    return [
        ("kunit_builds", str(stats.builds)),
        ("kunit_build_seconds", f"{stats.build_seconds:.3f}"),
        ("kunit_boots", str(stats.boots)),
        ("kunit_boot_seconds", f"{stats.boot_seconds:.3f}"),
        ("kunit_kept_batches", str(stats.kept_batches)),
    ]


JUNIT_NAMES_KEY = "kunit_junit_names"  # the <testcase> classname and name a case's report carries (xdist sends it)


def junit_names(suite_nodeid: str, name: str) -> dict[str, str]:
    """A case's JUnit classname and name as pytest makes them for an item without parameters (its suite's node id's
    parts, the fragment's path dotted), said whole: pytest reads a `[` in a KUnit name as parameters, and 9.2 adds a
    `]` to the name where it does ("… [brackets] & more]")."""
    parts = suite_nodeid.split("::")
    parts[0] = parts[0].replace("/", ".")
    return {"classname": ".".join(parts), "name": name}


class JunitNames:
    """The process that writes --junitxml: each case's names as its report carries them, before pytest records it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        names = getattr(report, JUNIT_NAMES_KEY, None)
        if isinstance(names, dict):
            add_junit_testcase_attributes(self.config, report, names)


def split_verdicts(reports: Iterable[Any], arch_key: str, case_key: str) -> list[str]:
    """A matrix run's cases that failed on some architectures and passed on others, one line each: from each
    report's user properties (set on the case node: its architecture, and the case it is on every architecture)."""
    verdicts: dict[str, dict[str, bool]] = {}  # case -> arch -> failed
    for report in reports:
        properties = dict(getattr(report, "user_properties", ()))
        if arch_key not in properties or case_key not in properties:
            continue
        failed = report.failed or (report.when == "setup" and report.outcome == "error")
        passed = report.when == "call" and report.passed
        if failed or passed:
            on = verdicts.setdefault(str(properties[case_key]), {})
            on[str(properties[arch_key])] = on.get(str(properties[arch_key]), False) or bool(failed)
    lines = []
    for case, on in verdicts.items():
        failing = [arch for arch, failed in on.items() if failed]
        passing = [arch for arch, failed in on.items() if not failed]
        if failing and passing:
            lines.append(f"{case}: failed on {', '.join(failing)}; passed on {', '.join(passing)}")
    return lines
