"""A kernel that must be built starts from a copy of the nearest one built before, as a developer's build directory
after a `.config` change, and kunit.py's one `.kunit/` from fragment to fragment: Kbuild then compiles only what the
configurations' differences change. fixdep recorded the CONFIG_ symbols each object's sources test (its .cmd file)
and `syncconfig` touches include/config/ for each symbol whose value changed against the copied auto.conf, so every
object that could differ is compiled again; the rest is the same object either build would make. Off with
--kunit-reuse-kernels=no (every kernel from an empty directory)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ..errors import BuildError, ConfigError
from ..host.cachelayout import BUILDS, CacheLayout
from ..host.locking import cache_lock
from ..kbuild.membership import differing
from .build_records import RECORD, BuildRecord
from .build_request import BuildRequest, build_dir_of
from .configuring import completed_config
from .kconfig import read_dotconfig
from .makerun import ProgressCallback

# The plugin's own files in a build directory (its records, logs, compiler wrapper): never carried over, and the
# configuration, so that the copy is configured anew (syncconfig compares the new values with the copied auto.conf).
OWN_PREFIX = ".pytest-kunit-"
NOT_CARRIED = (".config", "build.log")


def candidates(request: BuildRequest) -> list[tuple[Path, BuildRecord]]:
    """Finished builds of the request's tree, architecture and make options other than its own, the most recently
    built first."""
    own = build_dir_of(request)
    found = []
    for record_file in CacheLayout(request.cache_dir).builds().glob(f"*/{RECORD}"):
        record = BuildRecord.read(record_file)
        directory = record_file.parent
        if record is None or directory == own:
            continue
        theirs = (record.tree, record.arch, record.make_options)
        if theirs != (request.tree.key, request.arch.name, request.make_options):
            continue
        if (directory / request.arch.make.image).exists():
            found.append((record_file.stat().st_mtime_ns, directory, record))
    return [(directory, record) for _, directory, record in sorted(found, key=lambda entry: -entry[0])]


def nearest(found: list[tuple[Path, BuildRecord]], wanted: Mapping[str, str]) -> tuple[Path, int] | None:
    """The build whose configuration sets the fewest symbols otherwise than `wanted`, and how many it sets so (the
    most recent of equals)."""
    best: tuple[Path, int] | None = None
    for directory, _ in found:
        try:
            held = read_dotconfig((directory / ".config").read_text())
        except OSError:
            continue
        distance = len(differing(held, wanted))
        if best is None or distance < best[1]:
            best = (directory, distance)
    return best


def seed(request: BuildRequest, build_dir: Path, progress: ProgressCallback) -> Path | None:
    """Copy the nearest build into `build_dir`, new and empty; the build copied, or None (nothing near, or the
    configuration does not complete: the build then says why)."""
    if not request.seed or any(build_dir.iterdir()):
        return None
    found = candidates(request)
    if not found:
        return None
    try:
        wanted = read_dotconfig(completed_config(request, progress))
    except (BuildError, ConfigError):
        return None
    near = nearest(found, wanted)
    if near is None:
        return None
    source, distance = near
    layout = CacheLayout(request.cache_dir)
    with cache_lock(request.cache_dir, layout.lock_name(BUILDS, source.name), f"copying the build in {source}"):
        copied = subprocess.run(["cp", "-a", "--reflink=auto", f"{source}/.", str(build_dir)], capture_output=True)
    for entry in [*build_dir.glob(f"{OWN_PREFIX}*"), *(build_dir / name for name in NOT_CARRIED)]:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)
    if copied.returncode:  # a partial copy is no seed: start empty
        for entry in list(build_dir.iterdir()):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        progress.phase(f"not seeding {build_dir} from {source}: {copied.stderr.decode(errors='replace').strip()}")
        return None
    symbols = f"{distance} symbol{'' if distance == 1 else 's'}"
    progress.phase(f"seeded {build_dir} from {source} ({symbols} set otherwise): make compiles what they change")
    return source
