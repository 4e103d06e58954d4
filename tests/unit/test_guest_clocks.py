"""The x86 guests' clocks: on the instruction count under TCG (not under KVM); the TSC never judged unstable; no
local APIC timer to calibrate."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES
from pytest_kunit.guest.boot import BootRequest, command_line, kernel_command_line

X86 = ARCHES["x86_64"]


def command(accel: str) -> list[str]:
    request = BootRequest(
        image=Path("vmlinux"),
        arch=X86,
        kernel_args=tuple(kernel_command_line(X86, ["kunit.timeout=10"])),
        accel=accel,
        silence_timeout=12.5,
        qemu=sys.executable,  # any program on PATH: the command is only built, never run
    )
    return command_line(request)


def test_tcg_guests_count_instructions() -> None:
    words = command("tcg")
    at = words.index("-icount")
    assert words[at + 1] == "shift=auto,sleep=off"
    assert words[words.index("-accel") + 1] == "tcg"


def test_kvm_guests_do_not() -> None:
    # QEMU refuses -icount with a hardware accelerator.
    assert "-icount" not in command("kvm")


@pytest.mark.parametrize("accel", ["tcg", "kvm"])
def test_the_tsc_is_reliable_on_every_accelerator(accel: str) -> None:
    append = command(accel)[-1].split()
    assert "tsc=reliable" in append
    assert append[-1] == "kunit.timeout=10"  # pytest-kunit's own arguments still come last


@pytest.mark.parametrize("name", ["x86_64", "i386"])
def test_pc_guests_skip_the_local_apic_timer_calibration(name: str) -> None:
    # Its calibration spins for a tenth of a second of guest time: the larger part of a warm run's boot under TCG.
    settings = ARCHES[name].qemu
    assert settings is not None and "noapictimer" in settings.kernel_args
