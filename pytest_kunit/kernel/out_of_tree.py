"""Out-of-tree suites: a folder of C sources, a Kconfig and a Makefile/Kbuild beside its kunitconfig.

The folder is copied (rsync, keeping timestamps, so Kbuild rebuilds only what changed) into the prepared tree under
`pytest-kunit/<name>/`, which the tree's top-level Kconfig and Kbuild are made to include. The prepared tree is
always the runner's own copy in the cache: the source the user pointed at is never modified.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..host.cache import write_atomically
from .tree import enclosing_tree, mirror

OVERLAY = "pytest-kunit"
OVERLAY_LISTS = ("Kconfig", "Makefile")  # the overlay's own files, listing every placed suite
_KCONFIG_HOOK = f'source "{OVERLAY}/Kconfig"'
_KBUILD_HOOK = f"obj-y\t\t\t+= {OVERLAY}/"


@dataclass(frozen=True)
class SuiteDir:
    name: str
    path: Path

    def digest(self) -> str:
        """Identity of every file in the folder: a change to any of them means a rebuild."""
        digest = hashlib.sha256()
        for path in sorted(self.path.rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(self.path)).encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]


def suite_dir_for(fragment: Path) -> SuiteDir | None:
    """The out-of-tree suite a kunitconfig belongs to: its folder, when that holds a Kconfig and a Makefile/Kbuild
    and lies in no kernel tree (lib/kunit/.kunitconfig sits beside lib/kunit's own Kconfig and Makefile)."""
    folder = fragment.parent
    if enclosing_tree(fragment) is not None:
        return None
    if (folder / "Kconfig").is_file() and ((folder / "Makefile").is_file() or (folder / "Kbuild").is_file()):
        return SuiteDir(folder.name, folder.resolve())
    return None


def _replace(path: Path, text: str) -> None:
    """A new file in the old one's place (its mode kept), never a write into it: a build reading the tree sees the
    old file or the new one whole, and a copy of the tree made of hard links (the real tier's) keeps its own."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    write_atomically(path, text)
    path.chmod(mode)


def _replace_keeping_time(path: Path, text: str) -> None:
    """Replace a file that lists the placed suites, keeping its time. A build's key names the suites placed for it
    and their symbols default to off, so a suite placed later for another kernel changes nothing a configured build
    holds; a newer time would still make Kbuild and configuring.is_configured() complete that build's configuration
    again, and its next run make the whole kernel (a kernel of the framework fragment, once the sanitize suite is
    placed for the instrumented one)."""
    before = path.stat() if path.exists() else None
    _replace(path, text)
    if before is not None:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        _replace_keeping_time(path, text)


def _append_once(path: Path, line: str) -> None:
    text = path.read_text()
    if line not in text.splitlines():
        _replace_keeping_time(path, text.rstrip("\n") + f"\n\n{line}\n")


def install(tree: Path, suite: SuiteDir) -> None:
    """Place the suite's folder into `tree` and make Kconfig and Kbuild include every placed suite."""
    overlay = tree / OVERLAY
    mirror(suite.path, overlay / suite.name, "*.kunitconfig")
    placed = sorted(child.name for child in overlay.iterdir() if (child / "Kconfig").is_file())
    kconfig = "".join(f'source "{OVERLAY}/{name}/Kconfig"\n' for name in placed)
    kconfig_list, makefile_list = (overlay / name for name in OVERLAY_LISTS)
    _write_if_changed(kconfig_list, f'menu "pytest-kunit out-of-tree suites"\n{kconfig}endmenu\n')
    _write_if_changed(makefile_list, "".join(f"obj-y += {name}/\n" for name in placed))
    _append_once(tree / "Kconfig", _KCONFIG_HOOK)
    _append_once(tree / "Kbuild", _KBUILD_HOOK)
