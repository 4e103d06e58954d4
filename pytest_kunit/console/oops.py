"""Where the kernel says something died on its console: the start of an oops, BUG or panic report."""

from __future__ import annotations

import re
from collections.abc import Iterable

# arm64 starts a fault's report with "Unable to handle kernel", and others (an undefined instruction, BTI, a failed
# PAC) with its die()'s "Internal error: Oops - <what>".
_FAULT = re.compile(
    r"(BUG: |Oops: |general protection fault|kernel BUG at|invalid opcode: |double fault|"
    r"Kernel panic - not syncing|Unable to handle kernel|Internal error: |stack-protector: )"
)
_PANIC = re.compile(r"Kernel panic - not syncing")


def fault_lines(lines: Iterable[str]) -> list[str]:
    """The kernel's own crash report (oops, BUG, panic) within `lines`, from its first line on."""
    collected = list(lines)
    for index, line in enumerate(collected):
        if _FAULT.search(line):
            return collected[index:]
    return []


def is_panic(line: str) -> bool:
    return bool(_PANIC.search(line))
