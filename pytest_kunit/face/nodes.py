"""pytest nodes: a kunitconfig file collects suites, a suite collects its kernel test cases."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..compat import TerminalRepr, point_crash_line
from ..console.ktap import Status
from ..errors import KunitError, KunitWarning, warning_as_error
from ..fragments.session import STATE, SessionState
from ..guest.planning import is_slow
from ..kbuild.case_locations import location_of
from ..model import Kernel, kernel_key
from .named_ids import unknown_name_error
from .report import earlier_text, params_text, render_failure

if TYPE_CHECKING:
    from ..arch import Arch
    from ..findings.outcomes import Outcome


class KunitCaseError(Exception):
    """A kernel test case did not pass: carries the console's own evidence; its text is the failure paragraph."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(render_failure(outcome))
        self.outcome = outcome


# Markers from KUnit's test attributes (6.6+): `-m "not slow"` leaves out what KUnit calls slow or very_slow.
SLOW_MARKER = "slow"
MARKERS = (
    f"{SLOW_MARKER}: a kernel test case KUnit marks speed: slow or very_slow",
    "kunit_module(name): the kernel module a KUnit suite belongs to",
    "kunit_arch(name): the architecture a kernel test case runs on (-m \"kunit_arch(name='arm64')\")",
)
ARCH_PROPERTY = "kunit_arch"  # a matrix run's case: its architecture (JUnit, the terminal summary)
CASE_PROPERTY = "kunit_case"  # and the case it is on every architecture: fragment::suite::case


def fragment_nodeid(config: pytest.Config, path: Path) -> str | None:
    """A readable, stable node id for a fragment outside the rootdir (pytest would give it an empty one).

    Inside the rootdir pytest's own id stands. Outside it: the path relative to the directory pytest was started in
    when it lies below it, else the absolute path. Either way the same on every xdist worker and across runs.
    """
    resolved = path.resolve()
    try:
        resolved.relative_to(config.rootpath)
        return None
    except ValueError:
        pass
    base = config.invocation_params.dir.resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return resolved.as_posix()


def _state(node: pytest.Item | pytest.Collector) -> SessionState:
    return node.config.stash[STATE]


def _chain(node: pytest.Collector) -> tuple[str, ...]:
    """The names of `node` below its fragment in a node id: (suite,), or (arch, suite) in a run over several."""
    if isinstance(node, KunitconfigFile) or not isinstance(node.parent, pytest.Collector):
        return ()
    return (*_chain(node.parent), node.name)


def _suites(parent: pytest.Collector, kernel: Kernel) -> Iterable[KunitSuite | KunitEmptySuite]:
    """The suites of `kernel` (those of its fragment, in a shared kernel) as collectors under `parent`, and those
    it lists with no case as items; a node id on the command line naming a suite it does not have is refused with
    those it has."""
    suites: dict[str, list[str]] = {}
    for suite, case in kernel.cases:
        if kernel.suites is None or suite in kernel.suites:
            suites.setdefault(suite, []).append(case)
    empty = [suite for suite in kernel.empty_suites if kernel.suites is None or suite in kernel.suites]
    named = [*suites, *empty]
    unknown = unknown_name_error(parent.config, parent.path, _chain(parent), "suite", named, parent.nodeid)
    if unknown is not None:
        raise unknown
    for suite, cases in suites.items():
        yield KunitSuite.from_parent(parent, name=suite, kernel=kernel, cases=cases)
    for suite in empty:
        yield KunitEmptySuite.from_parent(parent, name=suite, kernel=kernel)


class _ReportsKunitErrors(pytest.Collector):
    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, KunitError):
            return excinfo.value.render()
        if isinstance(excinfo.value, KunitWarning):
            return warning_as_error(excinfo.value)
        return super().repr_failure(excinfo)


