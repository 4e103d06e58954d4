"""External commands with a deadline: past it the whole process group is stopped (a child holding the pipes open
too), and the error says what was stuck."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_kunit.host.processes import ToolTimeout, run_bounded


def test_a_stuck_command_and_its_children_are_stopped_at_the_deadline(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ToolTimeout) as stuck:
        run_bounded(["sh", "-c", "sleep 60 & sleep 60"], 0.3, f"Extracting {tmp_path / 'k.tar'}")
    assert time.monotonic() - started < 10  # subprocess.run's own timeout waits for the child holding the pipe
    assert stuck.value.what == f"Extracting {tmp_path / 'k.tar'} did not finish in 0 s, and was stopped."
    assert "sleep 60" in stuck.value.detail


def test_a_command_in_time_gives_its_output(tmp_path: Path) -> None:
    done = run_bounded(["sh", "-c", "pwd; echo oops >&2; exit 3"], 10, "pwd", cwd=tmp_path, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, f"{tmp_path}\n", "oops\n")
