"""A guest that stays up between runs (--kunit-keep-guest), for the edit loop of --kunit-modules kernels.

A boot whose cases all lie in modules goes to a guest already up for the same image and command line, if there is
one: the modules that changed since it got them are sent over its console, loaded and unloaded again (each suite runs
as its module comes in), and the console of that batch alone is judged as a boot's would be. Any other boot starts a
fresh guest that stays up after its batch, kept by a process of its own (keeper.py) and found again through the
cache. A guest is trusted only while it stays sound: it is ended, and the next batch boots afresh, when a batch's
console shows a fault or does not reach its end, a module will not unload, the kernel carries a taint flag other
than those loading test modules sets, or what it printed between runs shows any of these.

Kernels whose module loader filters suites with kunit.filter_glob (6.6 and later) are not kept: a guest's boot-time
filter would go on filtering every module loaded into it later.
"""

from __future__ import annotations

import base64
import codecs
import gzip
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..console import oops
from ..console.transcript import BootRecord, BoundedConsole
from ..errors import KunitError
from ..findings import guest_init
from ..host.cachelayout import CacheLayout
from ..host.locking import cache_lock_if_free
from ..model import Kernel
from .boot import BootRequest, command_line
from .console_lines import LineSplitter
from .keeper import exit_file, pid_file
from .launch import launcher
from .module_boots import builtin_cases
from .planning import BootFilter, executed_cases

KEEP_IDLE = 900.0  # seconds a kept guest waits for the next run before its keeper ends it
# Taint flags loading a test module sets (TAINT_OOT_MODULE, TAINT_UNSIGNED_MODULE, TAINT_TEST): any other is a reason.
LOADING_TAINTS = (1 << 12) | (1 << 13) | (1 << 18)
_START_WAIT = 10.0  # seconds a new keeper may take to listen
_SOCKET_PATH_MAX = 107  # sun_path's bytes, its NUL left out
# Arguments of one boot that a kept guest does not hold to: which cases it runs at boot and which modules it loads.
_PER_BATCH = ("kunit.filter_glob=", "kunit.filter=", f"{guest_init.MODULES_ARG}=")


def unsound(lines: list[str]) -> str:
    """Why a guest whose console (since it last proved sound) holds `lines` may not serve another batch, or ""."""
    faults = oops.fault_lines(lines)
    if faults:
        return f"its console shows a fault: {faults[0].strip()}"
    for line in lines:
        if guest_init.UNLOAD_FAILED in line:
            return f"a module would not unload ({line.split(guest_init.UNLOAD_FAILED, 1)[1].strip()})"
        if guest_init.TAINTED in line:
            word = line.split(guest_init.TAINTED, 1)[1].strip()
            if not word.isdigit():
                return f"its taint flags could not be read ({word!r})"
            if int(word) & ~LOADING_TAINTS:
                return f"the kernel is tainted ({int(word):#x}: more than loading test modules sets)"
    return ""


def put_command(name: str, data: bytes) -> list[str]:
    """/init's `put` of a module's file, in the pieces sent one at a time: each chunk waits for CHUNK_TAKEN before
    the next is sent (the command itself rides with the first), and the last piece ends it."""
    encoded = base64.encodebytes(gzip.compress(data, 6)).decode().splitlines()
    size = guest_init.CHUNK_LINES
    chunks = [
        "".join(f"{line}\n" for line in encoded[start : start + size]) + ".\n" for start in range(0, len(encoded), size)
    ]
    chunks[0] = f"put {name}\n" + chunks[0]
    return [*chunks, "end\n"]


def servable(kernel: Kernel, keep: bool) -> bool:
    """Whether the kernel's boots may go to a kept guest: module mode, /init doing nothing else at the end (no
    kmemleak scan, no GCOV counters), and a module loader that does not filter."""
    after = (guest_init.KMEMLEAK_ARG, f"{guest_init.GCOV_ARG}=")
    return (
        keep
        and bool(kernel.modules)
        and kernel.initrd is not None
        and not kernel.features.module_filter
        and not any(arg.startswith(after) for arg in kernel.boot_args)
    )


