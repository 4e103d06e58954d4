"""Getting GCOV counters out of a guest: the kernel options, and reading back the counters the initramfs's /init
(initramfs.py) printed on the console once KUnit had run: a base64 tar of the .gcda files between two marker lines.

No networking and no second device: the console carries them.
"""

from __future__ import annotations

import base64
import gzip
import io
import os
import re
import shutil
import tarfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import initramfs

# Every object: Kbuild keeps it off where it cannot work (early boot, vDSO); the report keeps the tested files.
KCONFIG = ("CONFIG_GCOV_KERNEL=y", "CONFIG_GCOV_PROFILE_ALL=y", *initramfs.KCONFIG)


def tested_dirs(files: Iterable[str]) -> tuple[str, ...]:
    """The directories (relative to the tree) holding the given source files of the suites."""
    return tuple(sorted({str(Path(name).parent) for name in files if name and not Path(name).is_absolute()}))


_BASE64 = re.compile(r"^[A-Za-z0-9+/=]+$")


def counters(console: Sequence[str]) -> bytes | None:
    """The gzipped tar /init printed between the markers; None if the guest never got there (a crash, a panic)."""
    lines = [line.strip() for line in console]
    begin, end_marker = initramfs.GCOV_BEGIN, initramfs.GCOV_END
    if begin not in lines or end_marker not in lines[lines.index(begin) :]:
        return None
    start = lines.index(begin) + 1
    end = lines.index(end_marker, start)
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
