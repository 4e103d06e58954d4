"""The run's results in the shape of kunit.py's `--json` (tools/testing/kunit/kunit_json.py, KernelCI's test API):
nested groups of `name`, `sub_groups` and `test_cases`, each case a `name` and a `status` of PASS, FAIL, SKIP or
ERROR, every group carrying the run's common fields.

kunit.py's tree is one boot's KTAP: a group "KUnit Test Group" holding a group per suite, whose cases are its test
cases and whose parameterised cases are groups of their parameters. A run of one kernel gives that tree; a run of
several (fragments, architectures) gives one group per kernel under "KUnit Test Group", each with its own common
fields and its suites inside, so a reader that walks `sub_groups` finds every case.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..console.ktap import Status
from ..host.cache import write_atomically

if TYPE_CHECKING:
    import pytest

    from ..findings.outcomes import Outcome
    from .nodes import KunitCase

REPORT_KEY = "kunit_json"  # the attribute a case's report carries its entry in (xdist sends it to the controller)
TOP_GROUP = "KUnit Test Group"  # kunit.py's name for the whole run's group
GIT_BRANCH = "kselftest"  # what kunit.py writes in every group's git_branch


class KunitPyStatus(enum.Enum):
    """kunit.py's JSON statuses: kunit_parser's SUCCESS, SKIPPED, TEST_CRASHED, and FAIL for every other one."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"
    ERROR = "ERROR"  # TEST_CRASHED: the case printed no result line of its own (the kernel died, or hung)


# A verdict taken from the case's own result line, as kunit.py reads that line: `ok` passes, `# SKIP` skips, and
# every `not ok` fails, the faulted and timed-out tries KUnit reports included. XFAIL is KTAP's, never KUnit's.
_FROM_RESULT_LINE = {
    Status.PASSED: KunitPyStatus.PASS,
    Status.SKIPPED: KunitPyStatus.SKIP,
    Status.XFAIL: KunitPyStatus.FAIL,
    Status.FAILED: KunitPyStatus.FAIL,
    Status.CRASHED: KunitPyStatus.FAIL,
    Status.TIMED_OUT: KunitPyStatus.FAIL,
}


@dataclass(frozen=True)
class JsonCase:
    """One case's entry (sent by xdist workers as a dict, on the case's report)."""

    kernel: str  # the key of the kernel that ran it: its fragment's node id (with the architecture in a matrix)
    order: int  # its place in the kernel's run order, which kunit.py's tree follows
    suite: str
    case: str
    status: str  # a KunitPyStatus value
    params: tuple[tuple[str, str], ...]  # a parameterised case's parameters and their KunitPyStatus values
    arch: str  # the ARCH the kernel was built with, as kunit.py's `arch`
    build_dir: str  # the kernel's build directory, as kunit.py's `build_environment`


def outcome_status(outcome: Outcome) -> KunitPyStatus:
    """kunit.py's status for a case with this outcome: what its result line says, ERROR without one."""
    status = outcome.result.status
    if status is Status.NO_RESULT:
        return KunitPyStatus.ERROR
    if status in (Status.CRASHED, Status.TIMED_OUT) and not outcome.own_line:
        return KunitPyStatus.ERROR
    return _FROM_RESULT_LINE[status]


def _param_status(status: Status) -> KunitPyStatus:
    return _FROM_RESULT_LINE.get(status, KunitPyStatus.ERROR)


