"""The keeper of a guest that stays up (--kunit-keep-guest): a process of its own, detached from the pytest run that
started it, which runs the guest and relays its console to one run at a time over a Unix socket. What the guest
prints while no run is connected is kept and handed to the next one first. It ends the guest after IDLE seconds
without a run, and ends with the guest, writing its exit status beside the socket before the connected run sees the
end.

    python -m pytest_kunit.guest.keeper SOCKET IDLE pty|pipe pause|run COMMAND...

`pty` gives the guest a terminal (QEMU's serial port waits for one), `pipe` two pipes (UML, whose console drops what a
full terminal will not take). `pause` stops the guest (SIGSTOP) while no run is connected: a QEMU guest's clock
jumps over idle time under TCG (-icount's sleep=off), so an idle guest would spin a host core; stopped, its clock
stands still too. A UML guest (`run`) idles as any host program does. What it relays means nothing to the keeper:
guest/kept.py speaks to /init.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import tty
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from ..host.processes import kill_group
from .launch import default_signals, uml_child

READ_BYTES = 1 << 16
# A guest that prints this much while no run reads it is not a test kernel at rest: it is ended.
MOST_KEPT = 64 << 20


def exit_file(socket_path: Path) -> Path:
    """Where the keeper writes the guest's exit status (its return code) once the guest has ended."""
    return socket_path.with_name(socket_path.name + ".exit")


def pid_file(socket_path: Path) -> Path:
    """Where the keeper writes its process id before it listens."""
    return socket_path.with_name(socket_path.name + ".pid")


def _start(command: Sequence[str], console: str) -> tuple[subprocess.Popen[bytes], int, int]:
    """The guest, and the descriptors its console is read from and written to."""
    if console == "pty":
        main, terminal = os.openpty()
        tty.setraw(terminal)
        guest = subprocess.Popen(
            command,
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            start_new_session=True,
            preexec_fn=default_signals,
        )
        os.close(terminal)
        return guest, main, main
    guest = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=uml_child
    )
    assert guest.stdin is not None and guest.stdout is not None
    return guest, guest.stdout.fileno(), guest.stdin.fileno()


def _ended(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(socket_path: Path, idle: float, console: str, pause: bool, command: Sequence[str]) -> int:
    signal.signal(signal.SIGTERM, _ended)
    guest, output, given = _start(command, console)

    def hold(stopped: bool) -> None:
        if pause:
            with suppress(ProcessLookupError):
                os.kill(guest.pid, signal.SIGSTOP if stopped else signal.SIGCONT)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path))
    listener.listen(1)
    selector = selectors.DefaultSelector()
    selector.register(output, selectors.EVENT_READ, "guest")
    selector.register(listener, selectors.EVENT_READ, "listener")
    kept = bytearray()
    client: socket.socket | None = None
    idle_since = time.monotonic()

    def drop(gone: socket.socket) -> None:
        """The run is gone: the guest waits (stopped, if paused) for the next, whose idle time starts now."""
        nonlocal client, idle_since
        selector.unregister(gone)
        gone.close()
        client, idle_since = None, time.monotonic()
        hold(True)

    try:
        while True:
            timeout = None if client is not None else idle_since + idle - time.monotonic()
            if timeout is not None and timeout <= 0:
                return 0  # idle too long: the guest is ended below
            for key, _ in selector.select(timeout):
                if key.data == "guest":
                    try:
                        data = os.read(output, READ_BYTES)
                    except OSError:  # a terminal whose other end has closed
                        data = b""
                    if not data:
                        try:
                            status = guest.wait(timeout=2.0)
                        except subprocess.TimeoutExpired:
                            status = -signal.SIGKILL
                        exit_file(socket_path).write_text(f"{status}\n")
                        return 0
                    if client is not None:
                        try:
                            client.sendall(data)
                            continue
                        except OSError:
                            drop(client)
                    kept += data
                    if len(kept) > MOST_KEPT:
                        return 1
                elif key.data == "listener":
                    connection, _ = listener.accept()
                    if client is not None:
                        connection.close()  # one run at a time (kept.py holds a lock besides)
                        continue
                    client = connection
                    hold(False)
                    selector.register(client, selectors.EVENT_READ, "client")
                    client.sendall(kept)
                    kept.clear()
                elif client is not None:
                    try:
                        data = client.recv(READ_BYTES)
                    except OSError:  # reset: the run closed with the guest's output unread, as a run killed does
                        data = b""
                    if data:
                        os.write(given, data)
                        continue
                    drop(client)
    finally:
        kill_group(guest.pid)  # SIGKILL ends a stopped guest too
        guest.wait()
        socket_path.unlink(missing_ok=True)
        if client is not None:
            client.close()


def main(argv: Sequence[str]) -> int:
    socket_path, idle, console, pause, *command = argv
    # Forked away from the run that started it, which reaps the parent at once: no run is left with a child to wait
    # for, and the keeper outlives it.
    if os.fork():
        return 0
    pid_file(Path(socket_path)).write_text(f"{os.getpid()}\n")
    return serve(Path(socket_path), float(idle), console, pause == "pause", command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
