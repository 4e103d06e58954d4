"""What a built kernel boots with beside its image: the initramfs whose /init runs after KUnit (its modules,
kmemleak's final scan, GCOV's counters) and the boot arguments the findings need."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from ..arch import Arch
from ..errors import KunitError, KunitWarning
from ..findings import guest_init
from ..findings.sanitizers import kernel_args as sanitizer_args
from ..kbuild.modulefiles import built_modules
from ..kbuild.records import NotARecord
from ..kbuild.suitetable import Opaque
from ..model import Settings, SuiteModule
from . import initramfs


@dataclass(frozen=True)
class BootExtras:
    initrd: Path | None  # None: the kernel boots without an initramfs
    boot_args: tuple[str, ...]
    modules: tuple[SuiteModule, ...]  # --kunit-modules: the suites' modules, in the initramfs


def _suite_modules(build_dir: Path) -> tuple[SuiteModule, ...]:
    """The modules a --kunit-modules build made, read from its objects."""
    try:
        return built_modules(build_dir)
    except (Opaque, NotARecord, OSError) as error:
        raise KunitError(
            f"The suites of the modules built in {build_dir} cannot be read: {error}.",
            "run without --kunit-modules (a suite whose name or cases are set at run time cannot be listed "
            "before its module is loaded), or rebuild: delete that build directory.",
        ) from None


def boot_extras(settings: Settings, build_dir: Path, arch: Arch, modules: bool, serving: bool = False) -> BootExtras:
    """The initramfs (made once into the cache) and boot arguments of the kernel built in `build_dir` for `arch`;
    `modules` for a --kunit-modules build, `serving` for one whose built-in suites a kept guest runs again."""
    after = guest_init.AfterKunit(
        kmemleak=initramfs.kmemleak_scan(build_dir / ".config", arch),
        gcov=() if settings.coverage is not None else None,
        modules=modules,
        serve=serving,
    )
    if settings.keep_guest and not modules and not serving:
        note = (
            f"pytest-kunit: --kunit-keep-guest keeps no guest up for the kernel in {build_dir}: without "
            "--kunit-modules, a guest is kept up only on a tree whose KUnit runs built-in suites again after boot "
            "(kunit.autorun: the series on 6.1, upstream 6.14 and later), and this tree's has no kunit.autorun"
        )
        warnings.warn(KunitWarning(note), stacklevel=2)
    suite_modules = _suite_modules(build_dir) if modules else ()
    files = [(module.name, (build_dir / module.path).read_bytes()) for module in suite_modules]
    if after.modules:
        why = "--kunit-modules"
    elif after.serve:
        why = "--kunit-keep-guest"
    else:
        why = "--kunit-coverage" if after.gcov is not None else "kmemleak's final scan (the kernel has kmemleak)"
    initrd = initramfs.initramfs(settings.cache_dir, why, files) if after.wanted else None
    return BootExtras(initrd, (*sanitizer_args(settings.sanitize), *after.kernel_args()), suite_modules)
