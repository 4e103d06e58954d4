"""Getting GCOV counters out of a guest: the kernel options, a busybox initramfs whose /init copies the counters of the
tested directories onto the console once KUnit has run, and reading them back from a boot's console.

No networking and no second device: KUnit runs before /init (kernel_init_freeable), so with `kunit_shutdown=none`
the kernel goes on to the initramfs, whose /init prints a base64 tar of the .gcda files between two marker lines and
reboots (QEMU's -no-reboot ends the guest). A list boot (`kunit.action=`) reboots at once.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import os
import re
import shutil
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import KunitError

KCONFIG = (
    "CONFIG_DEBUG_FS=y",
    "CONFIG_GCOV_KERNEL=y",
    # Every object: Kbuild keeps it off where it cannot work (early boot, vDSO); the report keeps the tested files.
    "CONFIG_GCOV_PROFILE_ALL=y",
    "CONFIG_BLK_DEV_INITRD=y",
    "CONFIG_BINFMT_ELF=y",
    "CONFIG_BINFMT_SCRIPT=y",
)
BUSYBOX = Path("/bin/busybox")  # Debian's busybox-static
BEGIN, END = "pytest-kunit-gcov-begin", "pytest-kunit-gcov-end"
DIRS_ARG = "pytest_kunit.gcov"  # a dotted unknown parameter: the kernel ignores it, /init reads /proc/cmdline
ALL = "all"

INIT = f"""#!/bin/busybox sh
# pytest-kunit's coverage init: KUnit has run; copy the GCOV counters of the tested directories onto the console.
B=/bin/busybox
$B mount -t proc proc /proc
dirs={ALL}
for word in $($B cat /proc/cmdline); do
    case "$word" in
        kunit.action=*) $B reboot -f ;;
        {DIRS_ARG}=*) dirs="${{word#{DIRS_ARG}=}}" ;;
    esac
done
$B mount -t sysfs sysfs /sys
$B mount -t debugfs debugfs /sys/kernel/debug
$B mkdir -p /out
cd /sys/kernel/debug/gcov
for f in $($B find . -name '*.gcda'); do
    keep=
    [ "$dirs" = {ALL} ] && keep=1
    for d in $(echo "$dirs" | $B tr , ' '); do
        case "$f" in */"$d"/*) keep=1 ;; esac
    done
    [ -n "$keep" ] || continue
    $B mkdir -p "/out/${{f%/*}}"
    # debugfs gives no size: copy by reading, not with tar.
    $B cat "$f" > "/out/$f"
done
echo {BEGIN}
cd /out && $B tar -c . | $B gzip -c | $B base64
echo {END}
$B reboot -f
"""


def _cpio_entry(name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0), ino: int = 0) -> bytes:
    """One entry of a newc cpio archive (the initramfs format), padded to four bytes."""
    encoded = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(encoded), 0)
    header = b"070701" + b"".join(f"{field:08x}".encode() for field in fields)
    entry = header + encoded
    entry += b"\0" * (-len(entry) % 4)
    return entry + data + b"\0" * (-len(data) % 4)


def initramfs(cache_dir: Path) -> Path:
    """The initramfs (built once into the cache): busybox, /init, and /dev/console for init's output."""
    if not BUSYBOX.is_file():
        raise KunitError(
            f"--kunit-coverage needs a static busybox at {BUSYBOX}, for the guest's /init that copies the counters "
            "out.",
            "install it: apt-get install busybox-static (the README's set-up command does this).",
        )
    busybox = BUSYBOX.read_bytes()
    archive = b"".join(
        [
            _cpio_entry("bin", 0o40755, ino=1),
            _cpio_entry("bin/busybox", 0o100755, busybox, ino=2),
            _cpio_entry("init", 0o100755, INIT.encode(), ino=3),
            _cpio_entry("dev", 0o40755, ino=4),
            _cpio_entry("dev/console", 0o20600, rdev=(5, 1), ino=5),
            *(_cpio_entry(name, 0o40755, ino=6 + index) for index, name in enumerate(("proc", "sys", "out"))),
            _cpio_entry("TRAILER!!!", 0),
        ]
    )
    path = cache_dir / "coverage" / f"initramfs-{binascii.crc32(archive):08x}.cpio"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}")
        temporary.write_bytes(archive)
        temporary.replace(path)
    return path


def kernel_args(dirs: Sequence[str]) -> tuple[str, ...]:
    """What a coverage boot adds: go on to /init after KUnit, and which directories' counters it copies."""
    return ("kunit_shutdown=none", f"{DIRS_ARG}={','.join(dirs) if dirs else ALL}")


def tested_dirs(files: Iterable[str]) -> tuple[str, ...]:
    """The directories (relative to the tree) holding the given source files of the suites."""
    return tuple(sorted({str(Path(name).parent) for name in files if name and not Path(name).is_absolute()}))


_BASE64 = re.compile(r"^[A-Za-z0-9+/=]+$")


def counters(console: Sequence[str]) -> bytes | None:
    """The gzipped tar /init printed between the markers; None if the guest never got there (a crash, a panic)."""
    lines = [line.strip() for line in console]
    if BEGIN not in lines or END not in lines[lines.index(BEGIN) :]:
        return None
    start = lines.index(BEGIN) + 1
    end = lines.index(END, start)
    text = "".join(line for line in lines[start:end] if _BASE64.match(line))
    try:
        tar = gzip.decompress(base64.b64decode(text))
    except (ValueError, OSError, EOFError):
        return None
    return tar if text and tarfile.is_tarfile(io.BytesIO(tar)) else None


def unpack(tar: bytes, build_dir: Path, destination: Path) -> int:
    """The .gcda files (named by the build's absolute path inside debugfs) placed under `destination` as the build
    directory lays out its objects, each beside a link to its .gcno; returns how many."""
    count = 0
    prefix = build_dir.resolve().as_posix().lstrip("/") + "/"
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        for member in archive.getmembers():
            name = member.name.removeprefix("./")
            if not member.isfile() or not name.endswith(".gcda") or not name.startswith(prefix):
                continue
            relative = Path(name[len(prefix) :])
            if ".." in relative.parts:
                continue
            source = archive.extractfile(member)
            if source is None:
                continue
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            gcno = (build_dir / relative).with_suffix(".gcno")
            if gcno.exists() and not target.with_suffix(".gcno").exists():
                os.symlink(gcno, target.with_suffix(".gcno"))
            count += 1
    return count


def remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
