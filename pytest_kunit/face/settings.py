"""The settings of a run, read only with --kunit: each option declared in options.py, from its flag, `-o`, ini key
(switch.py says which) or declared default, checked by its type's reader and resolved into one frozen Settings value.

An unusable value is a `pytest.UsageError` naming the option or ini key it came from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..options import COVERAGE_DIR, OPTIONS
from ..optiontypes import Option
from . import knobs
from .switch import in_ini_file, raw

if TYPE_CHECKING:
    from ..model import Settings

# (the run's config, the option, its value as given, where it was given) -> the value its Settings field holds
Reader = Callable[[pytest.Config, Option, Any, str], Any]
BY_NAME = {option.name: option for option in OPTIONS}


def _convert(config: pytest.Config, option: Option, value: Any, source: str, convert: Callable[[Any], Any]) -> Any:
    written = value
    if option.type.path and in_ini_file(source):
        # Paths in an ini file are relative to the rootdir, wherever pytest was started.
        value = str(config.rootpath / str(value))
    try:
        return convert(value)
    except (ValueError, TypeError):
        raise pytest.UsageError(f"{source}: {written!r} is not {option.type.expected}") from None


def _converted(convert: Callable[[Any], Any]) -> Reader:
    """The reader of a type whose values one function converts, refusing with ValueError or TypeError."""
    return lambda config, option, value, source: _convert(config, option, value, source, convert)


def _choice(config: pytest.Config, option: Option, value: Any, source: str) -> Any:
    assert option.type.choices is not None, option
    return _convert(config, option, value, source, option.type.choices)


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


def _case_timeout(value: Any) -> int:
    from ..versions import MAX_CASE_TIMEOUT

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


def _existing_path(value: Any) -> Path:
    path = Path(str(value)).expanduser()
    if not path.exists():
        raise ValueError
    return path.resolve()


def _kernel_source(config: pytest.Config, option: Option, value: Any, source: str) -> Path:
    # The controller checked it; a worker on another host may have no kernel source at all (image_service.py).
    resolved: Callable[[Any], Path] = _path if hasattr(config, "workerinput") else _existing_path
    found: Path = _convert(config, option, value, source, lambda value: resolved(value).resolve())
    return found


def _sanitizers(value: Any) -> tuple[str, ...]:
    from ..findings.sanitizers import parse_names

    return parse_names(str(value))


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


def _coverage_dir(config: pytest.Config, option: Option, value: Any, source: str) -> Path | None:
    """--kunit-coverage's report directory: the flag alone means kunit-coverage/ where pytest was started (or, from an
    ini file, beside it); a fragment given as its value was meant as a test to run."""
    text = str(value)
    if text.lower() in ("false", "no", "0"):
        return None
    if text.endswith(".kunitconfig") or (config.invocation_params.dir / text).is_file():
        raise pytest.UsageError(
            f"{source}: {text!r} is a file, not a report directory; write --kunit-coverage=DIR, or put "
            "--kunit-coverage after the fragments"
        )
    base = config.rootpath if in_ini_file(source) else config.invocation_params.dir
    if text in ("", "true", "yes", "1"):
        text = COVERAGE_DIR
    return (base / text).expanduser().resolve()


def _patch_dirs(config: pytest.Config, option: Option, value: Any, source: str) -> tuple[Path, ...]:
    entries = [str(entry) for entry in value]
    if entries == ["none"]:
        return ()
    from ..kernel.tree import patch_series

    dirs = []
    base = config.rootpath if in_ini_file(source) else config.invocation_params.dir
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


def _replay(config: pytest.Config, option: Option, value: Any, source: str) -> Path:
    """--kunit-replay's console: `-` (stdin), or a file that exists (relative to the rootdir in an ini file)."""
    from ..model import STDIN

    if str(value) == str(STDIN):
        return STDIN
    base = config.rootpath if in_ini_file(source) else config.invocation_params.dir
    path = (base / str(value)).expanduser()
    if not path.is_file():
        raise pytest.UsageError(f"{source}: {str(value)!r} is not a file: name a saved console, or - for stdin")
    return path.resolve()


def _knob(check: Callable[[Any, str], Any]) -> Reader:
    """The reader of one of kunit.py's knobs, which knobs.py checks."""
    return lambda config, option, value, source: check(value, source)


# One reader for each Type of optiontypes.py.
READERS: dict[str, Reader] = {
    "flag": lambda config, option, value, source: bool(value),
    "program": _converted(str),
    "path": _converted(_path),
    "existing path": _converted(_existing_path),
    "kernel source": _kernel_source,
    "patch directories": _patch_dirs,
    "coverage": _coverage_dir,
    "console": _replay,
    "positive whole": _converted(_positive_int),
    "whole": _converted(_whole_number),
    "make seconds": _converted(_whole_number),
    "case seconds": _converted(_case_timeout),
    "seconds": _converted(_positive_seconds),
    "choice": _choice,
    "yes/no": _converted(_yes_no),
    "names": _converted(_names),
    "sanitizers": _converted(_sanitizers),
    "origin": _converted(_origin),
    "kconfig lines": _knob(knobs.kconfig_add),
    "make words": _knob(knobs.make_options),
    "kernel words": _knob(knobs.kernel_args),
    "shell words": _knob(knobs.words),
    "prefix": _knob(knobs.cross_compile),
}


def read(config: pytest.Config, name: str) -> Any:
    """The option `name`'s value: as given, checked by its type's reader; else its declared default."""
    option = BY_NAME[name]
    value, source = raw(config, name)
    if value is None:
        return option.default_value()
    return READERS[option.type.name](config, option, value, source)


def cache_dir(config: pytest.Config) -> Path:
    found: Path = read(config, "kunit_cache_dir")
    return found


def cache_bounds(config: pytest.Config) -> tuple[int, int]:
    """The cache's eviction bounds: days a big entry may go unused, runs whose consoles stay (0: no bound)."""
    return read(config, "kunit_cache_max_age"), read(config, "kunit_cache_keep_consoles")


def arch_config_path(config: pytest.Config) -> Path | None:
    """--kunit-arch-config's file, which must exist (read before the other settings: it adds architectures)."""
    found: Path | None = read(config, "kunit_arch_config")
    return found


def resolve(config: pytest.Config, arches: Collection[str] | None = None) -> Settings:
    """The settings; `arches` names the architectures there are (default: arch.py's table)."""
    from ..model import Settings

    if arches is None:
        from ..arch import ARCHES

        arches = ARCHES
    chosen: tuple[str, ...] = read(config, "kunit_arch")
    unknown = [name for name in chosen if name not in arches]
    if unknown:
        _, source = raw(config, "kunit_arch")
        raise pytest.UsageError(f"{source}: {unknown[0]!r} is not one of: {', '.join(sorted(arches))}")
    fields: dict[str, Any] = {"arches": chosen}
    for option in OPTIONS:
        if option.settings_field is not None and option.name != "kunit_arch":
            fields[option.settings_field] = read(config, option.name)
    if fields["modules"] and fields["share_kernels"]:
        _, source = raw(config, "kunit_modules")
        raise pytest.UsageError(
            f"{source} cannot be combined with --kunit-share-kernels: drop one of them (module mode builds each "
            "fragment's kernel on its own)."
        )
    return Settings(arch=chosen[0], **fields)
