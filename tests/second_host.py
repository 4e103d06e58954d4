"""A second host on this machine: a user of its own (its HOME, cache and Python environment), reached as another
machine is, over execnet's socket server. The real tier's two-host test and bench/two_hosts.py start it the same way."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def as_user(user: str) -> list[str]:
    """The command prefix that runs a command as `user` (root: runuser; else sudo without a password)."""
    return ["runuser", "-u", user, "--"] if os.geteuid() == 0 else ["sudo", "-n", "-u", user, "--"]


@contextlib.contextmanager
def socket_server(user: str, python: Path, log: Path, timeout: float = 30.0) -> Iterator[str]:
    """execnet's socket server started as `user` with `python`, in an environment of its own (nothing of this
    session's: PYTHONPATH, caches), as a login on another machine has; yields its HOST:PORT. Ended with its process
    group: the workers and guests it started."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    home = pwd.getpwnam(user).pw_dir
    # Unbuffered: its ready line is read at once, wherever PYTHONUNBUFFERED is unset.
    command = [*as_user(user), "env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", str(python), "-u"]
    with log.open("w") as stream:
        server = subprocess.Popen(
            [*command, "-m", "execnet.script.socketserver", address],
            cwd=home,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while "Entering Accept loop" not in log.read_text():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the socket server as {user} did not start: {log.read_text()}")
            time.sleep(0.1)
        yield address
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=10)
