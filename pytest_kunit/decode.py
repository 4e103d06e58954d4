"""Turning a kernel crash report's frames into file:line with the tree's own scripts/decode_stacktrace.sh."""

from __future__ import annotations

import subprocess
from pathlib import Path


def decode_stacktrace(lines: tuple[str, ...], build_dir: Path, tree: Path) -> tuple[str, ...]:
    """The crash report with `file:line` after each frame the build's vmlinux can tell; unchanged if it cannot."""
    vmlinux = build_dir / "vmlinux"
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
        )
    except (OSError, subprocess.TimeoutExpired):
        return lines
    decoded = tuple(result.stdout.splitlines())
    return decoded if result.returncode == 0 and decoded else lines
