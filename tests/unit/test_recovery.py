"""The decision about a case whose guest stopped before its result line: verdict, rerun, or error."""

from __future__ import annotations

import signal

import pytest

from pytest_kunit.console.ktap import CaseResult, Status
from pytest_kunit.guest.launch import caught_signal
from pytest_kunit.guest.recovery import (
    Action,
    Cause,
    Decision,
    Stop,
    cause_of,
    decide,
    earlier_crash,
    killed_by,
    outside_kill_error,
)

OOPS = ("BUG: kernel NULL pointer dereference, address: 0000000000000000", "Oops: 0000 [#1] PREEMPT NOPTI")
CLEAN_SILENT = Stop(Cause.SILENT, "c1")
CLEAN_DIED = Stop(Cause.DIED, "c1", evidence=("Kernel panic - not syncing: boom",))
TAINTED_SILENT = Stop(Cause.SILENT, "c1", earlier_crash="s.a had crashed")
TAINTED_DIED = Stop(Cause.DIED, "c1", evidence=OOPS, earlier_crash="s.a had crashed")
KILLED = Stop(Cause.KILLED, "c1", signal=9)
SILENT_WITH_CASES_LEFT = Stop(Cause.SILENT, "c1", silent_with_cases_left=True)


@pytest.mark.parametrize(
    ("stop", "earlier", "decision"),
    [
        # A clean guest: the verdict is the case's, a hang when the watchdog found it silent with no crash report.
        (CLEAN_SILENT, [], Decision(Action.VERDICT, Status.TIMED_OUT)),
        (CLEAN_DIED, [], Decision(Action.VERDICT, Status.CRASHED)),
        (Stop(Cause.SILENT, "c1", evidence=OOPS), [], Decision(Action.VERDICT, Status.CRASHED)),
        (Stop(Cause.DIED, "c1"), [], Decision(Action.VERDICT, Status.CRASHED)),
        # A guest that had crashed before the case began: run it again in a fresh guest, whatever it shows.
        (TAINTED_SILENT, [], Decision(Action.RERUN)),
        (TAINTED_DIED, [], Decision(Action.RERUN)),
        # ... once: a second tainted guest (a crash at boot, say) does not buy a third.
        (TAINTED_SILENT, [TAINTED_SILENT], Decision(Action.VERDICT, Status.TIMED_OUT)),
        (CLEAN_SILENT, [TAINTED_DIED], Decision(Action.VERDICT, Status.TIMED_OUT)),
        (CLEAN_DIED, [TAINTED_SILENT], Decision(Action.VERDICT, Status.CRASHED)),
        # Killed from outside: never a verdict; rerun once, then give up.
        (KILLED, [], Decision(Action.RERUN)),
        (Stop(Cause.KILLED, "c1", earlier_crash="s.a had crashed", signal=15), [], Decision(Action.RERUN)),
        (KILLED, [TAINTED_SILENT], Decision(Action.RERUN)),
        (KILLED, [KILLED], Decision(Action.GIVE_UP)),
        (KILLED, [TAINTED_SILENT, KILLED], Decision(Action.GIVE_UP)),
        # A kill from outside in the first guest does not spend the rerun a tainted second guest is owed.
        (TAINTED_SILENT, [KILLED], Decision(Action.RERUN)),
        # Silent with later cases to run: the hang may be a later case's (this one's result line held back), so the
        # case runs again alone; a second such silence is a verdict, and a crash report is evidence enough.
        (SILENT_WITH_CASES_LEFT, [], Decision(Action.RERUN)),
        (SILENT_WITH_CASES_LEFT, [SILENT_WITH_CASES_LEFT], Decision(Action.VERDICT, Status.TIMED_OUT)),
        (CLEAN_SILENT, [SILENT_WITH_CASES_LEFT], Decision(Action.VERDICT, Status.TIMED_OUT)),
        (
            Stop(Cause.SILENT, "c1", evidence=OOPS, silent_with_cases_left=True),
            [],
            Decision(Action.VERDICT, Status.CRASHED),
        ),
    ],
)
def test_decide(stop: Stop, earlier: list[Stop], decision: Decision) -> None:
    assert decide(stop, earlier) == decision


