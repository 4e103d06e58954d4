"""The cache directory is trusted (its trees are built, its images booted, its locks and notes written through), so
it must be the user's own: made private when new, refused when someone else could plant files in it."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from ..errors import KunitError
from .cachelayout import TOP_DIRECTORIES


class UntrustedCache(KunitError):
    """The cache directory is someone else's, or others can write into it."""


def trusted_cache_dir(path: Path) -> Path:
    """`path`, made (mode 0700) if missing, once checked to be a directory owned by this user that neither its group
    nor others can write: a shared or planted cache could make this run build, boot or overwrite what it names.
    Returned by its real path, the directory checked: make compiles the trees under it by their real paths, and what
    reads its build's output (crash decoding, coverage) must name them so (a ~/.cache linked to another disk)."""
    if not path.exists():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)  # whatever the umask took away
    status = path.stat()  # through a link: what counts is the directory written into
    if not stat.S_ISDIR(status.st_mode):
        raise UntrustedCache(f"The pytest-kunit cache {path} is not a directory.", "point --kunit-cache-dir elsewhere.")
    if status.st_uid != os.geteuid():
        raise UntrustedCache(
            f"The pytest-kunit cache {path} belongs to uid {status.st_uid}, not to you (uid {os.geteuid()}): whoever "
            "owns it decides what this run builds and boots.",
            "point --kunit-cache-dir (ini kunit_cache_dir) at a directory of your own, or leave it to its default "
            "($XDG_CACHE_HOME/pytest-kunit).",
        )
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedCache(
            f"The pytest-kunit cache {path} can be written by its group or by anyone "
            f"(mode {stat.filemode(status.st_mode)}): another user could plant files or links in it.",
            f"chmod go-w {path} (if only you ever wrote to it), or point --kunit-cache-dir at a new directory.",
        )
    real = path.resolve()
    for name in TOP_DIRECTORIES:
        _private_directory(real / name)
    return real


def _refused(directory: Path, why: str) -> UntrustedCache:
    return UntrustedCache(
        f"{directory} in the pytest-kunit cache {why}: another user could plant files or links in what this run "
        "builds and boots.",
        f"chmod -R go-w {directory.parent} (if only you ever wrote to the cache), or point --kunit-cache-dir at a new "
        "directory.",
    )


def _private_directory(directory: Path) -> None:
    """`directory`, a top directory of the cache, made mode 0700 (whatever the umask); one that exists must be a
    directory of this user's that neither group nor others can write, and is closed to them (mode 0700): what lies
    inside was made with the umask of whichever run made it."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    status = os.lstat(directory)
    if not stat.S_ISDIR(status.st_mode):
        raise _refused(directory, "is a link or a file, not a directory")
    if status.st_uid != os.geteuid():
        raise _refused(directory, f"belongs to uid {status.st_uid}, not to you (uid {os.geteuid()})")
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _refused(directory, f"can be written by its group or by anyone (mode {stat.filemode(status.st_mode)})")
    if stat.S_IMODE(status.st_mode) != 0o700:
        os.chmod(directory, 0o700)
