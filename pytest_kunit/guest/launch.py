"""How a guest is started and how its end is read, for each kind of guest: a QEMU booting the image, or a User Mode
Linux kernel, which is itself a host program. The runner and the console streaming are the same for both."""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..arch import Arch, QemuSettings, UmlSettings
from ..errors import BootError
from ..findings.guest_init import HALT_ARG

QEMU_ARGS = ("-nodefaults", "-nographic", "-no-reboot")
# Always under QEMU: a panic reboots at once, and QEMU exits instead of rebooting; KUnit reboots when done (or powers
# off: QemuSettings.shutdown).
QEMU_PANIC = "panic=-1"
# Always under UML: a rebooting UML kernel executes itself again, so KUnit halts it instead (the process then exits
# 0), and so does the initramfs's /init. A panic needs nothing: UML's own panic notifier aborts the process.
UML_KERNEL_ARGS = ("kunit_shutdown=halt", HALT_ARG)

# QEMU catches SIGTERM, SIGINT and SIGHUP, says so on stderr (our console) and exits with status 0.
_CAUGHT_SIGNAL = re.compile(r"terminating on signal (\d+)")

# How a UML kernel ends itself when it dies: a panic aborts (SIGABRT); a fault in the program itself (its stack
# overflowing, a bug in UML's own host code) is one of the others. Only what is left came from outside.
_UML_OWN_DEATHS = frozenset(
    {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP, signal.SIGSYS}
)


class Launcher(Protocol):
    """One kind of guest: what starts it and what its end means."""

    @property
    def program(self) -> str:
        """What reports call the program that runs the kernel."""

    @property
    def accelerated(self) -> bool:
        """Whether the guest runs under an accelerator that --kunit-accel chooses (KVM or TCG)."""

    @property
    def unused_options(self) -> tuple[str, ...]:
        """The options (ini names) that mean nothing for this kind of guest."""

    @property
    def unused_why(self) -> str:
        """Why they mean nothing."""

    @property
    def start_remedy(self) -> str:
        """What to do when the guest's program cannot be started at all."""

    @property
    def console_pipe(self) -> bool:
        """Whether its console is read from a pipe drained as it comes (True) or from a pty (False): a program that
        drops what a full terminal will not take must have the pipe."""

    def kernel_args(self) -> tuple[str, ...]:
        """What every boot's kernel command line starts with."""

    def command(self, image: Path, kernel_args: Sequence[str], accel: str, program: str | None) -> list[str]:
        """The command of one boot; `program` is --kunit-qemu."""

    def outside_signal(self, exit_signal: int | None, console: Sequence[str]) -> int | None:
        """The signal from outside that ended the guest (not sent by pytest-kunit), if one did."""

    def prepare_child(self) -> Callable[[], None] | None:
        """What the guest's process runs before it executes the command."""


@dataclass(frozen=True)
class QemuLauncher:
    settings: QemuSettings
    program: str = "QEMU"
    accelerated: bool = True
    unused_options: tuple[str, ...] = ()
    unused_why: str = ""
    start_remedy: str = "check that --kunit-qemu (ini: kunit_qemu) names a QEMU that runs: try it with --version."
    console_pipe: bool = False  # QEMU's serial port waits for a full pty: it loses nothing there

    def kernel_args(self) -> tuple[str, ...]:
        return (*self.settings.kernel_args, f"kunit_shutdown={self.settings.shutdown}", QEMU_PANIC)

    def binary(self, program: str | None) -> str:
        name = program or self.settings.binary
        found = shutil.which(name)
        if found is None:
            raise BootError(
                f"QEMU is not installed: {name!r} is not on PATH.",
                f"install it (apt-get install {self.settings.package}) or name the binary with --kunit-qemu "
                "(ini: kunit_qemu).",
            )
        return found

    def command(self, image: Path, kernel_args: Sequence[str], accel: str, program: str | None) -> list[str]:
        binary = self.binary(program)
        firmware = self.settings.firmware
        return [
            binary,
            *QEMU_ARGS,
            "-accel",
            accel,
            *(self.settings.tcg_args if accel == "tcg" else ()),
            *(("-bios", firmware) if firmware and shipped_firmware(binary, firmware) else ()),
            *self.settings.args,
            "-kernel",
            str(image),
            "-append",
            " ".join(kernel_args),
        ]

    def outside_signal(self, exit_signal: int | None, console: Sequence[str]) -> int | None:
        return exit_signal or caught_signal(console)

    def prepare_child(self) -> Callable[[], None] | None:
        return default_signals


def shipped_firmware(binary: str, name: str) -> bool:
    """Whether the QEMU at `binary` ships the firmware file `name`: in its installation's data directory, which
    QEMU searches for -bios (PREFIX/share/qemu beside PREFIX/bin, a distribution's and a source install's alike)."""
    return (Path(binary).resolve().parent.parent / "share" / "qemu" / name).is_file()


@dataclass(frozen=True)
class UmlLauncher:
    settings: UmlSettings
    program: str = "UML"
    accelerated: bool = False
    unused_options: tuple[str, ...] = ("kunit_accel", "kunit_qemu")
    unused_why: str = "a UML kernel is a host program, run natively: there is no QEMU, and no accelerator (KVM, TCG)"
    start_remedy: str = (
        "the program is the build's own `linux` binary: delete its build directory to build it afresh, or run it by "
        "hand to see why it does not start."
    )
    # UML's console writes never block (its channels are non-blocking) and drop what the terminal will not take: a
    # burst (a sanitizer report at boot) that filled a pty while the reader was busy lost KTAP lines.
    console_pipe: bool = True

    def kernel_args(self) -> tuple[str, ...]:
        return (*self.settings.kernel_args, *UML_KERNEL_ARGS)

    def command(self, image: Path, kernel_args: Sequence[str], accel: str, program: str | None) -> list[str]:
        return [str(image), *kernel_args]

    def outside_signal(self, exit_signal: int | None, console: Sequence[str]) -> int | None:
        return exit_signal if exit_signal is not None and exit_signal not in _UML_OWN_DEATHS else None

    def prepare_child(self) -> Callable[[], None] | None:
        return uml_child


# What a hang-up of the guest's pty, or pytest-kunit's own stop, ends it with. A pytest started with them ignored (under
# nohup, or as a background job of a script, which ignores SIGINT) would pass that on, and a guest that ignores
# SIGHUP outlives a pytest killed outright.
_ENDING_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)


def default_signals() -> None:
    """In the guest's process before it executes: the signals that end it, at their default actions."""
    for number in _ENDING_SIGNALS:
        signal.signal(number, signal.SIG_DFL)


def uml_child() -> None:
    default_signals()
    # A panicking UML kernel aborts: without this, a core of its whole memory could land in the working directory.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # A session of its own, as a pty gives QEMU: its group holds the kernel's helper processes, stopped together.
    os.setsid()


def launcher(arch: Arch) -> Launcher:
    """The launcher of the kind of guest `arch` has (Arch allows exactly one)."""
    if arch.uml is not None:
        return UmlLauncher(arch.uml)
    assert arch.qemu is not None
    return QemuLauncher(arch.qemu)


def caught_signal(console: Sequence[str]) -> int | None:
    """The signal QEMU said it terminated on (its last lines), if any."""
    for line in console[-3:]:
        match = _CAUGHT_SIGNAL.search(line)
        if match:
            return int(match[1])
    return None
