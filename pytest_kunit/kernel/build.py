"""Kernel builds: a kunitconfig + the guest's needs, completed as kunit.py does, validated, `make`; skipped when
nothing the build reads (the tree's files, the fragment) changed since."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..arch import Arch
from ..errors import BuildError
from ..host.cachelayout import BUILDS, CacheLayout
from ..host.locking import cache_lock
from ..model import BuildResult
from . import linkonly, moduleonly, seeding
from .build_records import (
    READ,
    SOURCES,
    STAMP,
    previous_build,
    record_build,
    store_scope,
    store_widened_scope,
    stored_scope,
)
from .build_request import BuildRequest, build_dir_of
from .ccache_stats import ccache_counts, hit_note
from .compiler_check import check_compiler
from .configuring import configure_build
from .freshness import LAG_NS, TreeLook, look_at_tree
from .image import ImageCheck, ImageRecord, check_image
from .makerun import Make, ProgressCallback, full_make, without_overridden
from .wrapper import llvm_compilers, wrap_compilers

LOG = "build.log"
BUILD_TOOLS = ("make", "gcc", "flex", "bison", "bc")


def build(request: BuildRequest, progress: ProgressCallback) -> BuildResult:
    """Build once per (tree, config) however many processes ask; skip make entirely when nothing changed since."""
    build_dir = build_dir_of(request)
    layout = CacheLayout(request.cache_dir)
    image = build_dir / request.arch.make.image
    started = time.monotonic()
    lock = layout.lock_name(BUILDS, build_dir.name)
    with cache_lock(request.cache_dir, lock, f"building the kernel in {build_dir}", progress):
        build_dir.mkdir(parents=True, exist_ok=True)
        seeding.seed(request, build_dir, progress)
        layout.mark_used(build_dir)
        before = previous_build(request, build_dir, image)
        # Taken before the walk, so that what the walk misses moves a directory's time past the build's start.
        linkable = request.arch.make.link_only and not before.built_by_this_run
        environ = without_overridden(os.environ)  # as make gets it (makerun.py)
        snapshot = linkonly.snapshot(request.tree.path, build_dir, environ) if linkable else {}
        sources = build_dir / SOURCES
        look = (
            None
            if before.built_by_this_run
            else look_at_tree(
                request.tree,
                build_dir / STAMP,
                sources if before.same_inputs else None,
                snapshot,
                {name for name, _ in request.placed},
                stored_scope(build_dir) if before.same_inputs else None,
            )
        )
        up_to_date = before.built_by_this_run or (look is not None and look.unchanged)
        checked, note = before.checked, ""
        if not up_to_date:
            checked, note = _make_image(request, build_dir, image, look, snapshot, before.record, progress)
        assert checked is not None
        record_build(request, build_dir, before, checked, look, rebuilt=not up_to_date)
        seconds = time.monotonic() - started
        return BuildResult(image, checked.record.digest, build_dir, not up_to_date, seconds, build_dir / LOG, note)


def _make_image(
    request: BuildRequest,
    build_dir: Path,
    image: Path,
    look: TreeLook | None,
    snapshot: Mapping[str, object],
    previous: ImageRecord | None,
    progress: ProgressCallback,
) -> tuple[ImageCheck, str]:
    """Configure and make the image (link-only where that is enough), check it; the image's check and how it was
    built, for the "built" line."""
    _check_tools(request.arch)
    options, modules_too = request.make_options, request.modules
    log = build_dir / LOG
    make = Make(
        request.tree.path, build_dir, request.arch, request.jobs, log, {}, options, modules_too, request.make_timeout
    )
    path, clang = make.environment()["PATH"], llvm_compilers(make.variables())
    wrapping = wrap_compilers(request.wrapper, request.arch.make, build_dir, request.tree.path, path, clang)
    make = replace(make, env=wrapping.env)
    (build_dir / STAMP).unlink(missing_ok=True)
    # Written again once this build has ended, from its records: until then nothing vouches for it.
    scope = stored_scope(build_dir)
    (build_dir / READ).unlink(missing_ok=True)
    started = time.time_ns() - LAG_NS
    log.write_text(f"# pytest-kunit build of {request.tree.path} into {build_dir}\n# compiler: {wrapping.describe}\n")
    configured = configure_build(request, make, progress)
    before = ccache_counts(wrapping)
    edits = look.edits if look is not None else None
    recorded = look.link_only if look else {}
    if configured and request.modules:
        modules_only = moduleonly.plan(request.tree.path, build_dir, edits, recorded, snapshot)
        if modules_only.modules:
            why = moduleonly.build(make, modules_only, progress)
            if not why:
                count = len(modules_only.modules)
                note = f"module-only: {count} module{'s' if count > 1 else ''} made, the image unchanged: no link"
                store_widened_scope(request, build_dir, scope, started)
                return _checked(request, build_dir, image, log, previous), note
            full_make(make, progress, f"not module-only: {why}")
            store_scope(request, build_dir)
            return _checked(request, build_dir, image, log, previous), hit_note(before, ccache_counts(wrapping))
    route = (
        linkonly.plan(request.tree.path, build_dir, edits, recorded, snapshot)
        if configured
        else linkonly.Plan((), "the configuration was completed again")  # what compiles, and how, may differ
    )
    done = linkonly.compile_and_link(make, route, progress) if route.objects else linkonly.Built(route.reason)
    note = ""
    if done.why:
        full_make(make, progress, f"not link-only: {done.why}" if image.exists() else "")
        store_scope(request, build_dir)
    else:
        note = _link_only_note(len(route.objects), done.linked, image.name)
        store_widened_scope(request, build_dir, scope, started)
    note = "; ".join(part for part in (note, hit_note(before, ccache_counts(wrapping))) if part)
    return _checked(request, build_dir, image, log, previous), note


def _checked(
    request: BuildRequest, build_dir: Path, image: Path, log: Path, previous: ImageRecord | None
) -> ImageCheck:
    if not image.exists():
        raise BuildError(f"make succeeded but {image} is missing.", f"read the build log {log}.")
    checked = check_image(image, request.arch.make.elf, None, previous=previous)
    if checked.problem:
        raise BuildError(
            f"make built a damaged kernel image {image}: {checked.problem}.",
            f"read the build log {log}; delete the build directory {build_dir} to build it afresh.",
        )
    return checked


def _link_only_note(objects: int, linked: bool, image_name: str) -> str:
    note = f"link-only: {objects} object{'s' if objects > 1 else ''} recompiled"
    return note if linked else note + f", as {image_name} holds {'them' if objects > 1 else 'it'}: no link"


def _check_tools(arch: Arch) -> None:
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"Kernel build tools are missing: {', '.join(missing)}.",
            "install them: apt-get install build-essential flex bison bc libelf-dev libssl-dev cpio "
            "(scripts/setup.sh does this).",
        )
    compiler = arch.make.compiler
    if arch.make.cross_compile and shutil.which(compiler) is None:
        package = arch.make.compiler_package
        raise BuildError(
            f"The {arch.name} cross compiler is not installed: {compiler!r} is not on PATH.",
            f"install it: apt-get install {package} (or scripts/setup.sh --arch {arch.name})."
            if package
            else "install it, or name the prefix of one you have with --kunit-cross-compile.",
        )
    check_compiler(arch)