@dataclass
class _State:
    identity: str
    kernel: str  # the fragment's kernel key: a guest of its older image is ended when a new one starts
    keeper: int
    modules: dict[str, str] = field(default_factory=dict)  # name -> digest of the file the guest holds

    @classmethod
    def read(cls, path: Path) -> _State | None:
        try:
            data = json.loads(path.read_text())
            return cls(str(data["identity"]), str(data["kernel"]), int(data["keeper"]), dict(data["modules"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, path: Path) -> None:
        partial = path.with_name(path.name + ".partial")
        fields = {"identity": self.identity, "kernel": self.kernel, "keeper": self.keeper, "modules": self.modules}
        partial.write_text(json.dumps(fields))
        partial.replace(path)


def _alive(pid: int) -> bool:
    """Whether `pid` is a keeper still running: not a process that ended and was never reaped (whoever adopts an
    orphan may not reap it), nor another program that got its number since."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return status != "Z" and b"pytest_kunit.guest.keeper" in command


def _end(pid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class KeptGuest:
    """One batch on a kept guest: streams its console as guest.boot's Guest does, and says where it is kept."""

    def __init__(
        self,
        request: BootRequest,
        kernel: Kernel,
        boot_filter: BootFilter,
        directory: Path,
        stack: ExitStack,
        sink: Callable[[str], None] | None = None,
    ) -> None:
        self.request, self.kernel, self._stack, self._sink = request, kernel, stack, sink
        self.modules = boot_filter.modules or ()
        self._launcher = launcher(request.arch)
        own = tuple(arg for arg in request.kernel_args if not arg.startswith(f"{guest_init.MODULES_ARG}="))
        fresh = replace(request, kernel_args=(*own, guest_init.SERVE_ARG))
        self._command = command_line(fresh)
        held = tuple(arg for arg in own if not arg.startswith(_PER_BATCH))
        words = command_line(replace(request, kernel_args=held, initrd=None))
        self.identity = hashlib.sha256(
            json.dumps([kernel.build.image_digest, words, guest_init.INIT]).encode()
        ).hexdigest()
        self._socket_path = directory / f"{self.identity[:16]}.sock"
        self._state_path = directory / f"{self.identity[:16]}.json"
        self._log = directory / f"{self.identity[:16]}.keeper.log"
        self.record = BootRecord(self._command, program=self._launcher.program)
        self._console = BoundedConsole(self.record.console, self.record.console_map)
        self._started = time.monotonic()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._splitter = LineSplitter()
        self._pending: list[str] = []
        self._connection: socket.socket | None = None
        self._state: _State | None = None
        self._batch: list[str] = []  # this batch's lines, judged for the next one
        self.done = False  # the batch reached its end
        self.ended_why = ""  # why the guest was ended after this batch ("" while it is kept)
        self.replaced_why = ""  # why the guest kept before could not serve this batch, which booted a fresh one
        # Built-in cases run only at boot: a batch that has any boots a fresh guest.
        at_boot = executed_cases(builtin_cases(kernel), boot_filter, kernel.attributes)
        self.resumed = not at_boot and self._resume()
        if not self.resumed:
            self._start()

    # -- finding or starting the guest

    def _resume(self) -> bool:
        state = _State.read(self._state_path)
        if state is None or not _alive(state.keeper):
            return False
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(str(self._socket_path))
        except OSError:
            connection.close()
            _end(state.keeper)
            return False
        self._connection, self._state = connection, state
        return True

    def _start(self) -> None:
        for path in self._state_path.parent.glob("*.json"):  # this one's, and those of the kernel's older images
            earlier = _State.read(path)
            if earlier is not None and (path == self._state_path or earlier.kernel == self.kernel.key):
                _end(earlier.keeper)
                path.unlink(missing_ok=True)
        if len(str(self._socket_path).encode()) > _SOCKET_PATH_MAX:
            raise KunitError(
                f"--kunit-keep-guest: the kept guest's socket {self._socket_path} is longer than a Unix socket's "
                f"{_SOCKET_PATH_MAX} bytes.",
                "give --kunit-cache-dir a shorter path, or run without --kunit-keep-guest.",
            )
        self._socket_path.unlink(missing_ok=True)
        exit_file(self._socket_path).unlink(missing_ok=True)
        self._decoder.reset()
        self._splitter, self._pending = LineSplitter(), []
        console = "pipe" if self._launcher.console_pipe else "pty"
        keeper_command = [
            sys.executable,
            "-m",
            "pytest_kunit.guest.keeper",
            str(self._socket_path),
            str(KEEP_IDLE),
            console,
            *self._command,
        ]
        pid_file(self._socket_path).unlink(missing_ok=True)
        with self._log.open("ab") as log:
            subprocess.run(
                keeper_command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, check=False
            )
        until = time.monotonic() + _START_WAIT
        while True:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                connection.connect(str(self._socket_path))
                keeper = int(pid_file(self._socket_path).read_text())
                break
            except (OSError, ValueError):
                connection.close()
                if time.monotonic() > until:
                    raise KunitError(
                        f"--kunit-keep-guest: the keeper of the guest did not start ({self._log}).",
                        "run without --kunit-keep-guest, and report the log.",
                    ) from None
                time.sleep(0.01)
        self._connection = connection
        modules = {m.name: _digest(self.kernel.build.build_dir / m.path) for m in self.kernel.modules}
        self._state = _State(self.identity, self.kernel.key, keeper, modules)
        self._state.write(self._state_path)

    # -- the console

    def lines(self, first_output_timeout: float | None = None) -> Generator[str, None, None]:
        if self.resumed:
            # Before the batch, quietly (kept in the keeper's log): is the guest still sound, and does it hold the
            # batch's modules as built now? If not, this batch boots a fresh guest.
            why = self._between_runs() or self._put_changed()
            if why:
                self.replaced_why = why
                self._stop_keeper()
                self.resumed = False
                self._start()
        if not self.resumed and not (yield from self._until(lambda line: line.strip() == guest_init.SERVING)):
            return
        nonce = os.urandom(4).hex()
        self._send(f"load {nonce} {','.join(self.modules)}\n")
        self.done = yield from self._until(lambda line: line.strip() == f"{guest_init.BATCH_DONE} {nonce}")

    def _between_runs(self) -> str:
        """What the guest printed since the last batch, and a taint check, judged: why it may not serve, or ""."""
        nonce = os.urandom(4).hex()
        self._send(f"load {nonce}\n")
        lines = self._quietly({f"{guest_init.BATCH_DONE} {nonce}"})
        return unsound(lines) if lines and lines[-1].strip().startswith(guest_init.BATCH_DONE) else "it did not answer"

    def _put_changed(self) -> str:
        """Send each of the batch's modules the guest holds another file of: why that failed, or ""."""
        assert self._state is not None
        for module in self.kernel.modules:
            if module.name not in self.modules:
                continue
            file = self.kernel.build.build_dir / module.path
            digest = _digest(file)
            if self._state.modules.get(module.name) == digest:
                continue
            *chunks, end = put_command(module.name, file.read_bytes())
            for chunk in chunks:
                self._send(chunk)
                if self._quietly({guest_init.CHUNK_TAKEN})[-1:] != [guest_init.CHUNK_TAKEN]:
                    return f"it did not take the module {module.name}"
            self._send(end)
            answers = {f"{guest_init.PUT_DONE} {module.name}", f"{guest_init.PUT_FAILED} {module.name}"}
            if self._quietly(answers)[-1:] != [f"{guest_init.PUT_DONE} {module.name}"]:
                return f"it did not take the module {module.name}"
            self._state.modules[module.name] = digest
        return ""

    def _send(self, text: str) -> None:
        assert self._connection is not None
        with suppress(OSError):  # a guest gone: its console's end is read next
            self._connection.sendall(text.encode())

    def _until(self, last: Callable[[str], bool]) -> Generator[str, None, bool]:
        """Yield the console's lines up to the one `last` accepts (True) or its end (False)."""
        for line in self._read_lines():
            self._console.append(line)
            self._batch.append(line)
            if self._sink is not None:
                self._sink(line)
            yield line
            if last(line):
                return True
        return False

    def _quietly(self, last: set[str]) -> list[str]:
        """The console's lines up to one of `last` (stripped) or its end, kept in the keeper's log, not the batch's."""
        lines = []
        for line in self._read_lines():
            lines.append(line)
            if line.strip() in last:
                break
        with self._log.open("a") as log:
            log.write("".join(f"{line}\n" for line in lines))
        return [line.strip() for line in lines]

    def _read_lines(self) -> Iterator[str]:
        request = self.request
        while True:
            while self._pending:
                yield self._pending.pop(0)
            timeout = request.silence_timeout
            if request.deadline is not None:
                left = self._started + request.deadline - time.monotonic()
                if left <= 0:
                    self.record.timed_out = True
                    self.record.killed_for = (
                        f"the boot was still running at its deadline of {request.deadline:g} s "
                        f"({request.deadline_source}) and was killed"
                    )
                    return
                timeout = min(timeout, left)
            assert self._connection is not None
            ready, _, _ = select.select([self._connection], [], [], timeout)
            if not ready:
                self.record.timed_out = self.record.silent = True
                self.record.killed_for = f"the guest printed nothing for {timeout:g} s and was killed"
                return
            data = self._connection.recv(1 << 16)
            if not data:
                tail = self._splitter.finish()
                if tail is not None:
                    yield tail
                self._guest_ended()
                return
            self._pending.extend(self._splitter.feed(self._decoder.decode(data)))

    def _guest_ended(self) -> None:
        """The guest ended: its exit status, as its keeper wrote it."""
        until = time.monotonic() + 2.0
        path = exit_file(self._socket_path)
        while not path.exists() and time.monotonic() < until:
            time.sleep(0.01)
        with suppress(OSError, ValueError):
            self.record.exit_status = int(path.read_text())
        self.ended_why = self.ended_why or "it ended"

    # -- the end of the batch

    def _stop_keeper(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._state is not None:
            _end(self._state.keeper)
            self._state_path.unlink(missing_ok=True)

    def close(self) -> BootRecord:
        why = self.ended_why or ("" if self.done else "its batch did not reach its end")
        why = why or unsound(self._batch)
        if why:
            self.ended_why = why
            self._stop_keeper()
        else:
            assert self._state is not None and self._connection is not None
            self._state.write(self._state_path)
            self._connection.close()
        self.record.seconds = time.monotonic() - self._started
        self._stack.close()
        return self.record

    def __enter__(self) -> KeptGuest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def end_all(cache_dir: Path) -> int:
    """End every guest kept in this cache (their keepers end them); how many there were."""
    ended = 0
    for path in CacheLayout(cache_dir).kept_guests().glob("*.json"):
        state = _State.read(path)
        if state is not None and _alive(state.keeper):
            _end(state.keeper)
            ended += 1
        path.unlink(missing_ok=True)
    return ended


def kept_guest(
    cache_dir: Path,
    kernel: Kernel,
    request: BootRequest,
    boot_filter: BootFilter,
    sink: Callable[[str], None] | None = None,
) -> KeptGuest | None:
    """The kept guest for this boot, resumed or started, or None while another run's batch is using it (this boot
    then boots as usual)."""
    directory = CacheLayout(cache_dir).kept_guests()
    directory.mkdir(parents=True, exist_ok=True)
    stack = ExitStack()
    if not stack.enter_context(cache_lock_if_free(cache_dir, "guests", "a batch on the kept guest")):
        return None
    try:
        return KeptGuest(request, kernel, boot_filter, directory, stack, sink)
    except BaseException:
        stack.close()
        raise
