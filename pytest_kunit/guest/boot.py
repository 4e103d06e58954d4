"""Booting a KUnit kernel (under QEMU, or a UML kernel as a host program) and streaming its console line by line
through the KTAP parser."""

from __future__ import annotations

import atexit
import fcntl
import os
import subprocess
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..arch import Arch
from ..console import ktap, oops
from ..console.transcript import BootRecord, BoundedConsole
from ..errors import BootError
from ..host.processes import kill_group
from ..options import BOOT_ALLOWANCE
from .cmdline import one_word
from .console_lines import LineSplitter
from .launch import launcher

if TYPE_CHECKING:
    import pexpect
    from pexpect.popen_spawn import PopenSpawn

PIPE_BYTES = 1 << 20  # the most an unprivileged process may ask (/proc/sys/fs/pipe-max-size's default)
READ_BYTES = 1 << 16  # the most one read of the console takes: a backlog comes in a few reads, not 2,000 bytes each
_PIPE_NAP = 0.001  # how long a reader of a pipe with nothing in it waits before looking again
# A pipe's end is read as the guest's files close, a moment before its exit status can be: how long to wait for it.
_EXIT_AFTER_EOF = 2.0


def watchdog_seconds(case_timeout: float) -> float:
    """Silence that kills a guest: the per-case timeout plus a grace (a quarter, at most 15 s) in which the kernel
    can report the timed-out case itself."""
    return case_timeout + min(15.0, case_timeout / 4)


def boot_deadline(case_timeout: float, cases: int) -> float:
    """The longest a boot can legitimately last: the kernel stops each case at its timeout. Past it, a guest that
    still prints (which the silence watchdog never catches) is killed."""
    return BOOT_ALLOWANCE + cases * case_timeout


# Under KVM a guest prints its first line within a second or two: one silent this long is taken as hung (KVM fails
# so on some hosts) and booted again under TCG.
KVM_FIRST_OUTPUT = 5.0


def kernel_command_line(arch: Arch, args: Iterable[str]) -> list[str]:
    """A boot's whole kernel command line: the architecture's console arguments, what every guest of its kind needs,
    `args`."""
    return [arg for arg in (*launcher(arch).kernel_args(), *args) if arg]


@dataclass(frozen=True)
class BootRequest:
    image: Path
    arch: Arch
    kernel_args: tuple[str, ...]  # the whole kernel command line (see kernel_command_line)
    accel: str  # "tcg" or "kvm"; "none" for a guest that runs natively (UML)
    silence_timeout: float
    qemu: str | None = None
    deadline: float | None = None  # seconds the whole boot may last
    deadline_source: str = ""  # where the deadline came from, for the message when it kills a guest
    edit_command: Callable[[list[str]], None] | None = None  # a last edit of the QEMU command, in place
    initrd: Path | None = None


_LIVE: weakref.WeakSet[pexpect.spawn[str] | PopenSpawn[str]] = weakref.WeakSet()


@atexit.register
def _kill_live_guests() -> None:
    for child in list(_LIVE):
        kill_group(child.pid)


def command_line(request: BootRequest) -> list[str]:
    kernel_args = request.kernel_args
    if request.initrd is not None and request.arch.qemu is None:
        # UML reads its initramfs from a host file named on its command line.
        kernel_args = (*kernel_args, f"initrd={one_word(request.initrd)}")
    command = launcher(request.arch).command(request.image, kernel_args, request.accel, request.qemu)
    if request.initrd is not None and request.arch.qemu is not None:
        command[1:1] = ["-initrd", str(request.initrd)]
    if request.edit_command is not None:
        request.edit_command(command)
    return command


def next_timeout(request: BootRequest, started: float, record: BootRecord, timeout: float) -> float | None:
    """How long the next read of a boot's console may wait: `timeout`, cut to what is left of the boot's deadline
    (the boot began at `started`); None once the deadline has passed, which `record` then says."""
    if request.deadline is None:
        return timeout
    left = started + request.deadline - time.monotonic()
    if left > 0:
        return min(timeout, left)
    record.timed_out = True
    record.killed_for = (
        f"the boot was still running at its deadline of {request.deadline:g} s ({request.deadline_source}) and was "
        "killed"
    )
    return None


