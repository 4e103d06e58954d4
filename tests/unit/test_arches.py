"""The architecture records: what each guest's QEMU command and kernel command line hold, and nothing of another
architecture's; the packages a missing tool is named by."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES, RECORDS, Arch
from pytest_kunit.arch.shape import CompilerCheck
from pytest_kunit.arch.userfile import ArchFileError, load
from pytest_kunit.console import oops
from pytest_kunit.errors import BootError
from pytest_kunit.guest.boot import BootRequest, command_line, kernel_command_line
from pytest_kunit.guest.launch import QemuLauncher

ARM64 = ARCHES["arm64"]


def request(arch: Arch, accel: str, qemu: str | None = sys.executable) -> BootRequest:
    # Any program on PATH stands for QEMU: the command is only built, never run.
    return BootRequest(
        image=Path("/cache/build/key") / arch.make.image,
        arch=arch,
        kernel_args=tuple(kernel_command_line(arch, ["kunit.timeout=10"])),
        accel=accel,
        silence_timeout=12.5,
        qemu=qemu,
    )


@pytest.mark.parametrize("accel", ["tcg", "kvm"])
def test_arm64_boots_its_image_on_the_virt_machine(accel: str) -> None:
    words = command_line(request(ARM64, accel))
    assert words[words.index("-machine") + 1] == "virt"
    assert words[words.index("-cpu") + 1] == "cortex-a57"
    assert words[words.index("-accel") + 1] == accel
    assert words[words.index("-kernel") + 1] == "/cache/build/key/arch/arm64/boot/Image"
    assert words[words.index("-serial") + 1] == "stdio"
    assert words[-1].split() == [
        "console=ttyAMA0",
        "pty.legacy_count=0",
        "kunit_shutdown=reboot",
        "panic=-1",
        "kunit.timeout=10",
    ]


@pytest.mark.parametrize("accel", ["tcg", "kvm"])
def test_no_x86_64_argument_reaches_an_arm64_guest(accel: str) -> None:
    words = command_line(request(ARM64, accel))
    x86 = ARCHES["x86_64"].qemu
    own = ARM64.qemu
    assert x86 is not None and own is not None
    # What both records ask for (no legacy ptys) is arm64's own; nothing else of x86_64's reaches it.
    assert not (set(x86.kernel_args) - set(own.kernel_args)) & {*words, *words[-1].split()}


def test_arm64_guest_time_counts_instructions_under_tcg_only() -> None:
    tcg = command_line(request(ARM64, "tcg"))
    assert tcg[tcg.index("-icount") + 1] == "shift=auto,sleep=off"
    assert "-icount" not in command_line(request(ARM64, "kvm"))  # KVM refuses it


def test_arm64_is_built_with_the_cross_compiler_into_an_uncompressed_image() -> None:
    make = ARM64.make
    assert (make.arch, make.source_arch, make.target) == ("arm64", "arm64", "Image")
    assert make.cross_compile == "aarch64-linux-gnu-" and make.compiler_package == "gcc-aarch64-linux-gnu"
    assert not make.elf  # an Image is no ELF file: only its recorded size and digest are checked
    assert "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y" in ARM64.kconfig
    assert "# CONFIG_RANDOMIZE_BASE is not set" in ARM64.kconfig


QEMU_GUESTS = {"x86_64": "qemu-system-x86", "arm64": "qemu-system-arm"}


@pytest.mark.parametrize(("name", "package"), sorted(QEMU_GUESTS.items()))
def test_missing_qemu_names_the_package(name: str, package: str) -> None:
    settings = ARCHES[name].qemu
    assert settings is not None
    with pytest.raises(BootError) as raised:
        QemuLauncher(settings).binary("pytest-kunit-no-such-qemu")
    assert f"apt-get install {package}" in raised.value.render()


@pytest.mark.parametrize("name", sorted(ARCHES))
def test_every_record_names_itself_and_its_console(name: str) -> None:
    arch = ARCHES[name]
    assert arch.name == name
    assert any(arg.startswith("console=") for arg in kernel_command_line(arch, []))


def test_arm64_oopses_start_a_crash_report() -> None:
    # arm64's die() words, from arch/arm64/kernel/traps.c and mm/fault.c of 6.1.
    undefined = ["# case: about to run", "Internal error: Oops - Undefined instruction: 0000000002000000 [#1] SMP"]
    assert oops.fault_lines(undefined) == undefined[1:]
    null = ["Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000", "Mem abort info:"]
    assert oops.fault_lines(["x", *null]) == null


def test_each_record_is_a_file_of_its_own_named_for_it_and_read_as_a_user_s() -> None:
    """Our records are data, one small file each, read by the loader that reads --kunit-arch-config's file."""
    files = sorted(RECORDS.glob("*.toml"))
    assert [path.stem for path in files] == sorted(ARCHES)
    for path in files:
        assert load(path) == {path.stem: ARCHES[path.stem]}


