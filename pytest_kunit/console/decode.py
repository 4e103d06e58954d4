"""Turning a kernel crash report's frames into names and file:line: raw addresses resolved against the image's own
symbol table (a kernel without KALLSYMS prints only addresses), then the tree's scripts/decode_stacktrace.sh, both
with the binutils of the image's architecture (a cross build's CROSS_COMPILE prefix)."""

from __future__ import annotations

import bisect
import os
import re
import subprocess
from functools import cache
from pathlib import Path

# A bare kernel text address where a symbol would stand: `RIP: 0010:0xffffffff810bbaea`, ` ? 0xffffffff810b8fea`.
_RAW_ADDRESS = re.compile(r"(?<![\w+/])0x(ffff[0-9a-f]{12})\b")
# `./lib/x.c:42`: a compile through the compiler wrapper records the build directory as `.` (so that no object
# names a tree); decode_stacktrace.sh strips only the tree's absolute path.
_DOT_RELATIVE = re.compile(r"(?<=[( ])(?:\./)+(?=[^\s:()]+:\d+)")
_TEXT_SYMBOL = re.compile(r"^([0-9a-f]+) (?:([0-9a-f]+) )?[tTwW] (\S+)$")


@cache
def _symbols(image: Path, mtime_ns: int, nm: str) -> tuple[list[int], list[tuple[str, int]]]:
    """The image's text symbols sorted by address: (addresses, [(name, size)]); empty if nm cannot read it."""
    del mtime_ns  # part of the cache key: a rebuilt image is read again
    try:
        result = subprocess.run(
            [nm, "-n", "-S", "--defined-only", str(image)], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return [], []
    addresses: list[int] = []
    entries: list[tuple[str, int]] = []
    for line in result.stdout.splitlines():
        match = _TEXT_SYMBOL.match(line)
        # arm64's `$x`/`$d` mapping symbols mark where code and data start: they name no function.
        if match and not match[3].startswith("$"):
            addresses.append(int(match[1], 16))
            entries.append((match[3], int(match[2], 16) if match[2] else 0))
    return addresses, entries


def symbolize(lines: tuple[str, ...], image: Path, nm: str = "nm") -> tuple[str, ...]:
    """Each raw text address replaced by `function+0xoffset/0xsize`, as a kernel with KALLSYMS would print it."""
    if not any(_RAW_ADDRESS.search(line) for line in lines) or not image.is_file():
        return lines
    addresses, entries = _symbols(image, image.stat().st_mtime_ns, nm)
    if not addresses:
        return lines

    def name(match: re.Match[str]) -> str:
        address = int(match[1], 16)
        index = bisect.bisect_right(addresses, address) - 1
        if index < 0:
            return match[0]
        symbol, size = entries[index]
        offset = address - addresses[index]
        if size and offset >= size:
            return match[0]
        return f"{symbol}+{offset:#x}/{size:#x}" if size else f"{symbol}+{offset:#x}"

    return tuple(_RAW_ADDRESS.sub(name, line) for line in lines)


def decode_stacktrace(lines: tuple[str, ...], build_dir: Path, tree: Path, cross_compile: str = "") -> tuple[str, ...]:
    """The crash report with names for raw addresses and `file:line` after each frame the build's vmlinux can
    tell (where it has debug info); unchanged where it cannot. `cross_compile` prefixes nm and addr2line."""
    vmlinux = build_dir / "vmlinux"
    lines = symbolize(lines, vmlinux, f"{cross_compile}nm")
    script = tree / "scripts" / "decode_stacktrace.sh"
    if not lines or not vmlinux.is_file() or not script.is_file():
        return lines
    try:
        result = subprocess.run(
            ["bash", str(script), str(vmlinux), str(tree)],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "CROSS_COMPILE": cross_compile},
        )
    except (OSError, subprocess.TimeoutExpired):
        return lines
    decoded = tuple(_DOT_RELATIVE.sub("", line) for line in result.stdout.splitlines())
    return decoded if result.returncode == 0 and decoded else lines
