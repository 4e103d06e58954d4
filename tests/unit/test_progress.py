"""The build's progress line through pytest's own TerminalReporter, whichever pytest runs (isatty changed in 8.4)."""

from __future__ import annotations

import io
import time

import pytest
from _pytest.terminal import TerminalReporter

from pytest_kunit.host.progress import Progress, estimate


class Output(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def progress_on(config: pytest.Config, tty: bool) -> tuple[Progress, Output]:
    output = Output(tty)
    progress = Progress(config)
    progress.reporter = TerminalReporter(config, output)
    return progress, output


def test_a_terminal_gets_one_line_rewritten_in_place(pytestconfig: pytest.Config) -> None:
    progress, output = progress_on(pytestconfig, tty=True)
    progress("building kernel: 1 CC a.o")
    progress.done("built kunit.kunitconfig in 1.0 s")
    text = output.getvalue()
    assert text.startswith("\rkunit: building kernel: 1 CC a.o")
    assert text.rstrip().endswith("kunit: built kunit.kunitconfig in 1.0 s")


def test_a_log_gets_plain_lines(pytestconfig: pytest.Config) -> None:
    progress, output = progress_on(pytestconfig, tty=False)
    progress("building kernel: 1 CC a.o")
    progress("building kernel: 2 CC b.o")  # within 15 s of the first: not repeated in a log
    progress.done("built kunit.kunitconfig in 1.0 s")
    assert output.getvalue().splitlines() == [
        "kunit: building kernel: 1 CC a.o",
        "kunit: built kunit.kunitconfig in 1.0 s",
    ]


def test_a_phase_always_reaches_a_log(pytestconfig: pytest.Config) -> None:
    """Each phase's start is a line of its own in a log, however soon after the last; only the steps are throttled."""
    progress, output = progress_on(pytestconfig, tty=False)
    progress.phase("configuring kernel")
    progress("building kernel: 1 CC a.o")  # within 15 s of the phase's line: not in the log
    progress.phase("building kernel: make -j2 vmlinux (about 900 steps as its last build)")
    progress("building kernel: 2 CC b.o")
    progress.phase("booting the kernel", terminal=False)
    assert output.getvalue().splitlines() == [
        "kunit: configuring kernel",
        "kunit: building kernel: make -j2 vmlinux (about 900 steps as its last build)",
        "kunit: booting the kernel",
    ]


def test_a_phase_for_logs_only_leaves_a_terminal_alone(pytestconfig: pytest.Config) -> None:
    """Test boots start while pytest writes its own progress on the terminal: no line of ours is rewritten over it."""
    progress, output = progress_on(pytestconfig, tty=True)
    progress.phase("booting the kernel", terminal=False)
    assert output.getvalue() == ""
    progress.phase("listing the cases")
    assert "kunit: listing the cases" in output.getvalue()


def test_a_log_gets_a_step_line_every_15_seconds_at_most(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    progress, output = progress_on(pytestconfig, tty=False)
    for step in range(1, 61):  # a step a second for a minute
        progress(f"building kernel: {step} steps")
        clock[0] += 1
    assert output.getvalue().splitlines() == [f"kunit: building kernel: {step} steps" for step in (1, 16, 31, 46)]


def test_estimate_says_what_is_left_once_it_can() -> None:
    assert estimate(0, 1000, 0.0) == "0 steps, 0 s so far"
    assert estimate(250, 1000, 60.0) == "250 of ~1000 steps, 1 min 00 s so far, about 3 min 00 s left"
    assert estimate(1200, 1000, 90.0) == "1200 steps, 1 min 30 s so far"  # more than expected: no guess
    assert estimate(10, 0, 5.0) == "10 steps, 5 s so far"  # nothing to go by
