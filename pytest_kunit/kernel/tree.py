"""The kernel source to build: the packaged tarball (extracted once into the cache) or a directory, plus patches."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import TreeError
from ..host.cachelayout import SOURCES, CacheLayout
from ..host.locking import cache_lock
from ..host.processes import ToolTimeout, run_bounded
from ..versions import PACKAGED_SOURCE, TreeFeatures, detect_features

READY_MARK = ".pytest-kunit-ready"
# What git, tar, rsync and find (changed_since.py) get on a kernel tree before they are deemed stuck (on a full or
# hung disk, a tarball that never ends): far above what they take (seconds to a few minutes).
TOOL_TIMEOUT = 3600


@dataclass(frozen=True)
class PreparedTree:
    path: Path
    key: str
    extracted: bool  # an extracted tarball, whose builds recorded no start time before edits there were built
    features: TreeFeatures


# What `git apply` takes: a git diff, or a plain unified diff (`diff -u`, quilt), whose file header is a `---` line
# followed by a `+++` line.
_DIFF = re.compile(r"^(?:diff --git |--- \S.*\n\+\+\+ \S)", re.MULTILINE)
PATCH_SUFFIXES = (".patch", ".diff")


@dataclass(frozen=True)
class Series:
    """The patch files of some directories, in the order they are applied."""

    patches: tuple[Path, ...]
    without_diff: tuple[Path, ...]  # files named like patches that change nothing (cover letters): left out


def patch_series(patch_dirs: tuple[Path, ...]) -> Series:
    """Each directory's *.patch and *.diff files sorted by name, directories in the order given."""
    patches: list[Path] = []
    without_diff: list[Path] = []
    for directory in patch_dirs:
        for path in sorted(entry for entry in directory.iterdir() if entry.suffix in PATCH_SUFFIXES):
            if path.is_file():
                has_diff = _DIFF.search(path.read_text(errors="replace")) is not None
                (patches if has_diff else without_diff).append(path.resolve())  # `git apply` runs in the tree
    return Series(tuple(patches), tuple(without_diff))


def patch_files(patch_dirs: tuple[Path, ...]) -> list[Path]:
    """The series to apply, in order, cover letters left out."""
    return list(patch_series(patch_dirs).patches)


def patchset_hash(patches: Iterable[Path]) -> str:
    """KCIDB's patchset hash: sha256 over each patch's newline-terminated sha256, in order; empty without patches."""
    lines = "".join(hashlib.sha256(patch.read_bytes()).hexdigest() + "\n" for patch in patches)
    return hashlib.sha256(lines.encode()).hexdigest() if lines else ""


def patch_changes(text: bytes) -> bytes:
    """What a patch does to a tree: its diff, from the first file header on. The commit message, the notes below
    `---` and the diffstat change no file, so editing them rebuilds nothing."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        is_unified_header = line.startswith(b"--- ") and index + 1 < len(lines) and lines[index + 1].startswith(b"+++ ")
        if line.startswith(b"diff ") or is_unified_header:
            return b"".join(lines[index:])
    return text


def _tree_key_digest(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def apply_patches(tree: Path, patches: list[Path]) -> None:
    # Keep git from discovering a repository above the tree (the cache may live inside one).
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=str(tree.parent))
    for patch in patches:
        command = ["git", "apply", "--whitespace=nowarn", str(patch)]
        result = run_bounded(command, TOOL_TIMEOUT, f"Applying {patch}", cwd=tree, env=env, text=True)
        if result.returncode != 0:
            raise TreeError(
                f"Patch {patch.name} (from {patch.parent}) does not apply to the kernel tree.",
                "rebase that patch onto this kernel version, or choose the patches with --kunit-patches "
                "(--kunit-patches none applies nothing).",
                detail=result.stderr.strip(),
            )


def touched_paths(patches: list[Path]) -> tuple[str, ...]:
    """The tree's paths the patches create, change, rename or delete (as `git apply` reads them: -p1)."""
    touched: dict[str, None] = {}
    for patch in patches:
        command = ["git", "apply", "--numstat", "-z", str(patch)]
        result = run_bounded(command, TOOL_TIMEOUT, f"Reading the patch {patch}")
        if result.returncode != 0:
            raise TreeError(
                f"Patch {patch.name} (from {patch.parent}) cannot be read as a patch.",
                "check the file is a patch (git format-patch, or diff -u), or leave it out of --kunit-patches.",
                detail=result.stderr.decode(errors="replace").strip(),
            )
        # Each entry is `ADDED\tDELETED\tPATH\0`, a rename `ADDED\tDELETED\t\0OLD\0NEW\0`.
        fields = result.stdout.decode(errors="surrogateescape").split("\0")
        touched.update((field.rsplit("\t", 1)[-1], None) for field in fields if field.rsplit("\t", 1)[-1])
    return tuple(touched)


