"""What a kept guest (kept.py) is told and how its answers are judged: which kernels and batches may be kept, a
module's file as /init's serve loop takes it (findings/guest_init.py), and the reasons a guest may not serve another
batch."""

from __future__ import annotations

import base64
import gzip
import subprocess
import tempfile
from pathlib import Path

from ..console import oops
from ..findings import guest_init
from ..model import CaseId, Kernel
from .module_boots import builtin_cases

# Taint flags loading a test module sets (TAINT_OOT_MODULE, TAINT_UNSIGNED_MODULE, TAINT_TEST): any other is a reason.
LOADING_TAINTS = (1 << 12) | (1 << 13) | (1 << 18)


def unsound(lines: list[str], booted: int = 0) -> str:
    """Why a guest whose console (since it last proved sound) holds `lines` may not serve another batch, or "";
    `booted` is the taint flags it had once booted, before any case ran."""
    faults = oops.fault_lines(lines)
    if faults:
        return f"its console shows a fault: {faults[0].strip()}"
    for line in lines:
        if guest_init.UNLOAD_FAILED in line:
            return f"a module would not unload ({line.split(guest_init.UNLOAD_FAILED, 1)[1].strip()})"
    for word in taints(lines):
        if not word.isdigit():
            return f"its taint flags could not be read ({word!r})"
        if int(word) & ~(LOADING_TAINTS | booted):
            return f"the kernel is tainted ({int(word):#x}: more than it booted with and loading test modules sets)"
    return ""


def taints(lines: list[str]) -> list[str]:
    """The taint flags /init said in `lines`, each as it said them (a number, unless something went wrong)."""
    return [line.split(guest_init.TAINTED, 1)[1].strip() for line in lines if guest_init.TAINTED in line]


def put_command(name: str, data: bytes) -> list[str]:
    """/init's `put` of a module's file, in the pieces sent one at a time: each chunk waits for CHUNK_TAKEN before
    the next is sent (the command itself rides with the first), and the last piece ends it."""
    encoded = base64.encodebytes(gzip.compress(data, 6)).decode().splitlines()
    size = guest_init.CHUNK_LINES
    chunks = [
        "".join(f"{line}\n" for line in encoded[start : start + size]) + ".\n" for start in range(0, len(encoded), size)
    ]
    chunks[0] = f"put {name}\n" + chunks[0]
    return [*chunks, "end\n"]


def servable(kernel: Kernel, keep: bool) -> bool:
    """Whether the kernel's boots may go to a kept guest: module mode, or a kernel whose built-in suites run again
    after boot (kunit.autorun, built with what that needs: an initramfs), and /init doing nothing else at the end (no
    kmemleak scan, no GCOV counters)."""
    after = (guest_init.KMEMLEAK_ARG, f"{guest_init.GCOV_ARG}=")
    return (
        keep
        and (bool(kernel.modules) or kernel.features.autorun)
        and kernel.initrd is not None
        and not any(arg.startswith(after) for arg in kernel.boot_args)
    )


def loadable(module: Path, cross_compile: str) -> bytes:
    """The module's file as sent into a guest: without its debug information (which the kernel does not load; crash
    reports are decoded against the build's own file), a fifth of the bytes; as built if objcopy cannot strip it."""
    with tempfile.TemporaryDirectory(prefix="pytest-kunit-module-") as scratch:
        stripped = Path(scratch) / module.name
        done = subprocess.run(
            [f"{cross_compile}objcopy", "--strip-debug", str(module), str(stripped)], capture_output=True, check=False
        )
        return stripped.read_bytes() if done.returncode == 0 and stripped.is_file() else module.read_bytes()


def rerun_suites(kernel: Kernel, cases: list[CaseId]) -> tuple[str, ...] | None:
    """The built-in suites of `cases`, in order, if a kept guest can run them again: a kernel with kunit.autorun and
    no modules (whose own built-in cases run only at boot), each suite's cases all among `cases` (a run again runs a
    whole suite). None otherwise."""
    if kernel.modules or not kernel.features.autorun:
        return None
    suites = tuple(dict.fromkeys(suite for suite, _ in cases))
    whole = [case for case in builtin_cases(kernel) if case[0] in suites]
    return suites if set(whole) == set(cases) else None
