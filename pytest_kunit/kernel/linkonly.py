"""The edit-build-test loop's shortest build: when all that changed in the tree since the last build are C or
assembler sources of objects linked straight into vmlinux, compile those objects alone and link vmlinux again,
without Kbuild's walk of the whole tree (seconds of CPU on 6.1 and 6.12 even when nothing changed).

What makes it sound: with no Makefile, Kconfig file, header, configuration or environment Kbuild reads changed, the
walk would compile exactly the objects whose sources changed, and those a `.cmd` file of Kbuild's lists as reading
them; both are checked here.
On 6.1 and later every archive vmlinux is linked from is thin (it names its members' files), so a recompiled object
needs no archive written again, only the link. Whatever cannot be vouched for falls back to the full make, as does
a compile that wrote anything besides the objects asked for (a `prepare` step that found something to do)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError
from ..kbuild.modulefiles import module_paths
from ..kbuild.records import cmd_path, readers_of, thin_members
from ..versions import rewritten_by_make
from .changed_since import changed_since
from .makerun import Make, ProgressCallback
from .wrapper import STATS_LOG

SOURCE_SUFFIXES = (".c", ".S")
# Environment variables Kbuild reads (compilers, flags, the build's identity and release string, PATH to find tools).
_KBUILD_READS = re.compile(
    r"(KBUILD_\w+|KCONFIG_\w+|K\w*FLAGS|LOCALVERSION|LLVM\w*|CROSS_COMPILE|ARCH|SUBARCH|PATH|SOURCE_DATE_EPOCH"
    r"|(HOST)?(CC|CXX|LD|AR|NM|OBJCOPY|OBJDUMP|READELF|STRIP|CFLAGS|CXXFLAGS|LDFLAGS)|PAHOLE|RUST\w*|BINDGEN|PYTHON3?|PERL)$"
)
# Editors' swap, backup, lock and test files, which no build reads.
_EDITOR_FILE = re.compile(r"^\..*\.sw[a-p]$|~$|^#.*#$|^\.#|^4913$")


@dataclass(frozen=True)
class Plan:
    objects: tuple[str, ...]  # relative to the build directory; none: the full make
    reason: str = ""  # why the full make, said on the progress line and in the log


def snapshot(tree: Path, build_dir: Path, environ: Mapping[str, str]) -> dict[str, object]:
    """What a build records at its start for the next one's plan: the environment Kbuild reads, and the entries of
    the source directories of vmlinux's objects (an editor that saves by renaming changes its directory)."""
    read = sorted((name, value) for name, value in environ.items() if _KBUILD_READS.match(name))
    environment = hashlib.sha256(json.dumps(read).encode()).hexdigest()[:16]
    return {"environment": environment, "listing": listing(tree, build_dir) or {}}


def plan(
    tree: Path, build_dir: Path, edits: Sequence[str] | None, before: Mapping[str, object], now: Mapping[str, object]
) -> Plan:
    """Whether the edits since the last build (absolute paths; None: unknown) can be built link-only, and how.
    `before`: the snapshot that build took at its start; `now`: this build's (empty: no link-only build here)."""
    if not now:
        return Plan((), "no link-only build for this architecture")
    why = incomparable(edits, before, now)
    if why or edits is None:
        return Plan((), why)
    try:
        linked = {os.path.normpath(member) for member in thin_members(build_dir / "vmlinux.a")}
        archived = _library_members(build_dir)
    except (OSError, ValueError):  # records.NotARecord: an archive that is not thin
        return Plan((), "no thin vmlinux.a to link from (kernels before 6.1)")
    return edited_objects(tree, build_dir, edits, before, linked - archived, "straight into vmlinux")


def incomparable(edits: Sequence[str] | None, before: Mapping[str, object], now: Mapping[str, object]) -> str:
    """Why the edits since the last build cannot be weighed one by one; "" if they can."""
    if not edits:
        return "what changed since the last build is not known"
    if not isinstance(before.get("listing"), dict):
        return "the last build recorded nothing to compare with (an older pytest-kunit built it)"
    if before.get("environment") != now["environment"]:
        # Flags, compilers, the build's identity: the walk would compile everything anew (or the version strings).
        return "the environment Kbuild reads changed (KCFLAGS, KBUILD_BUILD_*, PATH, ...)"
    return ""


