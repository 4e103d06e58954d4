"""Unpacking an archive someone else made (the guest's GCOV counters: the kernel under test may be hostile): every
member lands strictly inside the destination as a new regular file, or is refused by name; the whole is bounded."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import KunitError


class UnsafeArchive(KunitError):
    """An archive too large to unpack, or not an archive at all."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int  # decompressed, the tar's headers included
    max_members: int


@dataclass
class Extracted:
    files: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "NAME: why", for whoever reports it


def gunzip(data: bytes, limits: Limits, what: str) -> bytes:
    """`data` decompressed, refused once it passes `limits.max_bytes` (a small stream can inflate a thousandfold)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limits.max_bytes + 1)
    except zlib.error as error:
        raise UnsafeArchive(f"{what} is not a gzip stream: {error}.") from None
    if len(out) > limits.max_bytes or inflater.unconsumed_tail:
        raise UnsafeArchive(
            f"{what} decompresses to more than {limits.max_bytes} bytes: refused unread.",
            "the guest sent more than any counters could weigh; look at its console for what it printed.",
        )
    return out


def _relative_inside(name: str) -> PurePosixPath | None:
    """`name` as a path that stays below whatever directory it is joined to; None if it could leave it."""
    path = PurePosixPath(name)
    parts = [part for part in path.parts if part != "."]
    if path.is_absolute() or not parts or ".." in parts or "\0" in name:
        return None
    return PurePosixPath(*parts)


def _real_directories(root: Path, parts: tuple[str, ...]) -> bool:
    """Make each directory of `parts` below `root`; False if one on the way is not a directory of its own (a link
    planted there, or a file)."""
    path = root
    for part in parts:
        path = path / part
        try:
            os.mkdir(path)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
    return True


def _write_new(root: Path, relative: PurePosixPath, archive: tarfile.TarFile, member: tarfile.TarInfo) -> str | None:
    """Write `member` as a new file at `relative` below `root`; None once written, else why it was not."""
    try:
        if not _real_directories(root, relative.parts[:-1]):
            return "a directory on its way is a link or a file"
        source = archive.extractfile(member)
        assert source is not None  # a regular file's data
        target = root.joinpath(*relative.parts)
        try:
            handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            return "named twice"
        with os.fdopen(handle, "wb") as stream:
            stream.write(source.read())
    except OSError as error:  # a name the file system refuses: too long, a file where a directory must go
        return f"not written ({error.strerror or error})"
    return None


def extract(
    tar: bytes, destination: Path, place: Callable[[str], str | None], suffix: str, limits: Limits
) -> Extracted:
    """The regular files of `tar` whose name `place` maps to a path (relative to `destination`) ending in `suffix`,
    each written as a new file there. Directories are made as needed; any other member (a link, a device, a name
    `place` refuses, one that would leave `destination`, one already written) is refused and named in the result."""
    result = Extracted()
    destination.mkdir(parents=True, exist_ok=True)
    root = destination.resolve()
    try:
        with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as archive:
            _extract_members(archive, root, place, suffix, limits, result)
    except tarfile.TarError as error:
        raise UnsafeArchive(f"The archive is not a whole tar: {error}.") from None
    return result


def _extract_members(
    archive: tarfile.TarFile,
    root: Path,
    place: Callable[[str], str | None],
    suffix: str,
    limits: Limits,
    result: Extracted,
) -> None:
    total = 0
    for count, member in enumerate(archive, 1):
        if count > limits.max_members:
            raise UnsafeArchive(f"The archive holds more than {limits.max_members} members: the rest refused.")
        if member.isdir():
            continue
        name = member.name
        if not member.isreg():
            result.refused.append(f"{name}: not a regular file (a link or a device)")
            continue
        placed = place(name)
        relative = _relative_inside(placed) if placed is not None else None
        if relative is None:
            result.refused.append(f"{name}: outside the directory it must lie in")
            continue
        if relative.suffix != suffix:
            result.refused.append(f"{name}: not a {suffix} file")
            continue
        total += member.size
        if total > limits.max_bytes:
            raise UnsafeArchive(f"The archive's files weigh more than {limits.max_bytes} bytes: the rest refused.")
        refused = _write_new(root, relative, archive, member)
        if refused is not None:
            result.refused.append(f"{name}: {refused}")
            continue
        target = root.joinpath(*relative.parts)
        result.files.append(target)
