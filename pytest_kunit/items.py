"""pytest nodes: a kunitconfig file collects suites, a suite collects its kernel test cases."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .errors import KunitError
from .ktap import CaseResult, Status

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from .runner import Kernel, Outcome
    from .state import SessionState


class KunitCaseError(Exception):
    """A kernel test case did not pass: carries the console's own evidence."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.result.status.value)
        self.outcome = outcome


def _state(node: pytest.Item | pytest.Collector) -> SessionState:
    from .state import STATE

    return node.config.stash[STATE]


class KunitconfigFile(pytest.File):
    """A `*.kunitconfig` fragment: building it gives one kernel, whose suites become collectors."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        kernel = _state(self).kernel_for(self.path, self.nodeid)
        suites: dict[str, list[str]] = {}
        for suite, case in kernel.cases:
            suites.setdefault(suite, []).append(case)
        for suite, cases in suites.items():
            yield KunitSuite.from_parent(self, name=suite, kernel=kernel, cases=cases)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, KunitError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)


class KunitSuite(pytest.Collector):
    def __init__(self, *, kernel: Kernel, cases: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kernel = kernel
        self.cases = cases

    def collect(self) -> Iterable[pytest.Item]:
        for case in self.cases:
            yield KunitCase.from_parent(self, name=case, kernel=self.kernel, suite=self.name)


class KunitCase(pytest.Item):
    def __init__(self, *, kernel: Kernel, suite: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kernel = kernel
        self.suite = suite
        self.outcome: Outcome | None = None

    def setup(self) -> None:
        self.outcome = _state(self).runner.outcome(self.nodeid)
        if self.outcome.result.status is Status.NO_RESULT:
            # No result line is an error of the run (reported at setup), never a pass.
            self._attach_console()
            pytest.fail(render_failure(self.outcome), pytrace=False)

    def runtest(self) -> None:
        assert self.outcome is not None
        result = self.outcome.result
        if result.params:
            self.add_report_section("call", "kunit parameters", _params_text(result))
        if result.status is Status.PASSED:
            return
        if result.status is Status.SKIPPED:
            # Point the skip at the C test case when its location is known.
            known_line = self.reportinfo()[1] is not None
            raise pytest.skip.Exception(result.reason or "skipped by the kernel", _use_item_location=known_line)
        self._attach_console()
        raise KunitCaseError(self.outcome)

    def _attach_console(self) -> None:
        assert self.outcome is not None
        try:
            console = self.outcome.console.read_text(errors="replace")
        except OSError:
            return
        self.add_report_section("call", f"kunit console ({self.outcome.console})", console)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, KunitCaseError):
            return render_failure(excinfo.value.outcome)
        if isinstance(excinfo.value, KunitError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        name = f"{self.suite}.{self.name}"
        location = _state(self).locations.get(self.kernel.key, {}).get(self.name)
        if location is not None:
            return self.kernel.tree / location[0], location[1] - 1, name
        return self.path, None, name


def _params_text(result: CaseResult) -> str:
    lines = []
    for param in result.params:
        suffix = f" # {param.reason}" if param.reason else ""
        lines.append(f"{param.status.value:>10}  {param.name}{suffix}")
    return "\n".join(lines) + "\n"


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
    parts = [headline]
    if outcome.error:
        parts.append(outcome.error)
    failing = [param for param in result.params if param.status not in (Status.PASSED, Status.SKIPPED)]
    if failing:
        parts.append("failing parameters: " + ", ".join(param.name for param in failing))
    if result.diagnostics:
        parts.append("\n".join(result.diagnostics))
    if outcome.evidence and result.status is not Status.FAILED:
        parts.append("kernel crash report:\n" + "\n".join(outcome.evidence))
    parts.append(f"console: {outcome.console}")
    return "\n".join(parts)