def edited_objects(
    tree: Path, build_dir: Path, edits: Sequence[str], before: Mapping[str, object], compiled: Set[str], into: str
) -> Plan:
    """The objects (relative to the build directory) of the edits since the last build (`incomparable` found none
    to stop at), when each edit is a C or assembler source of one of the `compiled` objects, read for that object
    alone, and no directory's entries changed; else why not. The rule of the link-only and module-only builds."""
    listed = before["listing"]
    assert isinstance(listed, dict)
    edits = [edit for edit in edits if not is_editor_file(edit)]
    sources: dict[str, str] = {}
    for edit in edits:
        source = os.path.relpath(edit, tree)
        if os.path.isdir(edit) and not os.path.islink(edit):
            why = relisted(tree, source, listed, edits)
        else:
            sources[edit] = os.path.splitext(source)[0] + ".o"
            why = _uncompilable(build_dir, edit, source, compiled, into)
        if why:
            return Plan((), why)
    readers = readers_of(build_dir, list(sources))
    for edit, obj in sources.items():
        others = sorted(readers.get(edit, set()) - {cmd_path(obj)})
        if others:
            return Plan((), f"{os.path.relpath(edit, tree)} is also read for {others[0]}")
    return Plan(tuple(sorted(sources.values())))


def _uncompilable(build_dir: Path, edit: str, source: str, compiled: Set[str], into: str) -> str:
    """Why this edited file cannot be compiled alone for one of the `compiled` objects; "" if it can."""
    try:
        mode = os.lstat(edit).st_mode
    except OSError:
        return f"{source} was removed"
    if not stat.S_ISREG(mode) or not source.endswith(SOURCE_SUFFIXES):
        return f"{source} is not a C or assembler source"
    obj = os.path.splitext(source)[0] + ".o"
    if obj not in compiled:
        return f"{source} is not compiled {into}"
    if not (build_dir / obj).is_file() or not (build_dir / cmd_path(obj)).is_file():
        return f"{obj} or Kbuild's record of its command is missing"
    return ""


def listing(tree: Path, build_dir: Path) -> dict[str, list[str]] | None:
    """The entries of each source directory of vmlinux.a's objects (editors' files left out); None without one. Taken
    before the walk of the tree: whatever changes after it moves its directory's time past the build's start."""
    try:
        members = thin_members(build_dir / "vmlinux.a")
    except (OSError, ValueError):  # records.NotARecord: an archive that is not thin
        return None
    directories = {os.path.dirname(os.path.normpath(member)) for member in members}
    directories |= {os.path.dirname(module) for module in module_paths(build_dir)}  # --kunit-modules' modules
    entries: dict[str, list[str]] = {}
    for directory in directories:
        try:
            names = os.listdir(tree / directory)
        except OSError:
            continue
        entries[directory] = sorted(name for name in names if not _EDITOR_FILE.search(name))
    return entries


def is_editor_file(path: str) -> bool:
    return _EDITOR_FILE.search(os.path.basename(path)) is not None


def relisted(tree: Path, directory: str, listed: Mapping[str, Sequence[str]], edits: Sequence[str]) -> str:
    """Why a changed directory stops the link-only build; "" if it holds the same entries as when the last build
    started (an editor saved by renaming), any new one an edit checked on its own."""
    before = listed.get(directory)
    if before is None:
        return f"files were added, removed or renamed in {directory}/"
    now = {name for name in os.listdir(tree / directory) if not _EDITOR_FILE.search(name)}
    removed = sorted(set(before) - now)
    if removed:
        return f"{os.path.join(directory, removed[0])} was removed or renamed"
    edited = {os.path.basename(edit) for edit in edits if os.path.dirname(os.path.relpath(edit, tree)) == directory}
    added = sorted(now - set(before) - edited)  # moved in with an older time: no edit of its own says what it is
    return f"{os.path.join(directory, added[0])} was added" if added else ""


