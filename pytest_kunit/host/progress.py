"""The build's progress: a live status line on a terminal, an occasional plain line in a log (CI); on an xdist
worker, whose own terminal nobody sees, the same lines sent to the controller's (image_service.py)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable

import pytest

from ..compat import uncaptured

LOG_EVERY = 15.0  # seconds between two progress lines in a log (CI): enough to see it move, not to fill it
# On an xdist worker: what carries a progress line to the controller's terminal.
FORWARD = pytest.StashKey[Callable[[str], None]]()


def _isatty(reporter: object) -> bool:
    # TerminalReporter.isatty became a method in pytest 8.4; before, it was a plain bool attribute.
    isatty = getattr(reporter, "isatty", False)
    return bool(isatty() if callable(isatty) else isatty)


class Progress:
    """Call with a message as work advances; `done` prints a closing line."""

    def __init__(self, config: pytest.Config) -> None:
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._forward = config.stash.get(FORWARD, None)
        self._config = config
        self._last = 0.0

    def __call__(self, message: str) -> None:
        """Work advancing: a terminal sees each message (ten a second at most), a log or the xdist controller one line
        per 15 s at most."""
        now = time.monotonic()
        if self._forward is not None:
            if now - self._last >= LOG_EVERY:
                self._forward(message)
                self._last = now
        elif self.reporter is None:
            return
        elif _isatty(self.reporter):
            if now - self._last >= 0.1:
                self._rewrite(message)
                self._last = now
        elif now - self._last >= LOG_EVERY:
            self._line(message)
            self._last = now

    def phase(self, message: str, terminal: bool = True) -> None:
        """A phase starts (extract, configure, build, list, boot): always shown, on a log as a line of its own;
        `terminal=False` leaves a terminal alone (pytest's own progress is on it then)."""
        if self._forward is not None:
            self._forward(message)
        elif self.reporter is None:
            return
        elif _isatty(self.reporter):
            if terminal:
                self._rewrite(message)
        else:
            self._line(message)
        self._last = time.monotonic()

    def done(self, message: str) -> None:
        if self._forward is not None:
            self._forward(message)
            return
        if self.reporter is None:
            return
        with uncaptured(self._config):
            if _isatty(self.reporter):
                self.reporter.rewrite("", erase=True)
            self.reporter.write_line(f"kunit: {message}", flush=True)

    def _rewrite(self, message: str) -> None:
        assert self.reporter is not None
        width = shutil.get_terminal_size().columns
        with uncaptured(self._config):
            self.reporter.rewrite(f"kunit: {message}"[: width - 1], erase=True, flush=True)

    def _line(self, message: str) -> None:
        assert self.reporter is not None
        with uncaptured(self._config):
            self.reporter.write_line(f"kunit: {message}", flush=True)


def estimate(done: int, expected: int, elapsed: float) -> str:
    """How far a build is, for a person: steps done of those expected, time so far and an estimate of what is left."""
    so_far = f"{done} steps, {_duration(elapsed)} so far"
    if expected <= done or done == 0:
        return so_far
    left = elapsed / done * (expected - done)
    return f"{done} of ~{expected} steps, {_duration(elapsed)} so far, about {_duration(left)} left"


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"
