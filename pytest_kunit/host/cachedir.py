"""The cache directory is trusted (its trees are built, its images booted, its locks and notes written through), so
it must be the user's own: made private when new, refused when someone else could plant files in it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import KunitError


class UntrustedCache(KunitError):
    """The cache directory is someone else's, or others can write into it."""


def trusted_cache_dir(path: Path) -> Path:
    """`path`, made (mode 0700) if missing, once checked to be a directory owned by this user that neither its group
    nor others can write: a shared or planted cache could make this run build, boot or overwrite what it names.
    Returned by its real path, the directory checked: make compiles the trees under it by their real paths, and what
    reads its build's output (crash decoding, coverage) must name them so (a ~/.cache linked to another disk)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    return path.resolve()