def _library_members(build_dir: Path) -> set[str]:
    """Objects of the lib.a archives, linked only for the symbols they define (their index would need writing)."""
    members: set[str] = set()
    for archive in [build_dir / "lib/lib.a", *build_dir.glob("arch/*/lib/lib.a")]:
        if archive.exists():
            directory = archive.parent.relative_to(build_dir)
            members.update(os.path.normpath(directory / member) for member in thin_members(archive))
    return members


@dataclass(frozen=True)
class Built:
    why: str = ""  # why the full make must follow (its walk then rebuilds whatever this left undone); "": done
    linked: bool = True  # False: each object compiled byte for byte as vmlinux was linked from it, so no link


def _object_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _as_linked(build_dir: Path, obj: str, image: Path) -> str | None:
    """The object's digest if the image was linked after it was last written, so from exactly these bytes (a link
    that never followed a compile, say an interrupted run, leaves the object the newer); else None."""
    try:
        if (build_dir / obj).stat().st_mtime_ns >= image.stat().st_mtime_ns:
            return None
    except OSError:
        return None
    return _object_digest(build_dir / obj)


def make_alone(make: Make, targets: Sequence[str], progress: ProgressCallback, ours: Callable[[str], bool]) -> str:
    """`make targets` in the tree's directory (no walk of the whole tree); "" if it wrote nothing but what `ours`
    accepts (paths relative to the build directory) and what any make writes, else why the full make must follow (a
    `prepare` step that found something to do)."""
    marker = make.build_dir / ".pytest-kunit-make-alone"
    marker.write_text("")
    since = marker.stat().st_mtime_ns - 1  # this clock's tick: whatever the make writes is at least as new
    make.run(make.command(f"-j{make.jobs}", *targets), progress)
    # The build directory's Makefile (and what else any make writes), the log, and ccache's record of the compiles.
    rewritten = {*rewritten_by_make(make.tree), marker.name, make.log.name, STATS_LOG}
    written = changed_since(make.build_dir, since)
    if written is None:
        return "what the make wrote could not be read"
    stray = sorted(
        relative
        for path in written
        if not os.path.isdir(path)
        and (relative := os.path.relpath(path, make.build_dir)) not in rewritten
        and not ours(relative)
    )
    return f"make {' '.join(targets)} also wrote {stray[0]}" if stray else ""


def compile_and_link(make: Make, chosen: Plan, progress: ProgressCallback) -> Built:
    """Compile the plan's objects and link vmlinux again, unless every object came out as the image holds it (an edit
    to a comment): linking the same objects again would give the same image. A compile error is the user's and
    raised as BuildError."""
    objects = chosen.objects
    image = make.build_dir / make.arch.make.image
    as_linked = {obj: _as_linked(make.build_dir, obj, image) for obj in objects}
    progress.phase(
        f"building kernel: link-only: make {' '.join(objects)}, then the vmlinux link (no tree walk); log: {make.log}"
    )
    why = make_alone(make, objects, progress, {*objects, *(cmd_path(obj) for obj in objects)}.__contains__)
    if why:
        return Built(why)
    if all(digest is not None and digest == _object_digest(make.build_dir / obj) for obj, digest in as_linked.items()):
        image.touch()  # linked from these bytes: as current as a link now would make it
        with make.log.open("a") as stream:
            stream.write(f"# link-only: compiled {', '.join(objects)}, each as {image.name} holds it: no link\n")
        return Built(linked=False)
    # vmlinux.a names the recompiled files, so it is as it was: vmlinux.o, linked from it, must be made again.
    (make.build_dir / "vmlinux.o").unlink(missing_ok=True)
    started = time.monotonic()
    try:
        # `-o .`: the build directory's descent (the tree walk) counts as done; only the link runs.
        make.run(make.in_build_dir(f"-j{make.jobs}", "-o", ".", make.arch.make.target), progress)
    except BuildError as error:
        return Built(f"the link-only make failed ({error.args[0] if error.args else error})")
    with make.log.open("a") as stream:
        linked = f"linked {make.arch.make.target} in {time.monotonic() - started:.1f} s"
        stream.write(f"# link-only: compiled {', '.join(objects)}, {linked}\n")
    return Built()
