"""Configure and build the kernel: a kunitconfig + the guest's needs, completed as kunit.py does, validated, `make`."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .arch import Arch
from .cache import CacheWarning, write_atomically
from .errors import BuildError
from .image import ImageCheck, ImageRecord, check_image
from .kconfig import Fragment, check_fragment, parse_fragment
from .locking import cache_lock
from .options import Wrapper
from .processes import group
from .tree import PreparedTree, unchanged_since
from .wrapper import CompilerWrapping, ccache_counts, hit_note, prepare

STAMP = ".pytest-kunit-stamp"
SOURCES = ".pytest-kunit-sources"  # when the last build of a directory tree started (ns): newer files mean make
STEPS = ".pytest-kunit-steps"
BUILD_TOOLS = ("make", "gcc", "flex", "bison", "bc")
_STEP = re.compile(r"^\s+([A-Z][A-Z0-9_]*)\s+(\S+)")
_ERROR = re.compile(r"(error:|Error \d|undefined reference|\*\*\*|fatal:)")

ProgressCallback = Callable[[str], None]


@dataclass(frozen=True)
class BuildRequest:
    tree: PreparedTree
    fragment: Fragment
    arch: Arch
    jobs: int
    cache_dir: Path
    extra_key: str = ""  # anything else that feeds the build (out-of-tree suite sources)
    session: str = ""  # the pytest run: xdist workers of one run share it, so they build once between them
    wrapper: Wrapper = Wrapper.NONE  # not part of the build key: a wrapper only changes how objects are made


@dataclass(frozen=True)
class BuildResult:
    image: Path
    image_digest: str
    build_dir: Path
    ran_make: bool
    seconds: float
    log: Path
    note: str = ""  # what the compiler wrapper did (ccache's hits), for the "built" line


def full_fragment(request: BuildRequest) -> Fragment:
    arch_fragment = parse_fragment("\n".join(request.arch.kconfig), f"arch.py:{request.arch.name}")
    return arch_fragment + request.fragment


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _make(request: BuildRequest, build_dir: Path, *targets: str) -> list[str]:
    return ["make", "-C", str(request.tree.path), f"O={build_dir}", *_make_vars(request.arch), *targets]


def _make_vars(arch: Arch) -> list[str]:
    variables = [f"ARCH={arch.make.arch}"]
    if arch.make.cross_compile:
        variables.append(f"CROSS_COMPILE={arch.make.cross_compile}")
    return variables


def _check_tools(arch: Arch) -> None:
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"Kernel build tools are missing: {', '.join(missing)}.",
            "install them: apt-get install build-essential flex bison bc libelf-dev libssl-dev cpio "
            "(the README's set-up command does this).",
        )
    compiler = arch.make.compiler
    if arch.make.cross_compile and shutil.which(compiler) is None:
        raise BuildError(
            f"The {arch.name} cross compiler is not installed: {compiler!r} is not on PATH.",
            f"install it: apt-get install {arch.make.compiler_package} (or scripts/setup.sh --arch {arch.name}).",
        )


def _configure(
    request: BuildRequest, build_dir: Path, fragment: Fragment, log: Path, wrapping: CompilerWrapping
) -> None:
    """kunit.py's configuration: the fragment (with the architecture's needs) as `.config`, completed by Kconfig's
    defaults. `syncconfig` does what kunit.py's `olddefconfig` does and also writes the include/config files that
    `make` would otherwise regenerate in a second Kconfig pass."""
    dotconfig = build_dir / ".config"
    previous = dotconfig.read_text() if dotconfig.exists() else None
    previous_mtime = dotconfig.stat().st_mtime_ns if dotconfig.exists() else None
    dotconfig.write_text(fragment.text())
    command = _make(request, build_dir, f"-j{request.jobs}", "syncconfig")
    env = os.environ | wrapping.env
    with log.open("a") as stream, group(command, stdout=stream, stderr=subprocess.STDOUT, env=env) as process:
        returncode = process.wait()
    if returncode != 0:
        raise BuildError(
            f"`make syncconfig` failed in {request.tree.path}.",
            f"read the log {log}; the tree may be incomplete or not configured for O= builds "
            "(run `make mrproper` in a directory tree that was built in place).",
            detail="\n".join(log.read_text(errors="replace").splitlines()[-15:]),
        )
    current = dotconfig.read_text()
    if current == previous and previous_mtime is not None:
        # Same configuration: keep the old timestamp so Kbuild does not re-run syncconfig.
        os.utime(dotconfig, ns=(previous_mtime, previous_mtime))
    check_fragment(fragment, current, request.tree.path, request.arch.make.source_arch)


def _run_make(
    request: BuildRequest, build_dir: Path, log: Path, progress: ProgressCallback, wrapping: CompilerWrapping
) -> None:
    steps_file = build_dir / STEPS
    expected = int(steps_file.read_text()) if steps_file.exists() else 0
    command = _make(request, build_dir, f"-j{request.jobs}", request.arch.make.target)
    steps = 0
    output = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True, "errors": "replace"}
    output["env"] = os.environ | wrapping.env
    with log.open("a") as stream, group(command, **output) as process:
        assert process.stdout is not None
        for line in process.stdout:
            stream.write(line)
            step = _STEP.match(line)
            if step:
                steps += 1
                total = f"/~{expected}" if expected > steps else ""
                progress(f"building kernel: {steps}{total} {step.group(1)} {step.group(2)}")
        returncode = process.wait()
    if returncode != 0:
        lines = log.read_text(errors="replace").splitlines()
        errors = [line for line in lines if _ERROR.search(line)][-20:]
        raise BuildError(
            f"The kernel build failed (make exited {returncode}).",
            f"fix the errors below; the whole log is {log}.",
            detail="\n".join(errors or lines[-20:]),
        )
    if steps:
        steps_file.write_text(str(max(steps, expected)))


def build(request: BuildRequest, progress: ProgressCallback) -> BuildResult:
    """Build once per (tree, config) however many processes ask; skip make entirely when a fixed tree is stamped."""
    fragment = full_fragment(request)
    build_key = _digest(request.tree.key, request.arch.name, fragment.text())
    build_dir = request.cache_dir / "build" / build_key
    image = build_dir / request.arch.make.image
    log = build_dir / "build.log"
    stamp = _digest(build_key, request.extra_key)
    started = time.monotonic()
    with cache_lock(request.cache_dir, f"build-{build_key}", f"building the kernel in {build_dir}", progress):
        build_dir.mkdir(parents=True, exist_ok=True)
        stamp_file = build_dir / STAMP
        recorded = stamp_file.read_text().split() if stamp_file.exists() else []
        record = ImageRecord.parse(recorded[2:])
        checked = _whole_image(image, request.arch.make.elf, record)
        same_inputs = checked is not None and recorded[:1] == [stamp]
        # A fixed tree cannot have changed; any other tree may have, unless this very run already built it or none of
        # its files has changed since the last build started.
        sources = build_dir / SOURCES
        up_to_date = same_inputs and (
            request.tree.fixed or recorded[1:2] == [request.session] or _unchanged(request.tree.path, sources)
        )
        note = ""
        if not up_to_date:
            # File times come from a coarse clock that may lag this one: take a second's margin.
            build_started_ns = time.time_ns() - 1_000_000_000
            _check_tools(request.arch)
            wrapping = prepare(request.wrapper, request.arch.make, build_dir, request.tree.path)
            stamp_file.unlink(missing_ok=True)
            log.write_text(
                f"# pytest-kunit build of {request.tree.path} into {build_dir}\n# compiler: {wrapping.describe}\n"
            )
            progress("configuring kernel")
            _configure(request, build_dir, fragment, log, wrapping)
            before = ccache_counts(wrapping)
            _run_make(request, build_dir, log, progress, wrapping)
            note = hit_note(before, ccache_counts(wrapping))
            if not image.exists():
                raise BuildError(f"make succeeded but {image} is missing.", f"read the build log {log}.")
            checked = check_image(image, request.arch.make.elf, None, previous=record)
            if checked.problem:
                raise BuildError(
                    f"make built a damaged kernel image {image}: {checked.problem}.",
                    f"read the build log {log}; delete the build directory {build_dir} to build it afresh.",
                )
        assert checked is not None
        if not up_to_date or checked.record != record:  # a new image, or one recorded less fully (older stamps)
            write_atomically(stamp_file, f"{stamp}\n{request.session}\n{checked.record.lines()}")
        if not up_to_date and not request.tree.fixed:
            write_atomically(sources, str(build_started_ns))
        seconds = time.monotonic() - started
        return BuildResult(image, checked.record.digest, build_dir, not up_to_date, seconds, log, note)


def _unchanged(tree: Path, sources: Path) -> bool:
    """Whether the tree is as it was when the recorded build started."""
    try:
        since = int(sources.read_text())
    except (OSError, ValueError):
        return False
    return unchanged_since(tree, since)


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
