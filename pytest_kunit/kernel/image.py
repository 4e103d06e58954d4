"""A built kernel image, checked before it is booted: whole as an ELF file where the architecture boots one, and
the same size and contents as its build recorded."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from ..kbuild.records import ELF_MAGIC, NotARecord, elf_extent

SETTLED_NS = 2_000_000_000


@dataclass(frozen=True)
class ImageRecord:
    """What a build recorded of the image it made (kept in the build's stamp)."""

    digest: str
    size: int
    mtime_ns: int | None = None  # when the digest was taken; None from a stamp written before it was recorded

    def lines(self) -> str:
        return f"{self.digest}\n{self.size}\n" + (f"{self.mtime_ns}\n" if self.mtime_ns is not None else "")

    @classmethod
    def parse(cls, fields: list[str]) -> ImageRecord | None:
        """From the stamp's fields after its key and session; None from a stamp that recorded no image."""
        if len(fields) not in (2, 3) or not all(field.isdigit() for field in fields[1:]):
            return None
        return cls(fields[0], int(fields[1]), int(fields[2]) if len(fields) == 3 else None)


@dataclass(frozen=True)
class ImageCheck:
    record: ImageRecord
    problem: str  # empty when the image is whole


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _elf_problem(path: Path, size: int) -> str:
    """Why `path` is not a whole ELF file: its headers, program segments or section table lie past its end."""
    try:
        end = elf_extent(path, size)
    except NotARecord as error:
        return str(error)
    if end > size:
        return f"it is {size} bytes, but its ELF headers describe {end}: truncated"
    return ""


def _starts_with(path: Path, magic: bytes) -> bool:
    with path.open("rb") as stream:
        return stream.read(len(magic)) == magic


def check_image(
    image: Path, elf: bool, recorded: ImageRecord | None, previous: ImageRecord | None = None
) -> ImageCheck:
    """`image` as it is now, and why it cannot be what its build made (if it cannot). `previous` is an earlier record
    of the file, not to be checked against (make may have rebuilt it), whose digest stands if the file is unchanged."""
    status = image.stat()
    size = status.st_size
    problem = ""
    if recorded is not None and size != recorded.size:
        problem = f"it is {size} bytes, its build recorded {recorded.size}"
    elif elf or _starts_with(image, ELF_MAGIC):
        problem = _elf_problem(image, size)
    known = recorded or previous
    if known is not None and (known.size, known.mtime_ns) == (size, status.st_mtime_ns):
        # Not written to since its digest was taken (any write moves the mtime): reading it all again (tens of MB,
        # on every warm run) would tell nothing new.
        digest = known.digest
    else:
        digest = file_digest(image)
    if not problem and recorded is not None and digest != recorded.digest:
        problem = "its contents differ from what its build recorded"
    # A file written within the last moments could be written again within the same timestamp tick: its mtime
    # vouches for its contents only once it is older than that (git's "racily clean" rule).
    settled = time.time_ns() - status.st_mtime_ns > SETTLED_NS
    return ImageCheck(ImageRecord(digest, size, status.st_mtime_ns if settled else None), problem)
