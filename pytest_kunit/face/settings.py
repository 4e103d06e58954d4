"""The settings of a run: each option's value from its flag, `-o`, ini key or default, checked and resolved into one
frozen Settings value.

Precedence: a command-line option beats its ini key, which beats the built-in default.  An unusable value is a
`pytest.UsageError` naming the option or ini key it came from.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..options import COVERAGE_DIR, DEFAULT_MAKE_TIMEOUT, OPTIONS, Accel, Isolate, Wrapper
from ..versions import MAX_CASE_TIMEOUT

if TYPE_CHECKING:
    from ..model import Settings

_KINDS = {option.name: option.kind for option in OPTIONS}


def _overridden(config: pytest.Config, name: str) -> bool:
    """Whether `-o name=value` (pytest's --override-ini, which beats the ini file) sets this ini key."""
    overrides: list[str] = config.getoption("override_ini") or []
    return any(override.partition("=")[0].strip() == name for override in overrides)


def _raw(config: pytest.Config, name: str) -> tuple[Any, str]:
    """The value and a description of where it came from: `--flag`, `-o key`, `ini key ... in FILE`, `default`."""
    value = config.getoption(name)
    if value is not None:
        return value, "--" + name.replace("_", "-")
    where = f"-o {name}" if _overridden(config, name) else f"ini key {name!r} in {config.inipath or 'the ini file'}"
    try:
        ini = config.getini(name)
    except ValueError as error:
        raise pytest.UsageError(f"{where}: {error}") from None
    if ini not in (None, "", []):
        return ini, where
    return None, "default"


def is_enabled(config: pytest.Config) -> bool:
    """Whether --kunit (or its ini key) is on: the one setting a run without it reads."""
    return bool(_raw(config, "kunit")[0])


def flag(config: pytest.Config, name: str) -> bool:
    """Whether the flag `name` (or its ini key) is on."""
    return bool(_raw(config, name)[0])


def given(config: pytest.Config, name: str) -> str | None:
    """Where the setting `name` was given (its flag, -o, or its ini key in a file), or None if it was not."""
    value, source = _raw(config, name)
    return None if value is None else source


def _in_ini_file(source: str) -> bool:
    """Whether a value came from an ini file, whose relative paths are relative to the rootdir; a value typed on the
    command line (a flag or -o) is relative to the directory pytest was started in."""
    return source.startswith("ini key ")


def _convert(config: pytest.Config, name: str, default: Any, convert: Callable[[Any], Any], expected: str) -> Any:
    value, source = _raw(config, name)
    if value is None:
        return default
    written = value
    if _in_ini_file(source) and _KINDS[name] == "path":
        # Paths in an ini file are relative to the rootdir, wherever pytest was started.
        value = str(config.rootpath / str(value))
    try:
        return convert(value)
    except (ValueError, TypeError):
        value = written
        raise pytest.UsageError(f"{source}: {value!r} is not {expected}") from None


def _positive_int(value: Any) -> int:
    number = int(value)
    if number < 1:
        raise ValueError
    return number


def _whole_number(value: Any) -> int:
    number = int(value)
    if number < 0:
        raise ValueError
    return number


def cache_dir(config: pytest.Config) -> Path:
    return _convert(config, "kunit_cache_dir", _cache_default(), _path, "a path")  # type: ignore[no-any-return]


def cache_bounds(config: pytest.Config) -> tuple[int, int]:
    """The cache's eviction bounds: days a big entry may go unused, runs whose consoles stay (0: no bound)."""
    expected = "a whole number, 0 or more"
    return (
        _convert(config, "kunit_cache_max_age", 30, _whole_number, expected),
        _convert(config, "kunit_cache_keep_consoles", 20, _whole_number, expected),
    )


def _case_timeout(value: Any) -> int:
    number = float(value)
    if not number.is_integer() or not 1 <= number <= MAX_CASE_TIMEOUT:
        raise ValueError
    return int(number)


def _positive_seconds(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError
    return number


def _origin(value: Any) -> str:
    text = str(value)
    if not re.fullmatch(r"[a-z0-9_]+", text):  # KCIDB's own rule for an origin
        raise ValueError
    return text


def _path(value: Any) -> Path:
    return Path(str(value)).expanduser()


def _resolved_path(value: Any) -> Path:
    return Path(str(value)).expanduser().resolve()


def _existing_path(value: Any) -> Path:
    path = Path(str(value)).expanduser()
    if not path.exists():
        raise ValueError
    return path.resolve()


_SANITIZER_NAMES = "kasan, ubsan, lockdep, atomic-sleep, debugobjects, kcsan, kmemleak"


def _sanitizers(value: Any) -> tuple[str, ...]:
    from ..findings.sanitizers import parse_names

    return parse_names(str(value))


def _coverage_dir(config: pytest.Config) -> Path | None:
    """--kunit-coverage's report directory: the flag alone means kunit-coverage/ where pytest was started (or, from an
    ini file, beside it); a fragment given as its value was meant as a test to run."""
    value, source = _raw(config, "kunit_coverage")
    if value is None or str(value).lower() in ("false", "no", "0"):
        return None
    text = str(value)
    if text.endswith(".kunitconfig") or (config.invocation_params.dir / text).is_file():
        raise pytest.UsageError(
            f"{source}: {text!r} is a file, not a report directory; write --kunit-coverage=DIR, or put "
            "--kunit-coverage after the fragments"
        )
    base = config.rootpath if _in_ini_file(source) else config.invocation_params.dir
    if text in ("", "true", "yes", "1"):
        text = COVERAGE_DIR
    return (base / text).expanduser().resolve()


def _patch_dirs(config: pytest.Config) -> tuple[Path, ...] | None:
    value, source = _raw(config, "kunit_patches")
    if value is None:
        return None
    entries = [str(entry) for entry in value]
    if entries == ["none"]:
        return ()
    from ..kernel.tree import patch_series

    dirs = []
    base = config.rootpath if _in_ini_file(source) else config.invocation_params.dir
    for entry in entries:
        path = (base / entry).expanduser().resolve()
        if not path.is_dir():
            raise pytest.UsageError(
                f"{source}: {entry!r} is not a directory of patches (use 'none' to apply no patches)"
            )
        if not patch_series((path,)).patches:
            raise pytest.UsageError(
                f"{source}: {entry!r} holds no patch (no *.patch or *.diff file with a diff in it; "
                "use 'none' to apply no patches)"
            )
        dirs.append(path)
    return tuple(dirs)


def _yes_no(value: Any) -> bool:
    words = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}
    answer = words.get(str(value).strip().lower())
    if answer is None:
        raise ValueError
    return answer


def _names(value: Any) -> tuple[str, ...]:
    """A comma-separated list of names, each once, in the order given."""
    names = [name.strip() for name in str(value).split(",")]
    if not all(names):
        raise ValueError
    return tuple(dict.fromkeys(names))


def arch_config_path(config: pytest.Config) -> Path | None:
    """--kunit-arch-config's file, which must exist (read before the other settings: it adds architectures)."""
    found: Path | None = _convert(config, "kunit_arch_config", None, _existing_path, "an existing file")
    return found


def _replay(config: pytest.Config) -> Path | None:
    """--kunit-replay's console: `-` (stdin), or a file that exists (relative to the rootdir in an ini file)."""
    from ..model import STDIN

    value, source = _raw(config, "kunit_replay")
    if value is None:
        return None
    if str(value) == str(STDIN):
        return STDIN
    base = config.rootpath if _in_ini_file(source) else config.invocation_params.dir
    path = (base / str(value)).expanduser()
    if not path.is_file():
        raise pytest.UsageError(f"{source}: {str(value)!r} is not a file: name a saved console, or - for stdin")
    return path.resolve()


def _cache_default() -> Path:
    # The XDG base directory specification: a relative path is invalid and is ignored.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "pytest-kunit"


def _modules(config: pytest.Config) -> bool:
    """--kunit-modules; refused with --kunit-share-kernels, whose union kernel is configured before any suite could
    be told a module."""
    modules, source = _raw(config, "kunit_modules")
    if modules and _raw(config, "kunit_share_kernels")[0]:
        raise pytest.UsageError(
            f"{source} cannot be combined with --kunit-share-kernels: drop one of them (module mode builds each "
            "fragment's kernel on its own)."
        )
    return bool(modules)


def resolve(config: pytest.Config, arches: Collection[str] | None = None) -> Settings:
    """The settings; `arches` names the architectures there are (default: arch.py's table)."""
    from ..model import Settings
    from . import knobs  # with --kunit only: a run without it imports no more than its switch needs

    if arches is None:
        from ..arch import ARCHES

        arches = ARCHES
    enabled, _ = _raw(config, "kunit")
    chosen = _convert(config, "kunit_arch", ("x86_64",), _names, "one architecture or a comma-separated list of them")
    max_age, keep_consoles = cache_bounds(config)
    unknown = [name for name in chosen if name not in arches]
    if unknown:
        _, source = _raw(config, "kunit_arch")
        raise pytest.UsageError(f"{source}: {unknown[0]!r} is not one of: {', '.join(sorted(arches))}")
    return Settings(
        enabled=bool(enabled),
        kernel_src=_convert(
            config,
            "kunit_kernel_src",
            None,
            # The controller checked it; a worker on another host may have no kernel source at all (image_service.py).
            _resolved_path if hasattr(config, "workerinput") else _existing_path,
            "an existing kernel tarball or directory",
        ),
        patch_dirs=_patch_dirs(config),
        cache_dir=cache_dir(config),
        jobs=_convert(config, "kunit_jobs", os.cpu_count() or 1, _positive_int, "a positive whole number"),
        timeout=_convert(
            config,
            "kunit_timeout",
            120,
            _case_timeout,
            f"a whole number of seconds from 1 to {MAX_CASE_TIMEOUT} (what the kernel's kunit.timeout accepts)",
        ),
        boot_timeout=_convert(config, "kunit_boot_timeout", None, _positive_seconds, "a positive number of seconds"),
        accel=_convert(config, "kunit_accel", Accel.TCG, Accel, "one of auto, tcg, kvm"),
        raw=bool(_raw(config, "kunit_raw")[0]),
        isolate=_convert(config, "kunit_isolate", Isolate.NONE, Isolate, "one of none, suite, case"),
        reboot_after_crash=bool(_raw(config, "kunit_reboot_after_crash")[0]),
        qemu=_convert(config, "kunit_qemu", None, str, "a program"),
        arch=chosen[0],
        arches=chosen,
        wrapper=_convert(config, "kunit_wrapper", Wrapper.AUTO, Wrapper, "one of auto, ccache, distcc, sccache, none"),
        sanitize=_convert(config, "kunit_sanitize", (), _sanitizers, "a comma-separated list of: " + _SANITIZER_NAMES),
        kcidb=_convert(config, "kunit_kcidb", None, _path, "a path"),
        kcidb_origin=_convert(config, "kunit_kcidb_origin", "pytest_kunit", _origin, "an origin of a-z, 0-9 and _"),
        coverage=_coverage_dir(config),
        share_kernels=bool(_raw(config, "kunit_share_kernels")[0]),
        reuse_kernels=_convert(config, "kunit_reuse_kernels", True, _yes_no, "yes or no"),
        cache_max_age=max_age,
        cache_keep_consoles=keep_consoles,
        kconfig_add=knobs.kconfig_add(*_raw(config, "kunit_kconfig_add")),
        make_options=knobs.make_options(*_raw(config, "kunit_make_options")),
        kernel_args=knobs.kernel_args(*_raw(config, "kunit_kernel_args")),
        qemu_args=knobs.words(*_raw(config, "kunit_qemu_args")),
        cross_compile=knobs.cross_compile(*_raw(config, "kunit_cross_compile")),
        replay=_replay(config),
        modules=_modules(config),
        make_timeout=_convert(
            config, "kunit_make_timeout", DEFAULT_MAKE_TIMEOUT, _whole_number, "whole seconds, 0: none"
        ),
    )
