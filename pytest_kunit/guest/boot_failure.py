"""Why a boot printed no KTAP: the guest program's own words when it failed, else what its console shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..console import oops
from ..console.transcript import BootRecord
from ..errors import BootError
from .recovery import killed_by

# The kernel's first console line: anything before it (or, without it, everything) is QEMU's (or UML's) own.
_KERNEL_STARTED = re.compile(r"\bLinux version \d")


def qemu_failure(record: BootRecord) -> BootError | None:
    """The guest program's own error, in its own words, when it failed (exited non-zero by itself) before the kernel
    spoke."""
    if record.timed_out or record.exit_status in (0, None):
        return None
    said = []
    for line in record.console:
        if _KERNEL_STARTED.search(line):
            return None
        if line.strip():
            said.append(line.strip())
    if not said:
        return None
    command = record.command
    image = Path(command[command.index("-kernel") + 1]) if "-kernel" in command[:-1] else None
    damaged = f"the image {image} (build directory {image.parent})" if image else "the kernel image"
    return BootError(
        f"{record.program} failed before the kernel started (exit status {record.exit_status}): {said[0]}",
        f"read {record.program}'s own words below. If it could not load the kernel, {damaged} is damaged: delete it "
        "and run again to rebuild it. Otherwise run the command below by hand.",
        detail=f"{record.program} said:\n" + "\n".join(said[:10]) + f"\nCommand: {shlex.join(command)}",
    )


def boot_failure(record: BootRecord) -> BootError:
    """Why a boot printed no KTAP, with the console's tail; the guest program's own words first when it failed."""
    failed = None if record.outside_signal is not None else qemu_failure(record)
    if failed is not None:
        return failed
    tail = "\n".join(record.console[-25:])
    if any(oops.is_panic(line) for line in record.console):
        what = "The kernel panicked before KUnit started."
    elif record.timed_out:
        what = f"Before KUnit started, {record.killed_for or 'the guest printed nothing for too long and was killed'}."
    elif record.outside_signal is not None:
        what = f"{killed_by(record.outside_signal, record.program)} before KUnit started."
    elif not record.console:
        what = f"{record.program} exited (status {record.exit_status}) without printing anything."
    elif not any(_KERNEL_STARTED.search(line) for line in record.console):
        what = (
            "The kernel printed nothing: it died before its console came up (a fault that early ends the guest "
            "silently; a 6.1 KASAN kernel booted through its PVH entry does, see docs/features.md, Sanitizers)."
        )
    else:
        what = "The guest's console has no KTAP output at all: KUnit did not run."
    remedy = (
        f"check the kunitconfig enables CONFIG_KUNIT and the guest's console, that the kernel starts under "
        f"{record.program}, and read the console below."
    )
    return BootError(what, remedy, detail=f"Console tail:\n{tail}")
