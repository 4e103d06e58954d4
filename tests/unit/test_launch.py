"""What each kind of guest is started with, and what a signal that ended it means (launch.py)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES, Arch, MakeSettings, UmlSettings
from pytest_kunit.findings.guest_init import HALT_ARG
from pytest_kunit.guest.boot import BootRequest, command_line, kernel_command_line
from pytest_kunit.guest.launch import launcher

UM = ARCHES["um"]
X86 = ARCHES["x86_64"]


def test_a_uml_kernel_is_its_own_program_with_kunit_pys_arguments() -> None:
    args = kernel_command_line(UM, ["kunit.filter_glob=example", ""])
    assert args == ["mem=1G", "console=tty", "kunit_shutdown=halt", "pytest_kunit.halt", "kunit.filter_glob=example"]
    command = launcher(UM).command(Path("/cache/build/k/linux"), args, "none", None)
    assert command == ["/cache/build/k/linux", *args]


def test_a_rebooting_uml_kernel_would_run_again_so_none_reboots() -> None:
    # UML's reboot executes the binary again: only QEMU guests (with -no-reboot) may be told to reboot.
    assert "kunit_shutdown=reboot" not in kernel_command_line(UM, [])
    assert "kunit_shutdown=reboot" in kernel_command_line(X86, [])
    # Nor the initramfs's /init, which halts a guest whose command line says so.
    assert HALT_ARG in kernel_command_line(UM, []) and HALT_ARG not in kernel_command_line(X86, [])


def test_a_machine_that_cannot_reboot_powers_off_when_done() -> None:
    # sparc64's OpenBIOS fails the reboot (a panic, again and again): its power-off is what ends QEMU there.
    words = kernel_command_line(ARCHES["sparc64"], [])
    assert "kunit_shutdown=poweroff" in words and "kunit_shutdown=reboot" not in words
    assert "panic=-1" in words


@pytest.mark.parametrize("number", [signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL])
def test_umls_own_deaths_are_not_signals_from_outside(number: int) -> None:
    # A panic aborts the UML process; a fault in UML's own code kills it: the kernel died, nobody killed it.
    assert launcher(UM).outside_signal(number, []) is None


@pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGQUIT, signal.SIGUSR1])
def test_other_signals_that_end_uml_came_from_outside(number: int) -> None:
    assert launcher(UM).outside_signal(number, []) == number


def test_qemus_caught_signal_is_read_from_its_console_but_umls_is_not() -> None:
    console = ["qemu-system-x86_64: terminating on signal 15 from pid 4242 (kill)"]
    assert launcher(X86).outside_signal(None, console) == signal.SIGTERM
    assert launcher(UM).outside_signal(None, console) is None
    # Under QEMU every signal is from outside: QEMU itself does not abort when the guest panics.
    assert launcher(X86).outside_signal(signal.SIGABRT, []) == signal.SIGABRT


def test_only_qemu_guests_have_an_accelerator_and_a_qemu_binary() -> None:
    assert launcher(X86).accelerated and not launcher(X86).unused_options
    assert not launcher(UM).accelerated
    assert set(launcher(UM).unused_options) == {"kunit_accel", "kunit_qemu"}


def test_an_arch_has_exactly_one_kind_of_guest() -> None:
    make = MakeSettings(arch="um", source_arch="um", target="linux", image="linux")
    with pytest.raises(TypeError, match=r"exactly one of qemu= .* and uml="):
        Arch(name="none", make=make, kconfig=())
    with pytest.raises(TypeError, match="exactly one"):
        Arch(name="both", make=make, kconfig=(), qemu=X86.qemu, uml=UmlSettings(kernel_args=()))


@pytest.mark.parametrize("name", ["Jane Doe", 'a"quote', "tab\there"])
def test_a_path_a_uml_kernel_reads_from_its_command_line_is_one_word(tmp_path: Path, name: str) -> None:
    initrd = tmp_path / name / "init.cpio"
    initrd.parent.mkdir()
    initrd.write_bytes(b"cpio")
    command = command_line(BootRequest(Path("linux"), ARCHES["um"], ("kunit.timeout=10",), "none", 1.0, initrd=initrd))
    (word,) = [word for word in command if word.startswith("initrd=")]
    assert " ".join(command[1:]).split() == command[1:]  # no argument split by the kernel's parser
    assert '"' not in word and Path(word.removeprefix("initrd=")).samefile(initrd)


def test_a_path_with_nothing_to_split_is_handed_as_it_is(tmp_path: Path) -> None:
    initrd = tmp_path / "init.cpio"
    command = command_line(BootRequest(Path("linux"), ARCHES["um"], (), "none", 1.0, initrd=initrd))
    assert f"initrd={initrd}" in command


def installed_qemu(prefix: Path, *firmware: str) -> str:
    """A QEMU installed under `prefix` (PREFIX/bin/qemu-system-x86_64) whose data directory holds `firmware`."""
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share" / "qemu").mkdir(parents=True)
    binary = prefix / "bin" / "qemu-system-x86_64"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    for name in firmware:
        (prefix / "share" / "qemu" / name).write_bytes(b"rom")
    return str(binary)


def test_x86_64_boots_qboot_where_qemu_ships_it(tmp_path: Path) -> None:
    qemu = installed_qemu(tmp_path / "usr", "qboot.rom")
    command = launcher(X86).command(Path("/cache/vmlinux"), ["console=ttyS0"], "tcg", qemu)
    assert command[command.index("-bios") + 1] == "qboot.rom"
    assert command.index("-bios") < command.index("-kernel")


def test_x86_64_keeps_qemus_own_firmware_where_qboot_is_not_shipped(tmp_path: Path) -> None:
    qemu = installed_qemu(tmp_path / "opt", "bios-256k.bin")
    assert "-bios" not in launcher(X86).command(Path("/cache/vmlinux"), ["console=ttyS0"], "kvm", qemu)


def test_x86_64_guests_register_no_legacy_ptys() -> None:
    # Registering 256 BSD pty pairs took a fifth of the kernel's instructions before KUnit's first line under TCG.
    assert "pty.legacy_count=0" in kernel_command_line(X86, [])
