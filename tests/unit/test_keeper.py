"""The keeper (guest/keeper.py) with a stand-in guest, a program that echoes its input: what one run sends reaches the
guest, what the guest prints while no run is connected reaches the next run first, the guest is stopped between runs
when asked to be, and its end is written beside the socket."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_kunit.guest import keepers
from pytest_kunit.guest.keeper import exit_file, pid_file

# Echoes each line it reads; "later" is echoed half a second later; ends on "quit".
ECHO = (
    "import sys, time\n"
    "print('up', flush=True)\n"
    "for line in sys.stdin:\n"
    "    if line.strip() == 'quit':\n"
    "        sys.exit(3)\n"
    "    if line.strip() == 'later':\n"
    "        time.sleep(0.5)\n"
    "    print('echo ' + line.strip(), flush=True)\n"
)


def received(connection: socket.socket, until: str) -> str:
    text = ""
    deadline = time.monotonic() + 10
    while until not in text and time.monotonic() < deadline:
        connection.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            data = connection.recv(4096)
        except TimeoutError:
            break
        if not data:
            break
        text += data.decode()
    return text


def state_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[keepers.Kept]:
    kept = keepers.Kept(tmp_path, "guest")
    yield kept
    written = pid_file(kept.socket)
    if written.exists() and keepers.alive(int(written.read_text())):  # no keeper outlives its test
        keepers.end(int(written.read_text()))


@pytest.mark.parametrize("console", ["pty", "pipe"])
def test_a_run_talks_to_the_guest_and_the_next_run_gets_what_it_printed_meanwhile(
    kept: keepers.Kept, console: str
) -> None:
    connection, keeper = keepers.start(kept, console, False, [sys.executable, "-c", ECHO])
    assert "up" in received(connection, "up")
    connection.sendall(b"one\n")
    assert "echo one" in received(connection, "echo one")
    connection.sendall(b"later\n")
    connection.shutdown(socket.SHUT_WR)  # this run ends before the guest answers: its answer is kept for the next
    assert "echo later" not in received(connection, "the keeper's end")
    connection.close()
    time.sleep(1)
    again = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    again.connect(str(kept.socket))
    assert "echo later" in received(again, "echo later")
    again.sendall(b"quit\n")
    assert received(again, "never said") == ""  # the guest ended: the keeper closed the connection
    deadline = time.monotonic() + 10
    while not exit_file(kept.socket).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert exit_file(kept.socket).read_text().strip() == "3"
    while keepers.alive(keeper) and time.monotonic() < deadline:
        time.sleep(0.05)  # the keeper ends itself after writing the guest's end
    assert not keepers.alive(keeper) and not kept.socket.exists()


def test_a_paused_guest_is_stopped_while_no_run_is_connected(kept: keepers.Kept, tmp_path: Path) -> None:
    connection, keeper = keepers.start(kept, "pty", True, [sys.executable, "-c", ECHO])
    received(connection, "up")
    guest = int(Path(f"/proc/{keeper}/task/{keeper}/children").read_text().split()[0])
    assert state_of(guest) in "RS"
    connection.close()
    time.sleep(0.5)
    assert state_of(guest) == "T"
    again = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    again.connect(str(kept.socket))
    again.sendall(b"three\n")
    assert "echo three" in received(again, "echo three")
    again.close()