class KunitconfigFile(pytest.File, _ReportsKunitErrors):
    """A kunitconfig fragment: building it gives one kernel, whose suites become collectors; in a run over several
    architectures, one kernel per architecture, each under a collector named after it."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        state = _state(self)
        if not state.settings.matrix:
            yield from _suites(self, state.kernel_for(self.path, self.nodeid))
            return
        for name in state.settings.matrix:
            yield KunitArch.from_parent(self, name=name, arch=state.arches[name])


class KunitArch(_ReportsKunitErrors):
    """One architecture's kernel of a fragment (--kunit-arch with several): node id `<fragment>::<arch>`, the key of
    its kernel; a build that fails fails this architecture's collection alone."""

    def __init__(self, *, arch: Arch, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.arch = arch

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        assert self.parent is not None
        key = kernel_key(self.parent.nodeid, self.name)  # == self.nodeid
        yield from _suites(self, _state(self).kernel_for(self.path, key, self.arch))


class KunitSuite(_ReportsKunitErrors):
    def __init__(self, *, kernel: Kernel, cases: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kernel = kernel
        self.cases = cases

    def collect(self) -> Iterable[pytest.Item]:
        unknown = unknown_name_error(self.config, self.path, _chain(self), "case", self.cases, f"suite {self.nodeid}")
        if unknown is not None:
            raise unknown
        for case in self.cases:
            yield KunitCase.from_parent(self, name=case, kernel=self.kernel, suite=self.name)


class KunitEmptySuite(pytest.Item):
    """A suite the kernel lists with no case (each of its cases needs an option this kernel lacks: 6.12's
    kunit_fault on UML): skipped, as kunit.py reports it, from the list boot alone; nothing of it boots."""

    def __init__(self, *, kernel: Kernel, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kernel = kernel
        self.add_marker(pytest.mark.kunit_arch(name=kernel.arch.name))
        # A mark, so that the skip is reported at the item (its fragment), as a kernel's own skip is.
        reason = f"suite {self.name} has no cases in this kernel (each needs a config option it lacks)"
        self.add_marker(pytest.mark.skip(reason=reason))

    def runtest(self) -> None:
        raise AssertionError(f"{self.nodeid} is skipped by its mark and never runs")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name  # the fragment: the kernel names no source line for a suite with no case


class KunitCase(pytest.Item):
    """One kernel test case: carries its kernel and suite, so nothing is recovered from its node id."""

    def __init__(self, *, kernel: Kernel, suite: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kernel = kernel
        self.suite = suite
        self.outcome: Outcome | None = None
        self.attributes = dict(kernel.attributes.get((suite, self.name), ()))
        if is_slow(tuple(self.attributes.items())):
            self.add_marker(SLOW_MARKER)
        if "module" in self.attributes:
            self.add_marker(pytest.mark.kunit_module(self.attributes["module"]))
        self.add_marker(pytest.mark.kunit_arch(name=kernel.arch.name))
        if _state(self).settings.matrix:
            fragment = self.getparent(KunitconfigFile)
            assert fragment is not None
            self.user_properties.append((ARCH_PROPERTY, kernel.arch.name))
            self.user_properties.append((CASE_PROPERTY, f"{fragment.nodeid}::{suite}::{self.name}"))
        # Every attribute the kernel gave this case reaches JUnit's properties.
        self.user_properties.extend((f"kunit_{name}", value) for name, value in self.attributes.items())

    def setup(self) -> None:
        failure: KunitError | None = None
        try:
            self.outcome = _state(self).pipeline.outcome(self.kernel, self.suite, self.name, self.nodeid)
        except KunitError as error:
            failure = error
        except KunitWarning as warning:
            failure = KunitError(warning_as_error(warning))
        if failure is not None:
            # pytest renders set-up errors itself (a traceback), never through repr_failure; outside the `except`,
            # so no "during handling" chain is shown either.
            pytest.fail(failure.render(), pytrace=False)
        assert self.outcome is not None
        if self.outcome.result.status is Status.NO_RESULT:
            # No result line is an error of the run (reported at setup), never a pass.
            self._attach_console("setup")
            pytest.fail(render_failure(self.outcome), pytrace=False)

    def runtest(self) -> None:
        assert self.outcome is not None
        result = self.outcome.result
        if result.params:
            self.add_report_section("call", "kunit parameters", params_text(result))
        if self.outcome.earlier:
            # Also for a case that passed on its rerun: a pass in the second guest is worth knowing about.
            self.add_report_section("call", "kunit rerun", earlier_text(self.outcome))
        if result.status is Status.PASSED:
            return
        if result.status is Status.SKIPPED:
            pytest.skip(result.reason or "skipped by the kernel")  # finish_report points it at the case
        if result.status is Status.XFAIL:
            raise pytest.xfail.Exception(result.reason or "the kernel expected this case to fail")
        self._attach_console("call")
        raise KunitCaseError(self.outcome)

    def _attach_console(self, when: str) -> None:
        """The case's own slice of the console; the boot's whole console (its file is named in the failure) only
        with -v."""
        assert self.outcome is not None
        if self.outcome.lines:
            self.add_report_section(when, f"kunit console: {self.suite}.{self.name}", "\n".join(self.outcome.lines))
        if self.config.option.verbose <= 0:
            return
        try:
            console = self.outcome.console.read_text(errors="replace")
        except OSError:
            return
        self.add_report_section(when, f"kunit console ({self.outcome.console})", console)

    def finish_report(self, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
        """What pytest's own report of a case lacks: the case's time, a skip located at the case, a failure's
        one-line headline (JUnit's message=, the short summary) above its whole paragraph."""
        self._time_report(report)
        if report.skipped and isinstance(report.longrepr, tuple):
            # Where the kernel's case is, not the line of this module that reported the skip.
            path, line, _ = self.reportinfo()
            report.longrepr = (str(path), (line or 0) + 1, report.longrepr[2])
        if report.failed and call.excinfo is not None:
            self._headline(report.longrepr, str(call.excinfo.value))

    def _headline(self, representation: object, text: str) -> None:
        """A failure's crash line is its paragraph's first line at the case's location (pytest would take the whole
        multi-line text at the line of this module that raised it)."""
        if not text.strip():
            return
        path, line, _ = self.reportinfo()
        point_crash_line(representation, str(path), (line or 0) + 1, text.strip().splitlines()[0])

    def _time_report(self, report: pytest.TestReport) -> None:
        """Give the report the case's own run time, as the console tells it (what JUnit and --durations show); the
        set-up, which may have booted the guest for the whole batch, none: boots are the session's time."""
        if self.outcome is None:
            return  # no boot answered: the time measured is all there is
        if report.when == "setup":
            report.duration = 0.0
        elif report.when == "call" and self.outcome.seconds is not None:
            report.duration = self.outcome.seconds

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, KunitCaseError):
            # pytest's own representation, which xdist and JUnit carry whole; its body the paragraph as it is.
            return super().repr_failure(excinfo, style="value")
        if isinstance(excinfo.value, KunitError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        name = f"{self.suite}.{self.name}"
        location = location_of(_state(self).locations.get(self.kernel.key, {}), self.suite, self.name)
        if location is not None:
            return self.kernel.tree / location[0], location[1] - 1, name
        # The C definition was not found (e.g. generated by a macro): point at the fragment that built it.
        return self.path, 0, name
