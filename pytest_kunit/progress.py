"""The build's progress: a live status line on a terminal, an occasional plain line in a log (CI)."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator

import pytest


def _isatty(reporter: object) -> bool:
    # TerminalReporter.isatty became a method in pytest 8.4; before, it was a plain bool attribute.
    isatty = getattr(reporter, "isatty", False)
    return bool(isatty() if callable(isatty) else isatty)


class Progress:
    """Call with a message as work advances; `done` prints a closing line."""

    def __init__(self, config: pytest.Config) -> None:
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._capture = config.pluginmanager.get_plugin("capturemanager")
        self._last = 0.0

    @contextlib.contextmanager
    def _uncaptured(self) -> Iterator[None]:
        """Builds happen while pytest collects, when it captures what is written: progress must reach the user."""
        if self._capture is None:
            yield
            return
        with self._capture.global_and_fixture_disabled():
            yield

    def __call__(self, message: str) -> None:
        if self.reporter is None:
            return
        now = time.monotonic()
        if _isatty(self.reporter):
            if now - self._last >= 0.1:
                width = shutil.get_terminal_size().columns
                with self._uncaptured():
                    self.reporter.rewrite(f"kunit: {message}"[: width - 1], erase=True, flush=True)
                self._last = now
        elif now - self._last >= 15:
            with self._uncaptured():
                self.reporter.write_line(f"kunit: {message}", flush=True)
            self._last = now

    def done(self, message: str) -> None:
        if self.reporter is None:
            return
        with self._uncaptured():
            if _isatty(self.reporter):
                self.reporter.rewrite("", erase=True)
            self.reporter.write_line(f"kunit: {message}", flush=True)
