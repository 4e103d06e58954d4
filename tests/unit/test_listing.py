"""When a kunit.action=list boot's case list can be trusted: only when the kernel really reached its end."""

from __future__ import annotations

import pytest

from pytest_kunit.arch import QemuSettings
from pytest_kunit.console.transcript import BootRecord
from pytest_kunit.guest.listing import reached_end

LIST = ["Linux version 6.12.0", "KTAP version 1", "example.example_simple_test", "example.example_skip_test"]


def record(*console: str, exit_status: int = 0) -> BootRecord:
    return BootRecord(["qemu"], list(console), exit_status=exit_status, ktap_started=True)


@pytest.mark.parametrize(
    "tail",
    [
        ["reboot: Restarting system"],
        ["[    2.000000] reboot: Restarting system", "[    2.000100] reboot: machine restart", ""],
        ["reboot: System halted"],
        ["reboot: Power down"],  # sparc64 powers off
    ],
)
def test_the_kernels_own_reboot_as_its_last_words_ends_a_list(tail: list[str]) -> None:
    assert reached_end(record(*LIST, *tail))


@pytest.mark.parametrize(
    "tail",
    [
        # A test's printk (or anything the kernel printed) said the words mid-boot; a panic followed.
        [
            "reboot: Restarting system",
            "example.example_more",
            "Kernel panic - not syncing: Fatal exception",
            "---[ end Kernel panic - not syncing: Fatal exception ]---",
        ],
        ["reboot: Restarting system", "Kernel panic - not syncing: after the reboot line"],
        ["reboot: Restarting system", "example.example_after"],
        ["Kernel panic - not syncing: oops", "reboot: Restarting system"],
        [],
    ],
)
def test_reboot_words_that_are_not_the_end_leave_a_list_incomplete(tail: list[str]) -> None:
    assert not reached_end(record(*LIST, *tail))


def test_a_guest_that_failed_or_was_killed_did_not_reach_its_end() -> None:
    assert not reached_end(record(*LIST, "reboot: Restarting system", exit_status=1))
    timed_out = record(*LIST, "reboot: Restarting system")
    timed_out.timed_out = True
    assert not reached_end(timed_out)


SEABIOS = QemuSettings("qemu-system-hppa", "qemu-system-misc", (), (), after_reboot=("SeaBIOS wants SYSTEM RESET.",))
SCLP = QemuSettings("qemu-system-s390x", "qemu-system-misc", (), (), shows_reboot_line=False)


def test_only_the_firmware_s_own_lines_may_follow_the_kernel_s_reboot() -> None:
    # parisc's SeaBIOS speaks once the kernel has rebooted; the record names what it says.
    ended = record(*LIST, "reboot: Restarting system", "SeaBIOS wants SYSTEM RESET.", "")
    assert reached_end(ended, SEABIOS)
    assert not reached_end(ended)
    # A firmware line where the kernel's reboot line should be is no end; nor is a kernel line after the firmware's.
    assert not reached_end(record(*LIST, "SeaBIOS wants SYSTEM RESET."), SEABIOS)
    cut = record(*LIST, "reboot: Restarting system", "SeaBIOS wants SYSTEM RESET.", "example.example_after")
    assert not reached_end(cut, SEABIOS)


def test_where_the_console_never_shows_the_reboot_line_a_clean_exit_ends_the_list() -> None:
    assert reached_end(record(*LIST), SCLP)
    assert not reached_end(record(*LIST))
    # Still no end: a panic (its notifier flushes SCLP's buffer, so its lines are shown), a failed or killed guest.
    assert not reached_end(record(*LIST, "Kernel panic - not syncing: Fatal exception"), SCLP)
    assert not reached_end(record(*LIST, exit_status=1), SCLP)
    timed_out = record(*LIST)
    timed_out.timed_out = True
    assert not reached_end(timed_out, SCLP)
