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
from ..kbuild.records import cmd_path
from . import linkonly
from .makerun import Make, ProgressCallback

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
    why = linkonly.incomparable(edits, before, now) if now else "what changed since the last build is not known"
    if why or edits is None:
        return Plan((), why)
    objects = module_objects(build_dir)
    edited = linkonly.edited_objects(tree, build_dir, edits, before, objects.keys(), "into a module")
    if edited.reason:
        return Plan((), edited.reason)
    modules = sorted({objects[obj] for obj in edited.objects})
    return Plan(tuple(modules)) if modules else Plan((), "no module's source changed")


def _ours(modules: Sequence[str], written: str) -> bool:
    """Whether the single-module make may write `written` (relative): a file of one of these modules (its objects,
    .mod, .mod.c, .mod.o, .ko and their .cmd records), or what modpost writes."""
    directory, name = os.path.split(written)
    for module in modules:
        stem = os.path.basename(module).removesuffix(".ko")
        if directory == os.path.dirname(module) and (name.startswith((f"{stem}.", f".{stem}."))):
            return True
    return written in (*KEPT, "modules-only.symvers")


def build(make: Make, chosen: Plan, progress: ProgressCallback) -> str:
    """Make the plan's modules; "" when done, else why the full make must follow. A compile error is the user's and
    raised as BuildError."""
    build_dir = make.build_dir
    progress.phase(f"building kernel: module-only: make {' '.join(chosen.modules)} (no tree walk, no link)")
    kept = {name: (build_dir / name).read_bytes() for name in KEPT if (build_dir / name).exists()}
    objects = set(module_objects(build_dir))
    ours = objects | {cmd_path(obj) for obj in objects}
    started = time.monotonic()
    try:
        why = linkonly.make_alone(
            make, chosen.modules, progress, lambda written: written in ours or _ours(chosen.modules, written)
        )
    finally:
        for name, data in kept.items():
            (build_dir / name).write_bytes(data)
    if not why:
        with make.log.open("a") as stream:
            stream.write(f"# module-only: made {', '.join(chosen.modules)} in {time.monotonic() - started:.1f} s\n")
    return why


__all__ = ["Plan", "build", "module_objects", "plan"]
