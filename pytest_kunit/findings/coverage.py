"""Getting GCOV counters out of a guest: the kernel options, and reading back the counters the initramfs's /init
(guest_init.py) printed on the console once KUnit had run: a base64 tar of the .gcda files between two marker lines.

No networking and no second device: the console carries them.
"""

from __future__ import annotations

import base64
import io
import os
import re
import shutil
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import archive, guest_init

# Every object: Kbuild keeps it off where it cannot work (early boot, vDSO); the report keeps the tested files.
KCONFIG = ("CONFIG_GCOV_KERNEL=y", "CONFIG_GCOV_PROFILE_ALL=y", *guest_init.KCONFIG)


def tested_dirs(files: Iterable[str]) -> tuple[str, ...]:
    """The directories (relative to the tree) holding the given source files of the suites."""
    return tuple(sorted({str(Path(name).parent) for name in files if name and not Path(name).is_absolute()}))


_BASE64 = re.compile(r"^[A-Za-z0-9+/=]+$")
GZIP_MAGIC = b"\x1f\x8b"
# What a guest's counters may weigh: far above any kernel's .gcda files (a few MB for the tested directories, tens of
# MB for all of a kernel), far below what would fill a disk.
LIMITS = archive.Limits(max_bytes=512 << 20, max_members=200_000)


def counters(console: Sequence[str]) -> bytes | None:
    """The tar /init printed (gzipped, base64) between the markers, unzipped; None if the guest never got there (a
    crash, a panic) or printed no gzip there. One that unzips past LIMITS raises UnsafeArchive."""
    lines = [line.strip() for line in console]
    begin, end_marker = guest_init.GCOV_BEGIN, guest_init.GCOV_END
    if begin not in lines or end_marker not in lines[lines.index(begin) :]:
        return None
    start = lines.index(begin) + 1
    end = lines.index(end_marker, start)
    text = "".join(line for line in lines[start:end] if _BASE64.match(line))
    try:
        packed = base64.b64decode(text)
    except ValueError:
        return None
    if not text or packed[:2] != GZIP_MAGIC:
        return None
    tar = archive.gunzip(packed, LIMITS, "The guest's GCOV counters")
    return tar if tarfile.is_tarfile(io.BytesIO(tar)) else None


def unpack(tar: bytes, build_dir: Path, destination: Path) -> archive.Extracted:
    """The .gcda files (named by the build's absolute path inside debugfs) placed under `destination` as the build
    directory lays out its objects, each beside a link to its .gcno. A member named otherwise (outside the build
    directory, a link, not a .gcda) is refused and named in the result; a guest cannot write outside `destination`."""
    prefix = build_dir.resolve().as_posix().lstrip("/") + "/"

    def place(name: str) -> str | None:
        name = name.removeprefix("./")
        return name[len(prefix) :] if name.startswith(prefix) else None

    extracted = archive.extract(tar, destination, place, ".gcda", LIMITS)
    linked = []
    for target in extracted.files:
        relative = target.relative_to(destination.resolve())
        gcno = build_dir / relative.with_suffix(".gcno")
        try:
            if gcno.exists():
                os.symlink(gcno, target.with_suffix(".gcno"))
        except OSError as error:  # the guest sent something else by that name (a directory of counters): gcov
            target.unlink()  # would fail on these counters, and gcovr with it on the whole report
            extracted.refused.append(f"{relative}: its notes' link not made ({error.strerror or error})")
            continue
        linked.append(target)
    extracted.files = linked
    return extracted


def remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
