"""How each type of option value is read: one reader per Type of optiontypes.py, which checks a value as given (a
flag, `-o`, an ini key) and makes it what its Settings field holds. An unusable value is a `pytest.UsageError`
naming the option or ini key it came from."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..findings.sanitizers import parse_names
from ..kernel.tree import patch_series
from ..model import STDIN
from ..options import COVERAGE_DIR
from ..optiontypes import Option
from ..versions import MAX_CASE_TIMEOUT
from . import knobs
from .switch import in_ini_file

# (the run's config, the option, its value as given, where it was given) -> the value its Settings field holds
Reader = Callable[[pytest.Config, Option, Any, str], Any]


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
