"""What a user reads: a kernel test case's failure paragraph and parameters, why a boot ran nothing, the session's
figures in JUnit."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import faults
from .blame import reports_text
from .errors import BootError
from .ktap import CaseResult, Status
from .recovery import killed_by

if TYPE_CHECKING:
    from .outcomes import Outcome
    from .qemu import BootRecord
    from .runner import Stats


def params_text(result: CaseResult) -> str:
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
        diagnostics = diagnostics[: len(diagnostics) - len(faults.fault_lines(diagnostics))]
    if diagnostics:
        parts.append("\n".join(diagnostics))
    if crash_report:
        parts.append("kernel crash report:\n" + "\n".join(outcome.evidence))
    if outcome.reports:
        parts.append(reports_text(outcome.reports))
    parts.append(f"console: {outcome.console}")
    return "\n".join(parts)


# The kernel's first console line: anything before it (or, without it, everything) is QEMU's (or UML's) own.
_KERNEL_STARTED = re.compile(r"\bLinux version \d")


def qemu_failure(record: BootRecord) -> BootError | None:
    """The guest program's own error, in its own words, when it failed (exited non-zero by itself) before the kernel
    spoke."""
    if record.timed_out or record.exit_status in (0, None):
        return None
    said = []
    for line in record.console:
        if _KERNEL_STARTED.search(line):
            return None
        if line.strip():
            said.append(line.strip())
    if not said:
        return None
    command = record.command
    image = Path(command[command.index("-kernel") + 1]) if "-kernel" in command[:-1] else None
    damaged = f"the image {image} (build directory {image.parent})" if image else "the kernel image"
    return BootError(
        f"{record.program} failed before the kernel started (exit status {record.exit_status}): {said[0]}",
        f"read {record.program}'s own words below. If it could not load the kernel, {damaged} is damaged: delete it "
        "and run again to rebuild it. Otherwise run the command below by hand.",
        detail=f"{record.program} said:\n" + "\n".join(said[:10]) + f"\nCommand: {shlex.join(command)}",
    )


def earlier_text(outcome: Outcome) -> str:
    """How the guests before the one that gave this outcome stopped while the case ran."""
    lines = [f"guest {number}: {stop}" for number, stop in enumerate(outcome.earlier, 1)]
    lines.append(f"guest {len(outcome.earlier) + 1}, fresh: the result above")
    why = "run again in a fresh guest, since an earlier one stopped for a reason that may not have been this case's:"
    return why + "\n" + "\n".join(lines)


def boot_failure(record: BootRecord) -> BootError:
    """Why a boot printed no KTAP, with the console's tail; the guest program's own words first when it failed."""
    failed = None if record.outside_signal is not None else qemu_failure(record)
    if failed is not None:
        return failed
    tail = "\n".join(record.console[-25:])
    if any(faults.is_panic(line) for line in record.console):
        what = "The kernel panicked before KUnit started."
    elif record.timed_out:
        what = f"Before KUnit started, {record.killed_for or 'the guest printed nothing for too long and was killed'}."
    elif record.outside_signal is not None:
        what = f"{killed_by(record.outside_signal, record.program)} before KUnit started."
    elif not record.console:
        what = f"{record.program} exited (status {record.exit_status}) without printing anything."
    elif not any(_KERNEL_STARTED.search(line) for line in record.console):
        what = (
            "The kernel printed nothing: it died before its console came up (a fault that early ends the guest "
            "silently; a 6.1 KASAN kernel booted through its PVH entry does, see the README's Sanitizers)."
        )
    else:
        what = "The guest's console has no KTAP output at all: KUnit did not run."
    remedy = (
        f"check the kunitconfig enables CONFIG_KUNIT and the guest's console, that the kernel starts under "
        f"{record.program}, and read the console below."
    )
    return BootError(what, remedy, detail=f"Console tail:\n{tail}")


def junit_properties(stats: Stats) -> list[tuple[str, str]]:
    """The session's own figures, as JUnit <testsuite> properties: what no single case's time includes."""
    return [
        ("kunit_builds", str(stats.builds)),
        ("kunit_build_seconds", f"{stats.build_seconds:.3f}"),
        ("kunit_boots", str(stats.boots)),
        ("kunit_boot_seconds", f"{stats.boot_seconds:.3f}"),
    ]


def junit_writer(config: pytest.Config) -> Any | None:
    """The --junitxml report this process writes, to add <testsuite> properties to; None without one (an xdist worker
    never writes it). pytest offers no public handle on it: its stash key where this pytest keeps it there, else the
    plugin object junitxml registers, which is the same object."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return registered_junit_writer(config)
    return config.stash.get(xml_key, None)


def registered_junit_writer(config: pytest.Config) -> Any | None:
    plugins = config.pluginmanager.get_plugins()
    return next((plugin for plugin in plugins if callable(getattr(plugin, "add_global_property", None))), None)
