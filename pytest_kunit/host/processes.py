"""Child processes in process groups of their own, stopped together with everything they started (make's -j jobs,
the QEMU behind a wrapper script): nothing outlives an error or an interrupt."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..errors import KunitError

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# How long make has, after SIGTERM, to delete the half-written files of the jobs it was running.
STOP_GRACE = 5.0


def kill_group(leader: int | None) -> None:
    """SIGKILL the process group `leader` leads (it may be gone already, or never have started)."""
    if leader is None:
        return
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)


def stop(process: subprocess.Popen[str]) -> None:
    """Stop `process` and its group: SIGTERM, then SIGKILL for whatever is left after STOP_GRACE seconds."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        process.wait()
        return
    deadline = time.monotonic() + STOP_GRACE
    while time.monotonic() < deadline:
        process.poll()  # reap the leader, or the group would never look empty
        try:
            os.killpg(process.pid, 0)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(0.05)
    else:
        kill_group(process.pid)
    process.wait()


def _die_with_parent(parent: int) -> Callable[[], None]:
    """For the child, before exec: SIGTERM when pytest dies, however it dies (SIGKILL, `timeout`): in a session of
    its own, no terminal's or process group's signal reaches it, and no cleanup of a killed pytest runs."""

    def arrange() -> None:
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # pytest died before that took hold
            os._exit(1)

    return arrange


@contextmanager
def group(command: list[str], **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """Run `command` as the leader of a new process group (so a terminal's Ctrl-C reaches only pytest, which then
    stops the whole group here), however the block ends; it gets SIGTERM should pytest die without stopping it."""
    arrange = _die_with_parent(os.getpid()) if sys.platform == "linux" else None
    process: subprocess.Popen[str] = subprocess.Popen(command, start_new_session=True, preexec_fn=arrange, **popen)
    try:
        yield process
    finally:
        stop(process)


class ToolTimeout(KunitError):
    """An external command (git, tar, rsync, make -n, a compiler) ran past its deadline and was stopped."""


def run_bounded(
    command: list[str],
    timeout: float,
    what: str,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    text: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """subprocess.run(capture_output=True) with a deadline that stops the command's whole process group (tar's xz,
    a compiler's children: they would hold its pipes open); past it, a ToolTimeout saying `what` was stuck."""
    pipe = subprocess.PIPE
    with subprocess.Popen(
        command, cwd=cwd, env=env, text=text, stdout=pipe, stderr=pipe, start_new_session=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.communicate()
            raise ToolTimeout(
                f"{what} did not finish in {timeout:.0f} s, and was stopped.",
                "check the disk (full, or a network mount that hangs) and the input it was given, then run again.",
                detail=f"Command: {' '.join(command)}",
            ) from None
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
