"""Kernel builds: a kunitconfig + the guest's needs, completed as kunit.py does, validated, `make`; skipped when
nothing the build reads (the tree's files, the fragment) changed since."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..arch import Arch
from ..errors import BuildError, ConfigError
from ..host.cache import CacheWarning, write_atomically
from ..host.cachelayout import BUILDS, CONFIGS, CacheLayout
from ..host.locking import cache_lock
from ..kbuild.read_dirs import ReadScope, read_scope, widened
from ..kbuild.records import kconfig_inputs
from ..model import BuildResult
from ..options import DEFAULT_MAKE_TIMEOUT, Wrapper
from . import linkonly, moduleonly, modules
from .compiler_check import check_compiler
from .freshness import LAG_NS, TreeLook, look_at_tree
from .image import ImageCheck, ImageRecord, check_image, file_digest
from .kconfig import Fragment, check_fragment, parse_fragment
from .makerun import Make, ProgressCallback, full_make, without_overridden
from .tree import PreparedTree
from .wrapper import TREE_LINK, ccache_counts, hit_note, llvm_compilers, wrap_compilers

STAMP = ".pytest-kunit-stamp"
LOG = "build.log"
RECORD = ".pytest-kunit-built.json"  # what a finished build was built from: reuse.py finds kernels that serve others
SOURCES = ".pytest-kunit-sources"  # when the last build started reading the tree (ns), and what had changed just before
READ = ".pytest-kunit-read"  # what of the tree the last full make read (kbuild/read_dirs.py: ReadScope)
BUILD_TOOLS = ("make", "gcc", "flex", "bison", "bc")


@dataclass(frozen=True)
class BuildRequest:
    tree: PreparedTree
    fragment: Fragment
    arch: Arch
    jobs: int
    cache_dir: Path
    extra_key: str = ""  # anything else that feeds the build (out-of-tree suite sources)
    placed: tuple[tuple[str, str], ...] = ()  # the out-of-tree suites placed into the tree for it: (name, digest)
    session: str = ""  # the pytest run: xdist workers of one run share it, so they build once between them
    wrapper: Wrapper = Wrapper.NONE  # not part of the build key: a wrapper only changes how objects are made
    label: str = ""  # what the build is for, in a person's words (its fragments): not part of the build key
    # More words for every make run (--kunit-make-options, then --kunit-cross-compile's CROSS_COMPILE=): part of the
    # build key, as each can change what is built (a compiler, its flags).
    make_options: tuple[str, ...] = ()
    modules: bool = False  # --kunit-modules: the suites built as modules (modules.py); keys the build
    make_timeout: float = DEFAULT_MAKE_TIMEOUT  # seconds one make run may take (--kunit-make-timeout); 0: none


def full_fragment(request: BuildRequest) -> Fragment:
    arch_fragment = parse_fragment("\n".join(request.arch.kconfig), f"arch.py:{request.arch.name}")
    return arch_fragment + request.fragment + (modules.mode_fragment() if request.modules else Fragment(()))


def _build_key_digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _key_parts(request: BuildRequest) -> tuple[str, ...]:
    """What names a build's directory: tree, architecture, configuration, and make's options where there are any
    (so a build without them keeps the directory it always had)."""
    parts = (request.tree.key, request.arch.name, full_fragment(request).text())
    return (*parts, "make", *request.make_options) if request.make_options else parts


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


def _configure(request: BuildRequest, make: Make, fragment: Fragment) -> None:
    """kunit.py's configuration: the fragment (with the architecture's needs) as `.config`, completed by Kconfig's
    defaults (kunit.py's `olddefconfig`), then `syncconfig` for the include/config files that `make` would otherwise
    write in a Kconfig pass of its own. `syncconfig` alone is not `olddefconfig`: it drops the member of an optional
    choice that .config chose (sh4's CMDLINE_EXTEND, kunit.py's own sh line)."""
    dotconfig, log = make.build_dir / ".config", make.log
    previous = dotconfig.read_text() if dotconfig.exists() else None
    previous_mtime = dotconfig.stat().st_mtime_ns if dotconfig.exists() else None
    dotconfig.write_text(fragment.text())
    if make.run_logged(make.command(f"-j{make.jobs}", "olddefconfig", "syncconfig")) != 0:
        raise BuildError(
            f"`make olddefconfig syncconfig` failed in {request.tree.path}.",
            f"read the log {log}; the tree may be incomplete or not configured for O= builds "
            "(run `make mrproper` in a directory tree that was built in place).",
            detail="\n".join(log.read_text(errors="replace").splitlines()[-15:]),
        )
    current = dotconfig.read_text()
    if current == previous and previous_mtime is not None:
        # Same configuration: keep the old timestamp so Kbuild does not re-run syncconfig.
        os.utime(dotconfig, ns=(previous_mtime, previous_mtime))
    try:
        check_fragment(fragment, current, request.tree.path, request.arch.make.source_arch)
    except ConfigError:
        # Never trusted as configured (_configured): the next run configures again, as a later pytest-kunit or
        # tree may complete the same fragment otherwise.
        (make.build_dir / "include/config/auto.conf").unlink(missing_ok=True)
        raise


def completed_config(request: BuildRequest, progress: ProgressCallback | None = None) -> str:
    """The `.config` the request's fragment gives on its own, Kconfig's defaults completing it, without a build:
    configured as a build is (_configure) in a directory of its own in the cache, done again only when it would change
    (sharing.py compares it with a shared kernel's). Raises ConfigError as the build would."""
    fragment = full_fragment(request)
    layout = CacheLayout(request.cache_dir)
    directory = layout.config_dir(_build_key_digest(*_key_parts(request)))
    lock = layout.lock_name(CONFIGS, directory.name)
    with cache_lock(request.cache_dir, lock, f"completing a configuration in {directory}"):
        directory.mkdir(parents=True, exist_ok=True)
        layout.mark_used(directory)
        if not _configured(request.tree.path, directory):
            if progress is not None:
                progress.phase(f"completing a configuration in {directory} (no build)")
            log = directory / "config.log"
            log.write_text(f"# pytest-kunit: the configuration of {request.tree.path} alone\n")
            options, timeout = request.make_options, request.make_timeout
            make = Make(request.tree.path, directory, request.arch, request.jobs, log, {}, options, timeout=timeout)
            _configure(request, make, fragment)
        return (directory / ".config").read_text()


def _configured(tree: Path, build_dir: Path) -> bool:
    """Whether `make syncconfig` would leave `.config` as it is, so the edit-build-test loop need not run it: the
    directory's fragment (its key) was completed after the last change to `.config` and to every Kconfig file
    Kbuild lists as read for it (include/config/auto.conf.cmd). What else that list names (compiler, ARCH) `make`
    checks itself, and Kconfig recomputes such symbols from the environment whatever `.config` holds."""
    auto_conf = build_dir / "include/config/auto.conf"
    try:
        completed = auto_conf.stat().st_mtime_ns
        if (build_dir / ".config").stat().st_mtime_ns > completed:
            return False
        kconfigs = kconfig_inputs(build_dir)
        return bool(kconfigs) and all((tree / name).stat().st_mtime_ns <= completed for name in kconfigs)
    except OSError:
        return False


def build_dir_of(request: BuildRequest) -> Path:
    """Where the request is built: one directory per (tree, architecture, configuration)."""
    return CacheLayout(request.cache_dir).build_dir(_build_key_digest(*_key_parts(request)))


@dataclass(frozen=True)
class BuildRecord:
    """What a finished build was built from, kept beside it (RECORD) so that a later run can ask it again."""

    tree: str  # PreparedTree.key
    arch: str
    fragment: str  # the request's fragment (the architecture's lines come from arch.py)
    extra_key: str
    placed: tuple[tuple[str, str], ...]
    label: str = ""
    make_options: tuple[str, ...] = ()

    def text(self) -> str:
        return json.dumps(
            {"tree": self.tree, "arch": self.arch, "fragment": self.fragment, "extra_key": self.extra_key}
            | {"placed": [list(pair) for pair in self.placed], "label": self.label}
            | {"make_options": list(self.make_options)}
        )

    @staticmethod
    def read(path: Path) -> BuildRecord | None:
        """The record in `path`; None if missing or not whole (a build that never finished has none)."""
        try:
            fields = json.loads(path.read_text())
            placed = tuple((str(name), str(digest)) for name, digest in fields["placed"])
            return BuildRecord(
                str(fields["tree"]),
                str(fields["arch"]),
                str(fields["fragment"]),
                str(fields["extra_key"]),
                placed,
                str(fields.get("label", "")),
                tuple(str(word) for word in fields.get("make_options", [])),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None


def build(request: BuildRequest, progress: ProgressCallback) -> BuildResult:
    """Build once per (tree, config) however many processes ask; skip make entirely when nothing changed since."""
    build_dir = build_dir_of(request)
    layout = CacheLayout(request.cache_dir)
    image = build_dir / request.arch.make.image
    started = time.monotonic()
    lock = layout.lock_name(BUILDS, build_dir.name)
    with cache_lock(request.cache_dir, lock, f"building the kernel in {build_dir}", progress):
        build_dir.mkdir(parents=True, exist_ok=True)
        layout.mark_used(build_dir)
        before = _previous_build(request, build_dir, image)
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
                _stored_scope(build_dir) if before.same_inputs else None,
            )
        )
        up_to_date = before.built_by_this_run or (look is not None and look.unchanged)
        checked, note = before.checked, ""
        if not up_to_date:
            checked, note = _make_image(request, build_dir, image, look, snapshot, before.record, progress)
        assert checked is not None
        _record_build(request, build_dir, before, checked, look, rebuilt=not up_to_date)
        seconds = time.monotonic() - started
        return BuildResult(image, checked.record.digest, build_dir, not up_to_date, seconds, build_dir / LOG, note)


@dataclass(frozen=True)
class _PreviousBuild:
    """What the build directory says of its last build."""

    stamp: str  # what the request's inputs give: the stamp's first line when they are the recorded build's
    record: ImageRecord | None  # the image it recorded
    checked: ImageCheck | None  # the image there now, if whole
    same_inputs: bool  # the recorded build had the request's inputs, and its image is whole
    built_by_this_run: bool  # ... and this very pytest run built it


def image_digest(build_dir: Path, image: Path) -> str | None:
    """The digest of `image` as it is now: the one its build recorded while the file is unchanged since (its size and
    time, as check_image vouches), else read; None without an image."""
    try:
        stamp = (build_dir / STAMP).read_text().split() if (build_dir / STAMP).exists() else []
        seen = image.stat()
        recorded = ImageRecord.parse(stamp[2:])
        if recorded is not None and (recorded.size, recorded.mtime_ns) == (seen.st_size, seen.st_mtime_ns):
            return recorded.digest
        return file_digest(image)
    except OSError:
        return None


def _previous_build(request: BuildRequest, build_dir: Path, image: Path) -> _PreviousBuild:
    stamp = _build_key_digest(build_dir.name, request.extra_key)
    stamp_file = build_dir / STAMP
    recorded = stamp_file.read_text().split() if stamp_file.exists() else []
    record = ImageRecord.parse(recorded[2:])
    checked = _whole_image(image, request.arch.make.elf, record)
    same_inputs = checked is not None and recorded[:1] == [stamp]
    # Any tree may have been edited since its last build, the extracted packaged one as much as a checkout (the
    # edit-build-test loop): it is current if this very run built it, or no file in it is newer than the start of
    # its last build.
    built_by_this_run = same_inputs and recorded[1:2] == [request.session]
    return _PreviousBuild(stamp, record, checked, same_inputs, built_by_this_run)


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
    scope = _stored_scope(build_dir)
    (build_dir / READ).unlink(missing_ok=True)
    started = time.time_ns() - LAG_NS
    log.write_text(f"# pytest-kunit build of {request.tree.path} into {build_dir}\n# compiler: {wrapping.describe}\n")
    fragment = full_fragment(request)
    srcarch = request.arch.make.source_arch
    as_configured = modules.recorded(fragment, build_dir) if request.modules else fragment
    configured = as_configured is not None and _configured(request.tree.path, build_dir)
    if configured and as_configured is not None:
        try:
            check_fragment(as_configured, (build_dir / ".config").read_text(), request.tree.path, srcarch)
        except ConfigError:
            configured = False  # a configuration an earlier pytest-kunit completed and refused: configured again
    if not configured:
        progress.phase(f"configuring kernel in {build_dir}")
        if request.modules:
            fragment = modules.configured(fragment, request.tree.path, srcarch, build_dir)
        _configure(request, make, fragment)
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
                _store_widened_scope(request, build_dir, scope, started)
                return _checked(request, build_dir, image, log, previous), note
            full_make(make, progress, f"not module-only: {why}")
            _store_scope(request, build_dir)
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
        _store_scope(request, build_dir)
    else:
        note = _link_only_note(len(route.objects), done.linked, image.name)
        _store_widened_scope(request, build_dir, scope, started)
    note = "; ".join(part for part in (note, hit_note(before, ccache_counts(wrapping))) if part)
    return _checked(request, build_dir, image, log, previous), note


def _store_scope(request: BuildRequest, build_dir: Path) -> None:
    """What of the tree this full make read, by its records: the next run looks at that alone."""
    scope = read_scope(build_dir, request.tree.path, TREE_LINK)
    if scope is not None:
        write_atomically(build_dir / READ, scope.text())


def _store_widened_scope(request: BuildRequest, build_dir: Path, scope: ReadScope | None, started: int) -> None:
    """After a link-only or module-only build: the last full make's scope, and what this build's compiles read (a
    header from a directory no record named before). No scope before, none after: the next look is the whole tree."""
    wider = widened(scope, build_dir, request.tree.path, TREE_LINK, started) if scope is not None else None
    if wider is not None:
        write_atomically(build_dir / READ, wider.text())


def _stored_scope(build_dir: Path) -> ReadScope | None:
    try:
        return ReadScope.parse((build_dir / READ).read_text())
    except OSError:
        return None


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


def _record_build(
    request: BuildRequest,
    build_dir: Path,
    before: _PreviousBuild,
    checked: ImageCheck,
    look: TreeLook | None,
    rebuilt: bool,
) -> None:
    """Write what the build directory must say of this build: its stamp, when it started reading the tree, and what
    it was built from."""
    if rebuilt or checked.record != before.record:  # a new image, or one recorded less fully (older stamps)
        write_atomically(build_dir / STAMP, f"{before.stamp}\n{request.session}\n{checked.record.lines()}")
    if look is not None and rebuilt:
        write_atomically(build_dir / SOURCES, look.sources)
    if rebuilt or not (build_dir / RECORD).exists():
        record_of = BuildRecord(
            request.tree.key,
            request.arch.name,
            request.fragment.text(),
            request.extra_key,
            request.placed,
            request.label,
            request.make_options,
        )
        write_atomically(build_dir / RECORD, record_of.text())


def _whole_image(image: Path, elf: bool, recorded: ImageRecord | None) -> ImageCheck | None:
    """The image's check if it is there and whole; a damaged one is deleted with a note, so make builds it again
    (make would take a damaged file newer than its inputs for up to date)."""
    if not image.exists():
        return None
    checked = check_image(image, elf, recorded)
    if not checked.problem:
        return checked
    image.unlink()
    warnings.warn(
        CacheWarning(f"pytest-kunit: discarded the damaged kernel image {image} ({checked.problem}); rebuilding it"),
        stacklevel=2,
    )
    return None
