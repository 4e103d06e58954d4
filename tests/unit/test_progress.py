"""The build's progress line through pytest's own TerminalReporter, whichever pytest runs (isatty changed in 8.4)."""

from __future__ import annotations

import io

import pytest
from _pytest.terminal import TerminalReporter

from pytest_kunit.progress import Progress


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
