"""The initramfs the guest boots: Debian's static busybox, the /init that runs after KUnit (findings/guest_init.py)
and the suites' modules, as a newc cpio archive made once into the cache; and whether /init runs on a guest at all."""

from __future__ import annotations

import binascii
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..arch import Arch
from ..errors import KunitError, KunitWarning
from ..findings.guest_init import INIT, KCONFIG, MODULE_DIR
from ..host.cache import saved_initramfs
from ..kbuild.records import elf_machine
from ..kernel.kconfig import read_dotconfig

BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static


def unavailable(arch: Arch, busybox: Path = BUSYBOX) -> str:
    """Why /init cannot run on `arch`'s guests, or "" if it can: it is the host's static busybox (or, before that is
    installed, a program of the host's kind), which runs only on a guest of the same ELF machine."""
    host = elf_machine(busybox) or elf_machine(Path(sys.executable))
    if host is not None and host == arch.make.elf_machine:
        return ""
    return (
        f"the guest's /init (kmemleak's final scan, GCOV's counters) is the host's static busybox ({busybox}), a "
        f"program of another architecture than {arch.name}'s guests run"
    )


def kmemleak_scan(dotconfig: Path, arch: Arch | None = None) -> bool:
    """Whether the kernel whose .config this is gets kmemleak's final scan: it has kmemleak and what /init needs, and
    /init runs on `arch` (None: the host's kind). A kmemleak kernel without either runs with its periodic scans only
    (a warning says so)."""
    values = read_dotconfig(dotconfig.read_text()) if dotconfig.is_file() else {}
    if values.get("CONFIG_DEBUG_KMEMLEAK") != "y":
        return False
    why = unavailable(arch) if arch is not None else ""
    if why:
        note = (
            f"pytest-kunit: the kernel in {dotconfig.parent} has kmemleak, but no final scan at the end of each boot "
            f"on arch {arch.name if arch else ''}: {why}. Leaks are reported only by kmemleak's own periodic scans, "
            "the first one minute after boot."
        )
        warnings.warn(KunitWarning(note), stacklevel=2)
        return False
    missing = [line.split("=")[0] for line in KCONFIG if values.get(line.split("=")[0]) != "y"]
    if missing:
        note = (
            f"pytest-kunit: the kernel in {dotconfig.parent} has kmemleak but not {', '.join(missing)}, which its "
            "final scan at the end of each boot needs (an initramfs runs it): leaks are reported only by kmemleak's "
            "own periodic scans, the first one minute after boot. Use --kunit-sanitize kmemleak, or add "
            + " ".join(KCONFIG)
            + " to the fragment."
        )
        warnings.warn(KunitWarning(note), stacklevel=2)
        return False
    return True


def _cpio_entry(name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0), ino: int = 0) -> bytes:
    """One entry of a newc cpio archive (the initramfs format), padded to four bytes."""
    encoded = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(encoded), 0)
    header = b"070701" + b"".join(f"{field:08x}".encode() for field in fields)
    entry = header + encoded
    entry += b"\0" * (-len(entry) % 4)
    return entry + data + b"\0" * (-len(data) % 4)


def initramfs(cache_dir: Path, why: str, modules: Sequence[tuple[str, bytes]] = ()) -> Path:
    """The initramfs (built once into the cache for each set of modules): busybox, /init, /dev/console for init's
    output and /dev/null, and the modules (name, contents) in MODULE_DIR. `why` names the option that needs it, for
    the error if busybox is missing."""
    if not BUSYBOX.is_file():
        raise KunitError(
            f"{why} needs a static busybox at {BUSYBOX}, for the guest's /init that runs after KUnit.",
            "install it: apt-get install busybox-static (scripts/setup.sh does this).",
        )
    busybox = BUSYBOX.read_bytes()
    archive = b"".join(
        [
            _cpio_entry("bin", 0o40755, ino=1),
            _cpio_entry("bin/busybox", 0o100755, busybox, ino=2),
            _cpio_entry("init", 0o100755, INIT.encode(), ino=3),
            _cpio_entry("dev", 0o40755, ino=4),
            _cpio_entry("dev/console", 0o20600, rdev=(5, 1), ino=5),
            _cpio_entry("dev/null", 0o20666, rdev=(1, 3), ino=9),  # the shell's stdin for a job run in the background
            *(_cpio_entry(name, 0o40755, ino=6 + index) for index, name in enumerate(("proc", "sys", "out"))),
            *_module_entries(modules),
            _cpio_entry("TRAILER!!!", 0),
        ]
    )
    return saved_initramfs(cache_dir, archive, binascii.crc32(archive))


def _module_entries(modules: Sequence[tuple[str, bytes]]) -> list[bytes]:
    if not modules:
        return []
    directories = [_cpio_entry("lib", 0o40755, ino=10), _cpio_entry(MODULE_DIR, 0o40755, ino=11)]
    files = [
        _cpio_entry(f"{MODULE_DIR}/{name}.ko", 0o100644, data, ino=12 + index)
        for index, (name, data) in enumerate(modules)
    ]
    return directories + files