def test_a_compiler_check_is_a_table_of_its_own_in_a_record_file(tmp_path: Path) -> None:
    x86_64 = (RECORDS / "x86_64.toml").read_text()
    checked = tmp_path / "checked.toml"
    checked.write_text(x86_64 + '\n[x86_64.make.compiler_check]\nsource = "int x;"\nexpect = "x"\nfault = "f"\n')
    assert load(checked)["x86_64"].make.compiler_check == CompilerCheck("int x;", "x", "f")
    checked.write_text(x86_64 + '\n[x86_64.make.compiler_check]\nsource = "int x;"\nexpect = "x"\nfaults = "f"\n')
    with pytest.raises(ArchFileError, match=r"\[x86_64\]\.make\.compiler_check\.faults: no such field"):
        load(checked)


WRITTEN_OUT = Path(__file__).resolve().parents[1] / "data" / "arch_records_written_out.json"


def test_each_record_loads_as_it_did_with_every_value_written_out() -> None:
    """The loader's defaults change no record: each loads to the Arch it was when every value was written out (a
    user's file from then, in JSON); a record changed since must be changed there too."""
    assert load(WRITTEN_OUT) == ARCHES


QEMU_RECORD = """[guest]
[guest.make]
arch = "x86_64"
source_arch = "x86"
target = "vmlinux"
image = "vmlinux"
[guest.qemu]
binary = "qemu-system-x86_64"
package = "qemu-system-x86"
kernel_args = ["console=ttyS0"]
"""


SH4_LIKE = ("-serial", "null", "-serial", "stdio")  # its console named already, its first port not it


@pytest.mark.parametrize(
    ("lines", "args", "tcg_args"),
    [
        ("", ("-m", "1024", "-serial", "stdio"), ("-icount", "shift=auto,sleep=off")),
        ("memory = 2048\ntcg_args = []", ("-m", "2048", "-serial", "stdio"), ()),
        ('args = ["-machine", "q35"]\nmemory = 0', ("-machine", "q35", "-serial", "stdio"), None),
        (
            'args = ["-serial", "null", "-serial", "stdio", "-m", "64"]',
            ("-serial", "null", "-serial", "stdio", "-m", "64"),
            None,
        ),
    ],
)
def test_a_qemu_table_gets_the_console_memory_and_instruction_count_unless_it_says(
    tmp_path: Path, lines: str, args: tuple[str, ...], tcg_args: tuple[str, ...] | None
) -> None:
    record = tmp_path / "guest.toml"
    record.write_text(QEMU_RECORD + lines + "\n")
    qemu = load(record)["guest"].qemu
    assert qemu is not None
    assert qemu.args == args
    assert qemu.tcg_args == (tcg_args if tcg_args is not None else ("-icount", "shift=auto,sleep=off"))


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ('args = ["-m", "64"]\nmemory = 64', r"\[guest\]\.qemu\.memory: the args name -m already"),
        ("memory = -1", r"\[guest\]\.qemu\.memory: expected MiB of guest memory"),
        ('memory = "1G"', r"\[guest\]\.qemu\.memory: expected a whole number, got '1G'"),
    ],
)
def test_a_qemu_tables_memory_said_twice_or_wrong_is_named(tmp_path: Path, lines: str, error: str) -> None:
    record = tmp_path / "guest.toml"
    record.write_text(QEMU_RECORD + lines + "\n")
    with pytest.raises(ArchFileError, match=error):
        load(record)
