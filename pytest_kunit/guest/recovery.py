"""What a guest that stopped before reporting the case in flight means for that case: a verdict, a rerun, or an error.

Pure: the runner describes each stop (how the guest ended, whether it had crashed earlier, what the console says) and
this module decides. A case is never blamed for an earlier case's crash, nor for a signal from outside: either gets
the case one rerun in a fresh guest, and only what happens in a clean guest becomes its verdict.

A guest that goes silent with more cases to run does not tell which case hangs: KUnit prints a case's result line
without a newline (6.1 through at least 6.12), and printk holds such a record back from the console until the next
line is printed. A case that passed right before a hang looks in flight. So such a silence is rerun, with the case
in flight alone in its guest, where its result line is followed by the suite's and cannot be held back.
"""

from __future__ import annotations

import enum
import signal
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..console import oops
from ..console.ktap import CaseResult, Status
from ..errors import BootError


class Cause(enum.Enum):
    """How a guest stopped before the case in flight had its result line."""

    SILENT = "went silent and was killed by the watchdog"
    DIED = "died"  # its console ended inside the case: a panic, a reboot, QEMU exiting
    KILLED = "was ended by a signal"  # QEMU ended by a signal pytest-kunit did not send


def cause_of(timed_out: bool, outside_signal: int | None) -> Cause:
    if outside_signal is not None:
        return Cause.KILLED
    return Cause.SILENT if timed_out else Cause.DIED


@dataclass(frozen=True)
class Stop:
    """One guest that stopped while a case was in flight."""

    cause: Cause
    console: str  # where that guest's console was saved
    evidence: tuple[str, ...] = ()  # the kernel's crash report within the case's own log
    earlier_crash: str = ""  # what had already crashed in that guest before the case began; "" for a clean guest
    signal: int | None = None  # for KILLED
    program: str = "QEMU"  # what ran the kernel
    silent_with_cases_left: bool = False  # it printed nothing at the end, with later cases still to run

    @property
    def may_hide_a_result(self) -> bool:
        """Silent with cases left to run: the case in flight may have finished with its result line held back."""
        return self.silent_with_cases_left and not self.evidence

    def describe(self) -> str:
        """One sentence for the case's report."""
        if self.cause is Cause.KILLED:
            what = f"{killed_by(self.signal, self.program)} while this case ran"
        elif self.earlier_crash:
            what = f"the guest {self.cause.value} during this case, after {self.earlier_crash}"
        elif self.may_hide_a_result:
            what = (
                f"the guest {self.cause.value} during this case, with later cases to run: KUnit's result line "
                "reaches the console only once the next line is printed, so the hang may have been a later case's"
            )
        else:
            what = f"the guest {self.cause.value} during this case"
        return f"{what} (console: {self.console})"


class Action(enum.Enum):
    VERDICT = "verdict"  # the case is reported CRASHED or TIMED OUT now
    RERUN = "rerun"  # the case is run again in a fresh guest (alone, if its guest may have hidden its result)
    GIVE_UP = "give up"  # QEMU keeps being killed from outside: the cases get an error


@dataclass(frozen=True)
class Decision:
    action: Action
    status: Status | None = None  # the verdict, for VERDICT


def decide(stop: Stop, earlier: Sequence[Stop]) -> Decision:
    """What to do with the case in flight, given how this guest stopped and how its earlier guests did."""
    if stop.cause is Cause.KILLED:
        if any(before.cause is Cause.KILLED for before in earlier):
            return Decision(Action.GIVE_UP)
        return Decision(Action.RERUN)
    if stop.earlier_crash and not any(before.earlier_crash for before in earlier):
        # A tainted kernel may hang or die because of the earlier crash: only a clean guest can blame this case.
        return Decision(Action.RERUN)
    if stop.may_hide_a_result and not any(before.may_hide_a_result for before in earlier):
        return Decision(Action.RERUN)
    # Killed by the watchdog with no crash report: a hang. Anything else that ended inside the case crashed.
    return Decision(
        Action.VERDICT, Status.TIMED_OUT if stop.cause is Cause.SILENT and not stop.evidence else Status.CRASHED
    )


def earlier_crash(results: Iterable[CaseResult], before: Sequence[str]) -> str:
    """What crashed in a guest before its case in flight began: a case (reported crashed, or whose log holds an
    oops) or, outside any case, the kernel; "" when nothing did. `before` is the console up to that case's start."""
    for result in results:
        report = oops.fault_lines(result.diagnostics)
        if result.status is Status.CRASHED or report:
            first = f": {report[0].strip()}" if report else ""
            return f"{result.suite}.{result.case} had crashed{first}"
    report = oops.fault_lines(before)
    return f"the kernel had crashed: {report[0].strip()}" if report else ""


def signal_name(number: int) -> str:
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"


def killed_by(number: int | None, program: str = "QEMU") -> str:
    """`program` (QEMU, the UML kernel) ended by a signal pytest-kunit did not send: from outside (an OOM killer, a
    user), or its own crash."""
    name = signal_name(number) if number is not None else "a signal"
    if number in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        return f"{program} was killed by {name} from outside (pytest-kunit did not send it)"
    return f"{program} died of {name}"


def outside_kill_error(stops: Sequence[Stop]) -> BootError:
    """The error every case left gets when QEMU was ended by a signal from outside again, in a fresh guest too."""
    last = stops[-1]
    return BootError(
        f"{killed_by(last.signal, last.program)}, again in a fresh guest, before this case had a result: this says "
        "nothing about the case, which is not booted again.",
        f"find what ends {last.program} (the kernel log of the host shows the OOM killer; free memory, or run fewer "
        "xdist workers), then run again.",
        detail="\n".join(f"guest {number}: {stop.describe()}" for number, stop in enumerate(stops, 1)),
    )