def case_entry(item: KunitCase, report: pytest.TestReport) -> JsonCase | None:
    """The entry of the case this report settles: its call, or a set-up that failed or skipped; None otherwise."""
    outcome = item.outcome
    params: tuple[tuple[str, str], ...] = ()
    if report.when == "call" and outcome is not None:
        status = outcome_status(outcome)
        params = tuple((param.name, _param_status(param.status).value) for param in outcome.result.params)
    elif report.when == "setup" and report.skipped:
        status = KunitPyStatus.SKIP
    elif report.when == "setup" and report.failed:
        # No result line, no boot, or no kernel: the case did not run to a verdict.
        status = KunitPyStatus.ERROR
    else:
        return None
    kernel = item.kernel
    try:
        order = kernel.cases.index((item.suite, item.name))
    except ValueError:
        order = len(kernel.cases)
    return JsonCase(
        kernel.key,
        order,
        item.suite,
        item.name,
        status.value,
        params,
        kernel.arch.make.arch,
        str(kernel.build.build_dir),
    )


def _common(arch: str, defconfig: str, build_dir: str) -> dict[str, Any]:
    """The fields kunit.py gives every group."""
    return {
        "arch": arch,
        "defconfig": defconfig,
        "build_environment": build_dir,
        "lab_name": None,
        "kernel": None,
        "job": None,
        "git_branch": GIT_BRANCH,
    }


def _group(
    name: str, sub_groups: list[dict[str, Any]], cases: list[dict[str, Any]], common: dict[str, Any]
) -> dict[str, Any]:
    return {"name": name, "sub_groups": sub_groups, "test_cases": cases, **common}


_WORSE = (KunitPyStatus.FAIL.value, KunitPyStatus.ERROR.value)


def _suite_groups(entries: list[JsonCase], common: dict[str, Any]) -> list[dict[str, Any]]:
    """A group per suite, in the kernel's order; a parameterised case is a group of its parameters."""
    suites: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for entry in sorted(entries, key=lambda entry: entry.order):
        sub_groups, cases = suites.setdefault(entry.suite, ([], []))
        if entry.params:
            parameters = [{"name": name, "status": status} for name, status in entry.params]
            if entry.status in _WORSE and entry.status not in {status for _, status in entry.params}:
                # The case's verdict is none of its parameters' (it crashed after them, a sanitizer report failed
                # it): an unnamed entry carries it, as kunit.py's for a parameter it never saw finish.
                parameters.append({"name": "", "status": entry.status})
            sub_groups.append(_group(entry.case, [], parameters, common))
        else:
            cases.append({"name": entry.case, "status": entry.status})
    return [_group(suite, sub_groups, cases, common) for suite, (sub_groups, cases) in suites.items()]


def document(entries: Iterable[JsonCase]) -> dict[str, Any]:
    """kunit.py's JSON tree of the run: one kernel's suites directly under the top group, several kernels' each
    under a group of their own (named by the kernel's key, its fragment's node id)."""
    kernels: dict[str, list[JsonCase]] = {}
    for entry in entries:
        kernels.setdefault(entry.kernel, []).append(entry)
    groups = {}
    for key, cases in kernels.items():
        common = _common(cases[0].arch, key, cases[0].build_dir)
        groups[key] = (_suite_groups(cases, common), common)
    if len(groups) == 1:
        ((suites, common),) = groups.values()
        return _group(TOP_GROUP, suites, [], common)
    kernel_groups = [_group(key, suites, [], common) for key, (suites, common) in groups.items()]
    return _group(TOP_GROUP, kernel_groups, [], _common("", "", ""))


def attach(item: KunitCase, report: pytest.TestReport) -> None:
    """Put the case's entry on its report, which xdist carries to the controller that writes the file."""
    entry = case_entry(item, report)
    if entry is not None:
        setattr(report, REPORT_KEY, asdict(entry))


class KunitJsonWriter:
    """The process that reports (never an xdist worker): gathers every case's entry from its report, and writes the
    file once at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[JsonCase] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        fields = getattr(report, REPORT_KEY, None)
        if isinstance(fields, dict):
            params = tuple((str(name), str(status)) for name, status in fields.get("params", ()))
            self.entries.append(JsonCase(**{**fields, "params": params}))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = session.config.invocation_params.dir / self.path
        write_atomically(path, json.dumps(document(self.entries), indent=4) + "\n")