def kvm_usable() -> bool:
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


class Guest:
    """One running guest (QEMU, or a UML kernel); iterate `lines()` to stream its console. Always killed on close."""

    resumed = False  # a guest up before this boot (kept.py's are): KUnit started long before its console here

    def __init__(self, request: BootRequest, sink: Callable[[str], None] | None = None) -> None:
        import pexpect

        self.request = request
        self._launcher = launcher(request.arch)
        self.record = BootRecord(command_line(request), program=self._launcher.program)
        self._sink = sink
        self._console = BoundedConsole(self.record.console, self.record.console_map)
        self._started = time.monotonic()
        self._ended = False  # the console reached its end (EOF)
        try:
            self._child = self._spawn()
        except (OSError, pexpect.ExceptionPexpect) as error:
            why = (error.strerror if isinstance(error, OSError) else None) or str(error)
            if isinstance(error, FileNotFoundError):
                why += " (the program exists: its #! interpreter or a library it needs does not)"
            raise BootError(
                f"{self._launcher.program} could not be started: {self.record.command[0]}: {why}.",
                self._launcher.start_remedy,
            ) from None
        _LIVE.add(self._child)

    def _spawn(self) -> pexpect.spawn[str] | PopenSpawn[str]:
        import pexpect
        from pexpect.popen_spawn import PopenSpawn

        command, timeout = self.record.command, self.request.silence_timeout
        if not self._launcher.console_pipe:
            return pexpect.spawn(
                command[0],
                command[1:],
                encoding="utf-8",
                codec_errors="replace",
                timeout=timeout,
                maxread=READ_BYTES,
                echo=False,
                preexec_fn=self._launcher.prepare_child(),
            )
        # A thread drains the pipe as output comes, whatever the parser is doing, into as large a pipe as the host
        # allows: what the guest writes in a burst is kept, not dropped.
        prepare = self._launcher.prepare_child()
        with warnings.catch_warnings():  # pexpect's reader thread is made with Thread.setDaemon(), deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            child = PopenSpawn(
                command,
                timeout=timeout,
                maxread=READ_BYTES,
                encoding="utf-8",
                codec_errors="replace",
                preexec_fn=prepare,
            )
        assert child.proc.stdout is not None  # PopenSpawn always reads the child's output from a pipe
        with suppress(OSError):  # a host whose pipe-max-size is lower keeps the default 64 KiB
            fcntl.fcntl(child.proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        return child

    def lines(self, first_output_timeout: float | None = None) -> Iterator[str]:
        import pexpect

        request = self.request
        deadline = self._started + request.deadline if request.deadline is not None else None
        seen_output = False
        # Lines are split here, not by pexpect: its buffer keeps everything up to a newline, however long.
        splitter = LineSplitter()
        while True:
            timeout = request.silence_timeout
            if not seen_output and first_output_timeout is not None:
                timeout = first_output_timeout
            cut = next_timeout(request, self._started, self.record, timeout)
            if cut is None:
                return
            timeout = cut
            try:
                text = self._read(timeout)
            except pexpect.EOF:
                self._ended = True
                tail = splitter.finish()
                if tail is not None:
                    yield self._keep(tail)
                return
            except pexpect.TIMEOUT:
                if deadline is not None and time.monotonic() >= deadline:
                    continue  # the deadline, not silence: said at the top
                self.record.timed_out = self.record.silent = True
                self.record.killed_for = f"the guest printed nothing for {timeout:g} s and was killed"
                return
            seen_output = True
            for line in splitter.feed(text):
                yield self._keep(line)

    def _read(self, timeout: float) -> str:
        """What the guest printed next (up to READ_BYTES), waiting at most `timeout` seconds for it."""
        import pexpect
        from pexpect.popen_spawn import PopenSpawn

        child = self._child
        if not isinstance(child, PopenSpawn):
            return child.read_nonblocking(READ_BYTES, timeout)
        # A pipe's reader hands back what its thread has read so far, "" if nothing yet: wait here, in short naps.
        read: Callable[[int, float], str] = cast(Any, child).read_nonblocking  # untyped in pexpect's stubs
        until = time.monotonic() + timeout
        while True:
            text = read(READ_BYTES, timeout)
            if text:
                return text
            if time.monotonic() >= until:
                raise pexpect.TIMEOUT(f"nothing read in {timeout:g} s")
            time.sleep(_PIPE_NAP)

    def _keep(self, line: str) -> str:
        self._console.append(line)
        if self._sink is not None:
            self._sink(line)
        return line

    def close(self) -> BootRecord:
        from pexpect.popen_spawn import PopenSpawn

        child = self._child
        # After EOF isalive() waits for the guest to exit, so one still alive here is one we end ourselves.
        ours = self._still_running(child) if isinstance(child, PopenSpawn) else child.isalive()
        # The guest leads a session of its own (pexpect's pty, or UML's setsid): its group holds whatever a wrapper
        # script started too, or a UML kernel's helper processes.
        kill_group(child.pid)
        if isinstance(child, PopenSpawn):
            returncode = child.proc.wait()
            exit_status, signal_status = (returncode, None) if returncode >= 0 else (None, -returncode)
        else:
            if not ours:
                # Exited and reaped already: ptyprocess's pause for the kernel to update its status (0.1 s, a
                # boot's tenth on a warm run) has nothing to wait for.
                cast(Any, child).ptyproc.delayafterclose = 0  # ptyproc is missing from pexpect's type stubs
            child.close(force=True)
            exit_status, signal_status = child.exitstatus, child.signalstatus
        self.record.exit_status = exit_status if exit_status is not None else signal_status
        if not ours:
            self.record.outside_signal = self._launcher.outside_signal(signal_status, self.record.console)
        self.record.seconds = time.monotonic() - self._started
        return self.record

    def _still_running(self, child: Any) -> bool:
        """Whether a guest read through a pipe still runs. After its console's end it is waited for a moment: under
        load a UML killed from outside was once taken for one that still ran, ended by us, so the signal went
        unnamed and its case was reported crashed instead of booted again."""
        if not self._ended:
            return child.proc.poll() is None
        try:
            child.proc.wait(timeout=_EXIT_AFTER_EOF)
        except subprocess.TimeoutExpired:
            return True
        return False

    def __enter__(self) -> Guest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Console(Protocol):
    """A guest's console for one boot: Guest, or a batch on a kept guest (kept.py)."""

    record: BootRecord
    resumed: bool

    def lines(self, first_output_timeout: float | None = None) -> Iterator[str]: ...

    def __enter__(self) -> Console: ...

    def __exit__(self, *exc: object) -> None: ...


def boot(
    request: BootRequest,
    sink: Callable[[str], None] | None = None,
    first_output_timeout: float | None = None,
    stop_after_crash: bool = False,
    guest: Console | None = None,
) -> tuple[BootRecord, list[ktap.Event]]:
    """Boot one guest to the end (or run one batch on `guest`, a guest up already), parsing its console as it
    streams; with `stop_after_crash`, end it as soon as a case's result line follows a crash (oops, BUG), so no
    later case runs on a tainted kernel."""
    parser = ktap.KtapParser(list_boot=any(arg.startswith("kunit.action=list") for arg in request.kernel_args))
    events: list[ktap.Event] = []
    started: dict[str, float] = {}
    crashed = False
    with guest or Guest(request, sink) as guest:
        for line in guest.lines(first_output_timeout):
            crashed = crashed or bool(oops.fault_lines([line]))
            index, now = len(guest.record.console) - 1, time.monotonic()
            for event in parser.feed(line):
                events.append(event)
                guest.record.console_map.note(event, index, line, now)
                if isinstance(event, ktap.SuiteStarted):
                    started[event.suite] = time.monotonic()
                elif isinstance(event, ktap.SuiteFinished) and event.suite in started:
                    guest.record.suite_seconds[event.suite] = time.monotonic() - started[event.suite]
                elif isinstance(event, ktap.CaseResult) and stop_after_crash:
                    crashed = crashed or event.status is ktap.Status.CRASHED
                    guest.record.stopped = crashed
            if guest.record.stopped:
                break
    events.extend(parser.finish())
    guest.record.ktap_started = parser.started or guest.resumed
    return guest.record, events
