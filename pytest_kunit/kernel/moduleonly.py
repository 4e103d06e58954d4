"""--kunit-modules' shortest build: when all that changed in the tree since the last build are C or assembler sources
of objects linked into the suites' modules, make those modules alone (`make dir/name.ko`: their objects, modpost for
them, the link of each .ko) and boot the unchanged image: no tree walk, no vmlinux link.

What makes it sound is what makes linkonly.py's build sound (no Makefile, Kconfig file, header, configuration or
environment Kbuild reads changed; each edited source read for its own object alone); and vmlinux holds none of these
objects, so it is as a full make would leave it. Kbuild's single-module make writes a modules.order naming only its
modules and then removes it; the real one (and Module.symvers with its .cmd, which modpost writes again) is put back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..kbuild.modulefiles import ORDER, module_paths
from ..kbuild.records import cmd_path, readers_of
from ..versions import rewritten_by_make
from . import linkonly
from .makerun import Make, ProgressCallback
from .tree import changed_since

# What the single-module make rewrites or removes, put back as they were: modpost writes Module.symvers and its
# command record (.Module.symvers.cmd, on 6.1) again for these modules alone.
KEPT = (ORDER, "Module.symvers", ".Module.symvers.cmd")


@dataclass(frozen=True)
class Plan:
    modules: tuple[str, ...]  # the .ko files to make, relative to the build directory; none: not module-only
    reason: str = ""


def module_objects(build_dir: Path) -> dict[str, str]:
    """Each object linked into a built module -> that module's .ko (from Kbuild's `.mod` files)."""
    objects: dict[str, str] = {}
    for module in module_paths(build_dir):
        try:
            members = (build_dir / (module.removesuffix(".ko") + ".mod")).read_text().split()
        except OSError:
            continue
        for member in members:
            objects[os.path.normpath(member)] = module
    return objects


def plan(
    tree: Path, build_dir: Path, edits: Sequence[str] | None, before: Mapping[str, object], now: Mapping[str, object]
) -> Plan:
    """Whether the edits since the last build (absolute paths) are all sources of modules' objects, and which."""
    if not now or not edits:
        return Plan((), "what changed since the last build is not known")
    if before.get("environment") != now["environment"]:
        return Plan((), "the environment Kbuild reads changed")
    listed = before.get("listing")
    if not isinstance(listed, dict):
        return Plan((), "the last build recorded nothing to compare with")
    objects = module_objects(build_dir)
    edits = [edit for edit in edits if not linkonly.is_editor_file(edit)]
    modules: set[str] = set()
    sources: list[tuple[str, str]] = []
    for edit in edits:
        source = os.path.relpath(edit, tree)
        if os.path.isdir(edit) and not os.path.islink(edit):
            why = linkonly.relisted(tree, source, listed, edits)
            if why:
                return Plan((), why)
            continue
        obj = os.path.splitext(source)[0] + ".o"
        if not os.path.isfile(edit) or not source.endswith(linkonly.SOURCE_SUFFIXES):
            return Plan((), f"{source} is not a C or assembler source")
        if obj not in objects:
            return Plan((), f"{source} is not compiled into a module")
        if not (build_dir / obj).is_file() or not (build_dir / cmd_path(obj)).is_file():
            return Plan((), f"{obj} or Kbuild's record of its command is missing")
        modules.add(objects[obj])
        sources.append((edit, obj))
    readers = readers_of(build_dir, [edit for edit, _ in sources])
    for edit, obj in sources:
        others = sorted(readers.get(edit, set()) - {cmd_path(obj)})
        if others:
            return Plan((), f"{os.path.relpath(edit, tree)} is also read for {others[0]}")
    return Plan(tuple(sorted(modules))) if modules else Plan((), "no module's source changed")


def _expected(modules: Sequence[str], written: str, rewritten: tuple[str, ...]) -> bool:
    """Whether the single-module make may write `written` (relative): a file of one of these modules (its objects,
    .mod, .mod.c, .mod.o, .ko and their .cmd records), or what modpost and any make write."""
    directory, name = os.path.split(written)
    for module in modules:
        stem = os.path.basename(module).removesuffix(".ko")
        if directory == os.path.dirname(module) and (name.startswith((f"{stem}.", f".{stem}."))):
            return True
    return written in (*KEPT, "modules-only.symvers", *rewritten)


def build(make: Make, chosen: Plan, progress: ProgressCallback) -> str:
    """Make the plan's modules; "" when done, else why the full make must follow. A compile error is the user's and
    raised as BuildError."""
    build_dir = make.build_dir
    progress.phase(f"building kernel: module-only: make {' '.join(chosen.modules)} (no tree walk, no link)")
    kept = {name: (build_dir / name).read_bytes() for name in KEPT if (build_dir / name).exists()}
    marker = build_dir / ".pytest-kunit-module-only"
    marker.write_text("")
    since = marker.stat().st_mtime_ns - 1
    started = time.monotonic()
    try:
        make.run(make.command(f"-j{make.jobs}", *chosen.modules), progress)
    finally:
        for name, data in kept.items():
            (build_dir / name).write_bytes(data)
    written = changed_since(build_dir, since)
    if written is None:
        return "what the module build wrote could not be read"
    objects = set(module_objects(build_dir))
    allowed = objects | {cmd_path(obj) for obj in objects} | {marker.name, make.log.name}
    rewritten = tuple(rewritten_by_make(make.tree))
    stray = sorted(
        relative
        for path in written
        if not os.path.isdir(path)
        and (relative := os.path.relpath(path, build_dir)) not in allowed
        and not _expected(chosen.modules, relative, rewritten)
    )
    if stray:
        return f"the module build also wrote {stray[0]}"
    with make.log.open("a") as stream:
        stream.write(f"# module-only: made {', '.join(chosen.modules)} in {time.monotonic() - started:.1f} s\n")
    return ""


__all__ = ["Plan", "build", "module_objects", "plan"]