def test_cause_of() -> None:
    assert cause_of(timed_out=True, outside_signal=None) is Cause.SILENT
    assert cause_of(timed_out=False, outside_signal=None) is Cause.DIED
    # A signal from outside wins even when the watchdog had also fired.
    assert cause_of(timed_out=True, outside_signal=9) is Cause.KILLED


def test_earlier_crash_names_the_case_and_its_first_fault_line() -> None:
    results = [
        CaseResult("s", "fine", Status.PASSED),
        CaseResult("s", "bug", Status.CRASHED, diagnostics=("    # bug: log", *OOPS, "# bug: test case crashed")),
        CaseResult("s", "later", Status.CRASHED),
    ]
    assert earlier_crash(results, []) == "s.bug had crashed: BUG: kernel NULL pointer dereference, address: " + (
        "0000000000000000"
    )


def test_earlier_crash_counts_an_oops_in_a_case_that_passed() -> None:
    # Some cases oops on purpose and pass: the kernel is tainted all the same.
    results = [CaseResult("s", "oopses", Status.PASSED, diagnostics=OOPS)]
    assert earlier_crash(results, []).startswith("s.oopses had crashed: BUG: kernel NULL pointer")


def test_earlier_crash_reported_by_the_kernel_without_an_oops() -> None:
    results = [CaseResult("s", "died", Status.CRASHED, diagnostics=("# died: test case crashed",))]
    assert earlier_crash(results, []) == "s.died had crashed"


def test_earlier_crash_outside_any_case() -> None:
    before = ["Linux version 6.1", "  kernel BUG at mm/slub.c:42!", "KTAP version 1"]
    assert earlier_crash([], before) == "the kernel had crashed: kernel BUG at mm/slub.c:42!"


def test_no_earlier_crash() -> None:
    results = [CaseResult("s", "fine", Status.PASSED), CaseResult("s", "failed", Status.FAILED, diagnostics=("x",))]
    assert earlier_crash(results, ["Linux version 6.1", "clocksource: Switched to clocksource tsc"]) == ""


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (9, "QEMU was killed by signal 9 (SIGKILL) from outside (pytest-kunit did not send it)"),
        (15, "QEMU was killed by signal 15 (SIGTERM) from outside (pytest-kunit did not send it)"),
        (6, "QEMU died of signal 6 (SIGABRT)"),
        (11, "QEMU died of signal 11 (SIGSEGV)"),
        (250, "QEMU died of signal 250"),
        (None, "QEMU died of a signal"),
    ],
)
def test_killed_by(number: int | None, text: str) -> None:
    assert killed_by(number) == text


def test_stop_describes_itself_for_the_report() -> None:
    assert TAINTED_SILENT.describe() == (
        "the guest went silent and was killed by the watchdog during this case, after s.a had crashed (console: c1)"
    )
    assert CLEAN_DIED.describe() == "the guest died during this case (console: c1)"
    assert KILLED.describe() == (
        "QEMU was killed by signal 9 (SIGKILL) from outside (pytest-kunit did not send it) while this case ran "
        "(console: c1)"
    )


def test_outside_kill_error_lists_every_guest() -> None:
    text = outside_kill_error([KILLED, Stop(Cause.KILLED, "c2", signal=int(signal.SIGKILL))]).render()
    lines = text.splitlines()
    assert lines[0].startswith("QEMU was killed by signal 9 (SIGKILL) from outside")
    assert lines[1].startswith("What to do: ")
    assert lines[2:] == [
        "guest 1: QEMU was killed by signal 9 (SIGKILL) from outside (pytest-kunit did not send it) while this "
        "case ran (console: c1)",
        "guest 2: QEMU was killed by signal 9 (SIGKILL) from outside (pytest-kunit did not send it) while this "
        "case ran (console: c2)",
    ]


def test_caught_signal_is_read_from_qemus_last_words() -> None:
    console = ["    ok 1 first", "qemu-system-x86_64: terminating on signal 15 from pid 4242 (kill)"]
    assert caught_signal(console) == 15
    assert caught_signal(["    ok 1 first", "reboot: Restarting system"]) is None
    # Only QEMU's own last lines count, not a test's output long before.
    assert caught_signal(["# terminating on signal 1 (a test's own words)", *["x"] * 5]) is None
