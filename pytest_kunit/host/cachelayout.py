"""Where everything lives in the cache directory, named once: every stage asks this module for a path (and for the
name of the lock guarding it) instead of spelling the layout out. The layout is the one runs have always used, so
an existing cache stays valid.

    src/KEY/                an extracted tarball or a patched copy of a tree (tree.py)        lock src-KEY
    build/KEY/              one build directory per (tree, arch, configuration) (build.py)   lock build-KEY
    configs/KEY/            a configuration completed without a build (configuring.py)       lock config-KEY
    images/DIGEST/          an image fetched from an xdist controller (image_service.py)     lock image-DIGEST
    consoles/DIGEST/*.log   each boot's whole console, by image (runner.py)
    coverage/runs/RUN/      each boot's GCOV counters, by run (runner.py)
    lists/DIGEST.json       case lists (cache.py)                                            lock list-DIGEST
    durations/KEY.json      suite durations of one project (cache.py)
    kvm/KEY.json            why KVM failed for one QEMU on one host kernel (cache.py)
    shared/DIGEST.json      a fragment's own suites in a shared kernel (cache.py)
    initramfs/*.cpio        the guest's /init after KUnit (initramfs.py)
    cache-id                the cache's identity (image_service.py)
    locks/NAME.lock         the locks above, with a note of their holder (locking.py)

    used/AREA/KEY           the use stamp of each entry of src, build, configs and images, touched whenever a run
                            uses it: eviction (cacheprune.py) removes what no run has used for a while
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

# Every directory at the cache's top (what the layout above names): each made mode 0700 when the cache is first
# trusted (cachedir.py), so that what make and the runner create inside, with the user's umask, is reachable by no one
# else even in a cache others can read.
TOP_DIRECTORIES = (
    "src",
    "build",
    "configs",
    "images",
    "consoles",
    "coverage",
    "lists",
    "durations",
    "kvm",
    "shared",
    "initramfs",
    "locks",
    "used",
    "replays",
)

# A console's file name: when it was written, the run that wrote it, the process, the boot's number in it.
CONSOLE_NAME = re.compile(r"(?P<stamp>\d{8}-\d{6})-(?:(?P<run>[0-9a-f]+)-)?(?P<pid>\d+)-(?P<boot>\d+)\.log")


@dataclass(frozen=True)
class Area:
    """A directory of big entries, each guarded by a lock of its own while it is made or used, and evicted whole."""

    directory: str
    lock_prefix: str


SOURCES = Area("src", "src")
BUILDS = Area("build", "build")
CONFIGS = Area("configs", "config")
IMAGES = Area("images", "image")
EVICTED_BY_AGE = (SOURCES, BUILDS, CONFIGS, IMAGES)


@dataclass(frozen=True)
class CacheLayout:
    """The cache directory `root`, by area."""

    root: Path

    # --- the big entries, with their locks ---------------------------------------------------------------------

    def area(self, area: Area) -> Path:
        return self.root / area.directory

    def entry(self, area: Area, key: str) -> Path:
        return self.area(area) / key

    @staticmethod
    def lock_name(area: Area, key: str) -> str:
        return f"{area.lock_prefix}-{key}"

    def source_tree(self, key: str) -> Path:
        return self.entry(SOURCES, key)

    def build_dir(self, key: str) -> Path:
        return self.entry(BUILDS, key)

    def builds(self) -> Path:
        return self.area(BUILDS)

    def config_dir(self, key: str) -> Path:
        return self.entry(CONFIGS, key)

    def fetched_image_dir(self, digest: str) -> Path:
        return self.entry(IMAGES, digest)

    def used_stamp(self, entry: Path) -> Path:
        """`entry`'s use stamp, kept apart (under used/) so that the areas hold only their entries."""
        return self.root / "used" / entry.relative_to(self.root)

    def mark_used(self, entry: Path) -> None:
        """Record that a run uses `entry` now (its stamp's mtime), so eviction leaves it alone for a while."""
        stamp = self.used_stamp(entry)
        stamp.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp.touch()

    # --- what runs leave behind ----------------------------------------------------------------------------------

    def consoles(self) -> Path:
        return self.root / "consoles"

    def console_dir(self, image_digest: str) -> Path:
        return self.consoles() / image_digest

    @staticmethod
    def console_name(stamp: str, run: str, pid: int, boot: int) -> str:
        return "-".join([stamp, *([run[:12]] if run else []), str(pid), str(boot)]) + ".log"

    def replays(self) -> Path:
        return self.root / "replays"

    def replay(self, data_digest: str) -> Path:
        """Where a console --kunit-replay read from standard input is kept (its cases' node ids name `stdin`)."""
        return self.replays() / f"stdin-{data_digest}.log"

    def coverage_runs(self) -> Path:
        return self.root / "coverage" / "runs"

    def coverage_run(self, run: str) -> Path:
        return self.coverage_runs() / run

    @staticmethod
    def coverage_boot(run_directory: Path, name: str) -> Path | None:
        """The directory of one boot's counters, by the name an xdist worker gave it, inside `run_directory`; None
        for a name that is a path (absolute, `..`, with a slash), a link, or nothing there (a worker on another host
        keeps its boots in its own cache)."""
        if name in ("", ".", "..") or "/" in name or "\0" in name:
            return None
        boot = run_directory / name
        try:
            return boot if stat.S_ISDIR(os.lstat(boot).st_mode) else None
        except OSError:
            return None

    # --- small files -----------------------------------------------------------------------------------------------

    def case_list(self, digest: str) -> Path:
        return self.root / "lists" / f"{digest}.json"

    def durations(self, rootpath: Path) -> Path:
        key = hashlib.sha256(str(rootpath).encode()).hexdigest()[:16]
        return self.root / "durations" / f"{key}.json"

    def kvm_verdict(self, key: str) -> Path:
        return self.root / "kvm" / f"{key}.json"

    def shared_suites(self, digest: str) -> Path:
        return self.root / "shared" / f"{digest}.json"

    def initramfs(self, crc: int) -> Path:
        return self.root / "initramfs" / f"initramfs-{crc:08x}.cpio"

    def kept_guests(self) -> Path:
        """The guests kept up between runs (guest/kept.py): each one's socket, state and keeper's log."""
        return self.root / "guests"

    def cache_id(self) -> Path:
        return self.root / "cache-id"

    def locks(self) -> Path:
        return self.root / "locks"
