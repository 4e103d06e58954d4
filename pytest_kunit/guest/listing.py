"""The cases an image holds, from a `kunit.action=list` boot: trusted (and so cached) only when that boot reached
its end, the kernel's own reboot after the last name."""

from __future__ import annotations

import re

from ..arch import QemuSettings
from ..console import ktap, oops
from ..console import ktap_lines as grammar
from ..console.transcript import BootRecord
from ..errors import BootError
from ..host.cache import CaseList
from ..model import Kernel
from .boot_failure import boot_failure
from .recovery import killed_by
from .runner import Runner

# kunit_shutdown=reboot (QEMU), poweroff (sparc64) or halt (UML): the executor's last act, printed by
# kernel_restart(), kernel_power_off() or kernel_halt() (a panic reboots or aborts without it); machine_restart() may
# add a `reboot: machine restart` line after it.
_REBOOT = re.compile(r"^reboot: (?:Restarting system|Power down|System halted)")
_REBOOT_LINE = "reboot: "
# How many unreadable lines an error quotes.
_QUOTED = 10


def reached_end(record: BootRecord, machine: QemuSettings | None = None) -> bool:
    """Whether the list boot ran to the kernel's own reboot (or halt) and the guest then exited by itself, status 0.

    The reboot lines must be the kernel's last: a test's printk, or anything the kernel printed before it died,
    can hold the same words mid-boot. Only what the machine's firmware prints once the kernel is gone may follow
    (lines starting with one of its `after_reboot`). A panic anywhere means the list was cut short. On a machine
    whose console never shows the reboot line (s390), the guest's own clean exit is the end."""
    if not record.ktap_started or record.timed_out or record.exit_status != 0:
        return False
    lines = [grammar.clean(line).strip() for line in record.console]
    if any(oops.is_panic(line) for line in lines):
        return False
    if machine is not None and not machine.shows_reboot_line:
        return True
    after_reboot = machine.after_reboot if machine is not None else ()
    tail = [line for line in lines if line]
    while after_reboot and tail and tail[-1].startswith(after_reboot):
        tail.pop()
    while tail and tail[-1].startswith(_REBOOT_LINE) and not _REBOOT.match(tail[-1]):
        tail.pop()  # what the machine's own restart printed after the kernel's line
    return bool(tail) and bool(_REBOOT.match(tail[-1]))


def _how_it_ended(record: BootRecord) -> str:
    if record.timed_out:
        return record.killed_for or "the guest went silent and was killed"
    if record.outside_signal is not None:
        return killed_by(record.outside_signal, record.program)
    if record.exit_status != 0:
        return f"{record.program} ended with status {record.exit_status}"
    return f"the console stopped after {len(record.console)} lines, with no reboot, though {record.program} exited 0"


def list_cases(runner: Runner, kernel: Kernel, with_attributes: bool = False) -> CaseList:
    """The cases `kernel`'s image holds, in the order the kernel runs them, with each case's attributes where the
    kernel has them (kunit.action=list_attr) and the suites it names with no case, from a list boot that reached its
    end (the cases' source lines are the caller's to add).

    A list boot cut short (a console wrapper, a killed QEMU) is booted once more; a second cut, or a guest that went
    silent, is an error: a partial list would leave cases out of every later run.
    """
    action = "list_attr" if with_attributes else "list"
    tries = 2
    for attempt in range(1, tries + 1):
        record, events = runner.guest(kernel, (f"kunit.action={action}",))
        listed = [event for event in events if isinstance(event, ktap.Listed)]
        if reached_end(record, kernel.arch.qemu):
            unread = [event.line for event in events if isinstance(event, ktap.Unread)]
            if unread:
                raise _unread_error(kernel, action, unread, len(listed))
            empty = tuple(event.suite for event in events if isinstance(event, ktap.EmptySuite))
            cases = tuple((item.suite, item.case) for item in listed)
            attributes = {(item.suite, item.case): item.attributes for item in listed if item.attributes}
            return CaseList(cases, {}, attributes, empty)
        if not record.ktap_started:
            raise boot_failure(record)
        if record.timed_out or attempt == tries:
            break
    tail = "\n".join(record.console[-15:])
    raise BootError(
        f"The kunit.action={action} boot of {kernel.build.image} did not reach its end ({_how_it_ended(record)}; "
        f"{len(listed)} cases listed, {'after a second try' if attempt == tries else 'not retried'}): the case list "
        "would be incomplete, so none was collected or cached.",
        "check what runs QEMU (--kunit-qemu) passes its whole console through and lets it exit by itself, and read "
        "the console tail below.",
        detail=f"Console tail:\n{tail}",
    )


def _unread_error(kernel: Kernel, action: str, unread: list[str], listed: int) -> BootError:
    quoted = "\n".join(f"  {line!r}" for line in unread[:_QUOTED])
    more = f"\n  ... and {len(unread) - _QUOTED} more" if len(unread) > _QUOTED else ""
    return BootError(
        f"The kunit.action={action} boot of {kernel.build.image} reached its end, but {len(unread)} of its lines "
        f"name no case pytest-kunit can read ({listed} cases were read): the case list would be incomplete, so none "
        "was collected or cached.",
        "a list line is `suite.case` (6.12's list, and list_attr since 6.6, also print each suite's name alone before "
        "its cases); "
        "report the lines below with the kernel version, as pytest-kunit should read every name KUnit prints.",
        detail=f"Unread lines:\n{quoted}{more}",
    )
