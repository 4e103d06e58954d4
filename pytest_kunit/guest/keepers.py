"""The guests kept up between runs, as the cache holds them (CacheLayout.kept_guests): for each one its keeper's
socket and log, and a state file saying which kernel it runs, which keeper process keeps it and which module files
it holds. Starting a keeper, finding it again, ending it; what is said to the guest is kept.py's."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import KunitError
from ..host.cachelayout import CacheLayout
from .keeper import exit_file, pid_file

KEEP_IDLE = 900.0  # seconds a kept guest waits for the next run before its keeper ends it
_START_WAIT = 10.0  # seconds a new keeper may take to listen
_SOCKET_PATH_MAX = 107  # sun_path's bytes, its NUL left out


@dataclass
class Kept:
    """One kept guest, by the name its files share in the cache's directory of kept guests."""

    directory: Path
    name: str

    @property
    def socket(self) -> Path:
        return self.directory / f"{self.name}.sock"

    @property
    def state_file(self) -> Path:
        return self.directory / f"{self.name}.json"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.keeper.log"


@dataclass
class KeeperState:
    identity: str  # what the guest runs: its image and command line (kept.py)
    kernel: str  # the fragment's kernel key: a guest of its older image is ended when a new one starts
    keeper: int  # the keeper's process id
    modules: dict[str, str] = field(default_factory=dict)  # name -> digest of the file the guest holds
    taint: int = 0  # the kernel's taint flags once booted, before any case ran (what its platform set)

    @classmethod
    def read(cls, path: Path) -> KeeperState | None:
        try:
            data = json.loads(path.read_text())
            return cls(
                str(data["identity"]),
                str(data["kernel"]),
                int(data["keeper"]),
                dict(data["modules"]),
                int(data["taint"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, path: Path) -> None:
        partial = path.with_name(path.name + ".partial")
        fields = {"identity": self.identity, "kernel": self.kernel, "keeper": self.keeper, "modules": self.modules}
        partial.write_text(json.dumps(fields | {"taint": self.taint}))
        partial.replace(path)


def alive(pid: int) -> bool:
    """Whether `pid` is a keeper still running: not a process that ended and was never reaped (whoever adopts an
    orphan may not reap it), nor another program that got its number since."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return status != "Z" and b"pytest_kunit.guest.keeper" in command


def end(pid: int) -> None:
    """Tell a keeper to end its guest and itself."""
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)


def _end_where(directory: Path, which: Callable[[Path, KeeperState], bool]) -> int:
    """End the guests kept in `directory` whose state file and state `which` accepts, and forget them; how many of
    them were running."""
    ended = 0
    for path in directory.glob("*.json"):
        state = KeeperState.read(path)
        if state is not None and which(path, state):
            ended += alive(state.keeper)
            end(state.keeper)
            path.unlink(missing_ok=True)
    return ended


def end_all(cache_dir: Path) -> int:
    """End every guest kept in this cache; how many were running."""
    return _end_where(CacheLayout(cache_dir).kept_guests(), lambda path, state: True)


def end_kernel(kept: Kept, kernel: str) -> None:
    """End this guest, and every other one kept for the same kernel key (an older image of it)."""
    _end_where(kept.directory, lambda path, state: path == kept.state_file or state.kernel == kernel)


def resume(kept: Kept) -> tuple[socket.socket, KeeperState] | None:
    """A connection to the guest's keeper and its state, if it is still up."""
    state = KeeperState.read(kept.state_file)
    if state is None or not alive(state.keeper):
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(kept.socket))
    except OSError:
        connection.close()
        end(state.keeper)
        return None
    return connection, state


def start(kept: Kept, console: str, pause: bool, command: Sequence[str]) -> tuple[socket.socket, int]:
    """Start a keeper running `command` (its console a "pty" or a "pipe"; stopped between runs with `pause`); a
    connection to it, and its process id."""
    if len(str(kept.socket).encode()) > _SOCKET_PATH_MAX:
        raise KunitError(
            f"--kunit-keep-guest: the kept guest's socket {kept.socket} is longer than a Unix socket's "
            f"{_SOCKET_PATH_MAX} bytes.",
            "give --kunit-cache-dir a shorter path, or run without --kunit-keep-guest.",
        )
    for stale in (kept.socket, exit_file(kept.socket), pid_file(kept.socket)):
        stale.unlink(missing_ok=True)
    keeper = [sys.executable, "-m", "pytest_kunit.guest.keeper", str(kept.socket), str(KEEP_IDLE), console]
    keeper += ["pause" if pause else "run", *command]
    with kept.log.open("ab") as log:
        # The keeper forks away at once: this waits only for its first process.
        subprocess.run(keeper, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, check=False)
    until = time.monotonic() + _START_WAIT
    while True:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(str(kept.socket))
            return connection, int(pid_file(kept.socket).read_text())
        except (OSError, ValueError):
            connection.close()
            if time.monotonic() > until:
                raise KunitError(
                    f"--kunit-keep-guest: the keeper of the guest did not start ({kept.log}).",
                    "run without --kunit-keep-guest, and report the log.",
                ) from None
            time.sleep(0.01)