def _copy_patched(source: Path, destination: Path, patches: list[Path]) -> None:
    """`destination` made a copy of `source` with the patches applied, where a process may be compiling it: no file
    is ever there unpatched, each is replaced whole, and what is already in place is left alone (its mtime too, so
    nothing rebuilds when nothing changed). The patched files are made apart and moved in; everything else is
    mirrored with them left out."""
    touched = touched_paths(patches)
    staging = destination.with_name(destination.name + ".patching")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for relative in touched:
            original = source / relative
            if original.is_file() or original.is_symlink():
                (staging / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(original, staging / relative, follow_symlinks=False)
        apply_patches(staging, patches)
        mirror(source, destination, "/.git", *(f"/{relative}" for relative in touched))
        for relative in touched:
            _put(staging / relative, destination / relative)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _put(new: Path, target: Path) -> None:
    """`target` made what `new` is (gone if `new` is), replaced by a rename; untouched when it already is."""
    if not new.exists() and not new.is_symlink():
        target.unlink(missing_ok=True)
        return
    if (
        target.is_file()
        and not target.is_symlink()
        and target.stat().st_mode == new.stat().st_mode
        and target.read_bytes() == new.read_bytes()
    ):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{target.name}.pytest-kunit")
    scratch.unlink(missing_ok=True)
    shutil.copy2(new, scratch, follow_symlinks=False)
    os.replace(scratch, target)


def _extract(tarball: Path, destination: Path) -> None:
    scratch = destination.with_name(destination.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    # Debian's tarball is xz in many blocks: decompressing them on every core roughly halves the extraction.
    decompress = ["-I", "xz -T0"] if tarball.name.endswith(".xz") and shutil.which("xz") else []
    command = ["tar", *decompress, "-xf", str(tarball), "-C", str(scratch)]
    try:
        result = run_bounded(command, TOOL_TIMEOUT, f"Extracting {tarball}", text=True)
    except ToolTimeout:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise TreeError(
            f"Could not extract {tarball}.",
            "check the file is a complete kernel tarball.",
            detail=result.stderr.strip(),
        )
    tops = [path for path in scratch.iterdir() if path.is_dir()]
    if len(tops) != 1 or not (tops[0] / "Makefile").is_file():
        shutil.rmtree(scratch, ignore_errors=True)
        raise TreeError(
            f"{tarball} does not hold a single kernel source directory.",
            "point --kunit-kernel-src at a kernel source tarball or directory.",
        )
    tops[0].rename(destination)
    shutil.rmtree(scratch, ignore_errors=True)


def mirror(source: Path, destination: Path, *excludes: str) -> None:
    """Make `destination` a copy of `source`; rsync keeps unchanged files' mtimes, so builds stay incremental."""
    destination.mkdir(parents=True, exist_ok=True)
    command = ["rsync", "-a", "--delete", *(f"--exclude={pattern}" for pattern in excludes)]
    result = run_bounded([*command, f"{source}/", f"{destination}/"], TOOL_TIMEOUT, f"Copying {source}", text=True)
    if result.returncode != 0:
        raise TreeError(
            f"Could not copy {source} to {destination}.",
            "check that rsync is installed (apt-get install rsync) and the disk has room.",
            detail=result.stderr.strip(),
        )


def is_kernel_tree(directory: Path) -> bool:
    return (
        (directory / "Makefile").is_file()
        and (directory / "Kconfig").is_file()
        and (directory / "scripts/kconfig").is_dir()
    )


def enclosing_tree(fragment: Path) -> Path | None:
    """The kernel source tree a fragment lies in (`fs/ext4/.kunitconfig` in a checkout), if any."""
    for directory in fragment.resolve().parents:
        if is_kernel_tree(directory):
            return directory
    return None


def _missing_source(path: Path) -> TreeError:
    return TreeError(
        f"The kernel source {path} does not exist.",
        f"install Debian's kernel source (apt-get install {PACKAGED_SOURCE}) or point --kunit-kernel-src "
        "(ini: kunit_kernel_src) at a kernel tarball or source directory.",
    )


def prepare(
    source: Path,
    patch_dirs: tuple[Path, ...],
    cache_dir: Path,
    writable: bool = False,
    note: Callable[[str], None] | None = None,
) -> PreparedTree:
    """Make the tree to build exist: extracted and patched once per (source, series); never touch `source`.

    A directory source is built in place unless it needs patches or `writable` (out-of-tree suites are placed
    into it): then it is copied into the cache first. `note` hears of each such step, and of a long wait for another
    process doing it.
    """
    if not source.exists():
        raise _missing_source(source)
    patches = patch_files(patch_dirs)
    layout = CacheLayout(cache_dir)
    series = [_tree_key_digest(patch_changes(patch.read_bytes())) for patch in patches]

    if source.is_dir():
        if not (source / "Makefile").is_file() or not (source / "Kconfig").is_file():
            raise TreeError(
                f"{source} is not a kernel source directory (no Makefile and Kconfig at its top).",
                "point --kunit-kernel-src at the top of a kernel tree.",
            )
        if not patches and not writable:
            # Built in place: by its real path, as make compiles it (a tree reached through a link).
            real = source.resolve()
            return PreparedTree(real, _tree_key_digest("dir", str(source)), False, detect_features(real))
        key = _tree_key_digest("dir-copy", str(source), *series)
        destination = layout.source_tree(key)
        with cache_lock(cache_dir, layout.lock_name(SOURCES, key), f"copying {source} and applying its patches", note):
            if note is not None:
                note(f"copying {source} to {destination} and applying {len(patches)} patches")
            _copy_patched(source, destination, patches)
            layout.mark_used(destination)
        return PreparedTree(destination, key, False, detect_features(destination))

    stat = source.stat()
    key = _tree_key_digest("tarball", str(source.resolve()), str(stat.st_size), str(stat.st_mtime_ns), *series)
    destination = layout.source_tree(key)
    with cache_lock(cache_dir, layout.lock_name(SOURCES, key), f"extracting {source} and applying its patches", note):
        if not (destination / READY_MARK).exists():
            shutil.rmtree(destination, ignore_errors=True)
            destination.parent.mkdir(parents=True, exist_ok=True)
            if not tarfile.is_tarfile(source):
                raise TreeError(
                    f"{source} is not a tarball.", "point --kunit-kernel-src at a kernel tarball or directory."
                )
            if note is not None:
                note(f"extracting {source} into {destination} and applying {len(patches)} patches")
            _extract(source, destination)
            try:
                apply_patches(destination, patches)
            except TreeError:
                shutil.rmtree(destination, ignore_errors=True)
                raise
            (destination / READY_MARK).write_text("\n".join(patch.name for patch in patches) + "\n")
        layout.mark_used(destination)
    return PreparedTree(destination, key, True, detect_features(destination))
