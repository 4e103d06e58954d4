"""A guest that stays up between runs (--kunit-keep-guest), for the edit loop of --kunit-modules kernels, and for the
runs again of kernels whose built-in suites run again after boot (kunit.autorun).

A boot whose cases all lie in modules goes to a guest already up for the same image and command line, if there is
one: the modules that changed since it got them are sent over its console, loaded and unloaded again (each suite runs
as its module comes in), and the console of that batch alone is judged as a boot's would be. Any other boot starts a
fresh guest that stays up after its batch, kept by a process of its own (keeper.py) and found again through the
cache.

On a kernel with kunit.autorun (the series; upstream 6.14+) and no modules, a batch of whole built-in suites goes to
a guest booted with kunit.autorun=0 and no filter (so that every suite is registered and none runs at boot; the boot
itself is read quietly, into the keeper's log): each suite runs again when its debugfs run file is written to. A suite
without one (KUnit makes none for a suite in init memory: it cannot run after boot), a batch that selects part of a
suite (a run again runs a whole suite) or a guest that does not come up leaves the batch to a boot of its own.

A guest is trusted only while it stays sound: it is ended, and the next batch boots afresh, when a batch's console
shows a fault or does not reach its end, a module will not unload, the kernel carries a taint flag other than those
loading test modules sets, or what it printed between runs shows any of these.

On kernels whose module loader filters suites by kunit.filter_glob (6.6 and later), each batch sets the parameter to
its own glob before it loads (it is writable there): the boot's would go on filtering every module loaded later.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import select
import socket
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, suppress
from dataclasses import replace
from pathlib import Path

from ..console.transcript import BootRecord, BoundedConsole
from ..findings import guest_init
from ..host.cachelayout import CacheLayout
from ..host.locking import cache_lock_if_free
from ..model import Kernel
from . import keepers
from .boot import BootRequest, command_line, next_timeout
from .console_lines import LineSplitter
from .keeper import exit_file
from .keepers import KeeperState, Kept
from .kept_protocol import loadable, put_command, rerun_suites, taints, unsound
from .launch import launcher
from .module_boots import builtin_cases
from .planning import BootFilter, executed_cases

_DETACH_WAIT = 5.0  # seconds the keeper may take to see a run's end and close its own
# Arguments of one boot that a kept guest does not hold to: which cases it runs at boot and which modules it loads.
_PER_BATCH = ("kunit.filter_glob=", "kunit.filter=", f"{guest_init.MODULES_ARG}=")
_NO_AUTORUN = "kunit.autorun=0"


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
        suites: tuple[str, ...] | None = None,
    ) -> None:
        self.request, self.kernel, self._stack, self._sink = request, kernel, stack, sink
        self.modules = boot_filter.modules or ()
        self.suites = suites  # built-in suites run again through debugfs (None: a batch of modules)
        self._glob = boot_filter.glob
        self._launcher = launcher(request.arch)
        own = tuple(arg for arg in request.kernel_args if not arg.startswith(f"{guest_init.MODULES_ARG}="))
        if suites is None:
            fresh = replace(request, kernel_args=(*own, guest_init.SERVE_ARG))
        else:
            # Every suite registered, none run: each batch runs its own.
            booted = tuple(arg for arg in own if not arg.startswith(_PER_BATCH))
            fresh = replace(request, kernel_args=(*booted, _NO_AUTORUN, guest_init.SERVE_ARG))
        self._command = command_line(fresh)
        held = tuple(arg for arg in own if not arg.startswith(_PER_BATCH))
        words = command_line(replace(request, kernel_args=held, initrd=None))
        self.identity = hashlib.sha256(
            json.dumps([kernel.build.image_digest, words, guest_init.INIT]).encode()
        ).hexdigest()
        self._kept = Kept(directory, self.identity[:16])
        self._log = self._kept.log
        self.record = BootRecord(self._command, program=self._launcher.program)
        self._console = BoundedConsole(self.record.console, self.record.console_map)
        self._started = time.monotonic()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._splitter = LineSplitter()
        self._pending: list[str] = []
        self._connection: socket.socket | None = None
        self._state: KeeperState | None = None
        self._batch: list[str] = []  # this batch's lines, judged for the next one
        self.done = False  # the batch reached its end
        self.ended_why = ""  # why the guest was ended after this batch ("" while it is kept)
        self.replaced_why = ""  # why the guest kept before could not serve this batch, which booted a fresh one
        self.resumed = self._resume()
        if not self.resumed:
            self._start()

    # -- finding or starting the guest

    def _resume(self) -> bool:
        found = keepers.resume(self._kept)
        if found is None:
            return False
        self._connection, self._state = found
        return True

    def _start(self) -> None:
        keepers.end_kernel(self._kept, self.kernel.key)
        self._decoder.reset()
        self._splitter, self._pending = LineSplitter(), []
        console = "pipe" if self._launcher.console_pipe else "pty"
        # A QEMU guest is stopped between runs (its clock would race through idle time on a host core); UML idles.
        pause = self.request.arch.qemu is not None
        self._connection, keeper = keepers.start(self._kept, console, pause, self._command)
        modules = {m.name: _digest(self.kernel.build.build_dir / m.path) for m in self.kernel.modules}
        self._state = KeeperState(self.identity, self.kernel.key, keeper, modules)
        self._state.write(self._kept.state_file)

    # -- the console

    def ready(self) -> bool:
        """For a batch of built-in suites: the guest up and sound (resumed, or booted afresh, quietly: its boot runs no
        suite), with a run file for each of the batch's suites. False if it cannot serve the batch."""
        assert self.suites is not None
        if self.resumed:
            self._replace_if(self._between_runs())
        if not self.resumed:
            if self._quietly({guest_init.SERVING})[-1:] != [guest_init.SERVING]:
                self.ended_why = "it did not come up"
                return False
            if not self._keep_boot_taint():
                return False
        nonce = os.urandom(4).hex()
        self._send(f"check {nonce} {guest_init.NO_GLOB} {','.join(self.suites)}\n")
        said = self._quietly({f"{guest_init.BATCH_DONE} {nonce}"})
        if said[-1:] != [f"{guest_init.BATCH_DONE} {nonce}"]:
            self.ended_why = "it did not answer"
            return False
        return not [line for line in said if line.startswith(guest_init.NO_RUN_FILE)]

    def decline(self) -> None:
        """Leave this batch to a boot of its own, and the guest up for the next batch if it is sound."""
        self._leave(self.ended_why or self._detach())

    def lines(self, first_output_timeout: float | None = None) -> Generator[str, None, None]:
        if self.suites is not None:  # ready() has brought the guest up
            nonce = os.urandom(4).hex()
            self._send(f"run {nonce} {guest_init.NO_GLOB} {','.join(self.suites)}\n")
            self.done = yield from self._until(lambda line: line.strip() == f"{guest_init.BATCH_DONE} {nonce}")
            return
        if self.resumed:
            # Before the batch, quietly (kept in the keeper's log): is the guest still sound, and does it hold the
            # batch's modules as built now? If not, this batch boots a fresh guest.
            self._replace_if(self._between_runs() or self._put_changed())
        if not self.resumed:
            if not (yield from self._until(lambda line: line.strip() == guest_init.SERVING)):
                return
            if not self._keep_boot_taint():
                return
        nonce = os.urandom(4).hex()
        # A kernel that filters modules' suites (6.6+) by kunit.filter_glob has it set to this batch's, as a boot would.
        glob = (self._glob or "*") if self.kernel.features.module_filter else guest_init.NO_GLOB
        self._send(f"load {nonce} {glob} {','.join(self.modules)}\n")
        self.done = yield from self._until(lambda line: line.strip() == f"{guest_init.BATCH_DONE} {nonce}")

    def _replace_if(self, why: str) -> None:
        """A resumed guest that may not serve (`why`): ended, and a fresh one started in its place."""
        if why:
            self.replaced_why = why
            self._stop_keeper()
            self.resumed = False
            self._start()

    def _keep_boot_taint(self) -> bool:
        """What the kernel is tainted with once booted (the platform's own warnings), before any case ran, kept to
        judge later taint by; False if the guest did not answer."""
        booted = self._taint()
        if booted is None:
            self.ended_why = "it did not answer once booted"
            return False
        assert self._state is not None
        self._state.taint = booted
        return True

    def _probe(self) -> list[str] | None:
        """Quietly, a batch of no module: the guest's console since the last batch to its taint flags (None if it did
        not answer)."""
        nonce = os.urandom(4).hex()
        self._send(f"load {nonce} {guest_init.NO_GLOB}\n")
        lines = self._quietly({f"{guest_init.BATCH_DONE} {nonce}"})
        return lines if lines and lines[-1].startswith(guest_init.BATCH_DONE) else None

    def _taint(self) -> int | None:
        said = taints(self._probe() or [])
        return int(said[-1]) if said and said[-1].isdigit() else None

    def _between_runs(self) -> str:
        """What the guest printed since the last batch, and a taint check, judged: why it may not serve, or ""."""
        assert self._state is not None
        lines = self._probe()
        return "it did not answer" if lines is None else unsound(lines, self._state.taint)

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
            *chunks, end = put_command(module.name, loadable(file, self.kernel.arch.make.cross_compile))
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
            timeout = next_timeout(request, self._started, self.record, request.silence_timeout)
            if timeout is None:
                return
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
        path = exit_file(self._kept.socket)
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
            keepers.end(self._state.keeper)
            self._kept.state_file.unlink(missing_ok=True)

    def close(self) -> BootRecord:
        why = self.ended_why or ("" if self.done else "its batch did not reach its end")
        why = why or unsound(self._batch, self._state.taint if self._state else 0)
        why = why or self._detach()
        self.record.seconds = time.monotonic() - self._started
        self._leave(why)
        return self.record

    def _leave(self, why: str) -> None:
        """End the guest (`why` it may not serve again), or leave it to its keeper for the next batch; either way,
        let another run's batch have it."""
        if why:
            self.ended_why = why
            self._stop_keeper()
        else:
            assert self._state is not None
            self._state.write(self._kept.state_file)
        self._stack.close()

    def _detach(self) -> str:
        """Leave the guest to its keeper, losing nothing it printed: this side's end is closed first, and what the
        keeper sent before it saw that is read to the end (kept in its log, and judged); what comes after, the
        keeper keeps for the next run. Why the guest may not be kept, or ""."""
        assert self._connection is not None and self._state is not None
        connection, self._connection = self._connection, None
        tail = list(self._pending)
        try:
            connection.shutdown(socket.SHUT_WR)
            connection.settimeout(_DETACH_WAIT)
            rest = b""
            while data := connection.recv(1 << 16):
                rest += data
        except OSError:
            return "its keeper did not let go of this run"
        finally:
            connection.close()
        tail += self._splitter.feed(self._decoder.decode(rest, final=True))
        last = self._splitter.finish()
        tail += [last] if last is not None else []
        with self._log.open("a") as log:
            log.write("".join(f"{line}\n" for line in tail))
        return unsound(tail, self._state.taint)

    def __enter__(self) -> KeptGuest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def kept_guest(
    cache_dir: Path,
    kernel: Kernel,
    request: BootRequest,
    boot_filter: BootFilter,
    sink: Callable[[str], None] | None = None,
) -> KeptGuest | None:
    """The kept guest for this boot, resumed or started, or None: for a boot that runs built-in cases a kept guest
    cannot run again (they run only at boot, unless rerun_suites says otherwise, and a kept guest's taint is judged
    against what it booted with before any case ran), or while another run's batch is using the kept guest. That
    boot boots as usual."""
    builtin = executed_cases(builtin_cases(kernel), boot_filter, kernel.attributes)
    suites = rerun_suites(kernel, builtin) if builtin else None
    if builtin and suites is None:
        return None
    directory = CacheLayout(cache_dir).kept_guests()
    directory.mkdir(parents=True, exist_ok=True)
    stack = ExitStack()
    if not stack.enter_context(cache_lock_if_free(cache_dir, "guests", "a batch on the kept guest")):
        return None
    try:
        guest = KeptGuest(request, kernel, boot_filter, directory, stack, sink, suites)
        if suites is not None and not guest.ready():
            guest.decline()
            return None
        return guest
    except BaseException:
        stack.close()
        raise
