"""Configuring a build directory as kunit.py does: the fragment as `.config`, completed by Kconfig's defaults and
checked; and whether a directory's configuration still holds, so the edit-build-test loop need not configure again."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import BuildError, ConfigError
from ..host.cachelayout import CONFIGS, CacheLayout
from ..host.locking import cache_lock
from ..kbuild.records import kconfig_inputs
from . import modules
from .build_request import BuildRequest, build_key, full_fragment
from .kconfig import Fragment, check_fragment
from .makerun import Make, ProgressCallback


def configure_build(request: BuildRequest, make: Make, progress: ProgressCallback) -> bool:
    """Configure the build directory unless its configuration still holds for the request; whether it held (what
    was compiled before, and how, may differ when it did not)."""
    build_dir, fragment = make.build_dir, full_fragment(request)
    srcarch = request.arch.make.source_arch
    as_configured = modules.recorded(fragment, build_dir) if request.modules else fragment
    configured = as_configured is not None and is_configured(request.tree.path, build_dir)
    if configured and as_configured is not None:
        try:
            check_fragment(as_configured, (build_dir / ".config").read_text(), request.tree.path, srcarch)
        except ConfigError:
            configured = False  # a configuration an earlier pytest-kunit completed and refused: configured again
    if not configured:
        progress.phase(f"configuring kernel in {build_dir}")
        if request.modules:
            fragment = modules.configured(fragment, request.tree.path, srcarch, build_dir)
        configure(request, make, fragment)
    return configured


def configure(request: BuildRequest, make: Make, fragment: Fragment, checked: bool = True) -> None:
    """kunit.py's configuration: the fragment (with the architecture's needs) as `.config`, completed by Kconfig's
    defaults (kunit.py's `olddefconfig`), then `syncconfig` for the include/config files that `make` would otherwise
    write in a Kconfig pass of its own. `syncconfig` alone is not `olddefconfig`: it drops the member of an optional
    choice that .config chose (sh4's CMDLINE_EXTEND, kunit.py's own sh line). Unless not `checked` (a shared
    kernel's first draft, whose lines Kconfig cannot all keep), every line of the fragment must hold."""
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
    if not checked:
        return
    try:
        check_fragment(fragment, current, request.tree.path, request.arch.make.source_arch)
    except ConfigError:
        # Never trusted as configured (is_configured): the next run configures again, as a later pytest-kunit or
        # tree may complete the same fragment otherwise.
        (make.build_dir / "include/config/auto.conf").unlink(missing_ok=True)
        raise


# A leading dot: never the default goal of the sub-makes --eval reaches too (Makefile.build's, which name none).
FLAGS_TARGET, FLAGS_LINE = ".pytest-kunit-flags", "pytest-kunit-flag "
# Kept in the directory evaluated, named as the plugin's own files are, which seeding.py never copies.
FLAGS_KEPT, FLAGS_LOG = ".pytest-kunit-compile-flags.json", ".pytest-kunit-compile-flags.log"
# Every variable the Makefiles define with FLAGS in its name (KBUILD_CFLAGS, CFLAGS_UBSAN, CC_FLAGS_FTRACE...) as the
# top Makefile evaluates it for the configuration, make's own aside.
FLAGS_RULE = (
    f"{FLAGS_TARGET}: ; $(foreach v,$(sort $(.VARIABLES)),$(if $(and $(findstring FLAGS,$(v)),"
    "$(filter file override,$(origin $(v))),$(filter-out MAKEFLAGS GNUMAKEFLAGS,$(v))),"
    f"$(info {FLAGS_LINE}$(v)=$($(v)))))@:"
)


def compile_flags(make: Make) -> dict[str, str]:
    """The flags every object of the configured `make.build_dir` is compiled with, as make evaluates them (FLAGS_RULE):
    two configurations whose flags differ compile every object otherwise (sanitizers, tracers, debug info). Kept in
    the directory (FLAGS_KEPT) until it is configured again."""
    auto_conf, kept = make.build_dir / "include/config/auto.conf", make.build_dir / FLAGS_KEPT
    if not auto_conf.exists():  # make would complete .config itself, unchecked
        raise BuildError(f"{make.build_dir} is not configured: its compile flags cannot be evaluated.")
    if kept.exists() and kept.stat().st_mtime_ns > auto_conf.stat().st_mtime_ns:  # equal: within one clock tick
        flags: dict[str, str] = json.loads(kept.read_text())
        return flags
    status, printed = make.output(make.command("-s", f"--eval={FLAGS_RULE}", FLAGS_TARGET))
    if status:
        raise BuildError(f"make could not evaluate the compile flags in {make.build_dir}.", f"read the log {make.log}")
    lines = [line.removeprefix(FLAGS_LINE) for line in printed.splitlines() if line.startswith(FLAGS_LINE)]
    flags = dict(line.partition("=")[::2] for line in lines)
    scratch = kept.with_name(f"{kept.name}.{os.getpid()}")  # another process may read it meanwhile: whole or absent
    scratch.write_text(json.dumps(flags, indent=1))
    os.replace(scratch, kept)
    return flags


def make_in(request: BuildRequest, directory: Path, log: Path) -> Make:
    """make for the request's tree, architecture and options, into `directory`, logged in `log`."""
    return Make(
        request.tree.path,
        directory,
        request.arch,
        request.jobs,
        log,
        {},
        request.make_options,
        timeout=request.make_timeout,
    )


def flags_of(request: BuildRequest, build_dir: Path) -> dict[str, str]:
    """compile_flags of a configured build directory (a kernel built before), made as the request's builds are."""
    return compile_flags(make_in(request, build_dir, build_dir / FLAGS_LOG))


def completed_flags(
    request: BuildRequest, progress: ProgressCallback | None = None, checked: bool = True
) -> dict[str, str]:
    """compile_flags of the configuration completed_config gives."""
    completed_config(request, progress, checked)
    layout = CacheLayout(request.cache_dir)
    directory = layout.config_dir(build_key(request))
    with cache_lock(request.cache_dir, layout.lock_name(CONFIGS, directory.name), f"reading the flags in {directory}"):
        return compile_flags(make_in(request, directory, directory / "config.log"))


def completed_config(request: BuildRequest, progress: ProgressCallback | None = None, checked: bool = True) -> str:
    """The `.config` the request's fragment gives on its own, Kconfig's defaults completing it, without a build:
    configured as a build is (configure) in a directory of its own in the cache, done again only when it would change
    (sharing.py compares it with a shared kernel's). Raises ConfigError as the build would, unless not `checked`:
    then it is what Kconfig kept of the fragment."""
    fragment = full_fragment(request)
    layout = CacheLayout(request.cache_dir)
    directory = layout.config_dir(build_key(request))
    lock = layout.lock_name(CONFIGS, directory.name)
    with cache_lock(request.cache_dir, lock, f"completing a configuration in {directory}"):
        directory.mkdir(parents=True, exist_ok=True)
        layout.mark_used(directory)
        if not is_configured(request.tree.path, directory):
            if progress is not None:
                progress.phase(f"completing a configuration in {directory} (no build)")
            log = directory / "config.log"
            log.write_text(f"# pytest-kunit: the configuration of {request.tree.path} alone\n")
            configure(request, make_in(request, directory, log), fragment, checked)
            return (directory / ".config").read_text()
        text = (directory / ".config").read_text()
        if checked:  # completed unchecked, or by a make of someone else's that ran syncconfig: the fragment must hold
            check_fragment(fragment, text, request.tree.path, request.arch.make.source_arch)
        return text


def is_configured(tree: Path, build_dir: Path) -> bool:
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
