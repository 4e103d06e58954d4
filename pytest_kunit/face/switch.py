"""The switch that keeps the plugin inert: whether --kunit (or its ini key) is on, and where any option's raw value
came from. Every pytest run reads this much of the plugin; the rest of the settings are resolved (settings.py) only
with --kunit.

Precedence: a command-line option beats `-o key=value` (pytest's --override-ini), which beats the ini file.
"""

from __future__ import annotations

from typing import Any

import pytest


def _overridden(config: pytest.Config, name: str) -> bool:
    """Whether `-o name=value` (pytest's --override-ini, which beats the ini file) sets this ini key."""
    overrides: list[str] = config.getoption("override_ini") or []
    return any(override.partition("=")[0].strip() == name for override in overrides)


def raw(config: pytest.Config, name: str) -> tuple[Any, str]:
    """The value and a description of where it came from: `--flag`, `-o key`, `ini key ... in FILE`; (None,
    "default") when it was given nowhere."""
    value = config.getoption(name)
    if value is not None:
        return value, "--" + name.replace("_", "-")
    where = f"-o {name}" if _overridden(config, name) else f"ini key {name!r} in {config.inipath or 'the ini file'}"
    try:
        ini = config.getini(name)
    except (ValueError, pytest.UsageError) as error:  # pytest 9.2 raises a bad value as a UsageError naming no key
        raise pytest.UsageError(f"{where}: {error}") from None
    if ini not in (None, "", []):
        return ini, where
    return None, "default"


def in_ini_file(source: str) -> bool:
    """Whether a value came from an ini file, whose relative paths are relative to the rootdir; a value typed on the
    command line (a flag or -o) is relative to the directory pytest was started in."""
    return source.startswith("ini key ")


def is_enabled(config: pytest.Config) -> bool:
    """Whether --kunit (or its ini key) is on: the one setting a run without it reads."""
    return bool(raw(config, "kunit")[0])


def flag(config: pytest.Config, name: str) -> bool:
    """Whether the flag `name` (or its ini key) is on."""
    return bool(raw(config, name)[0])


def given(config: pytest.Config, name: str) -> str | None:
    """Where the setting `name` was given (its flag, -o, or its ini key in a file), or None if it was not."""
    value, source = raw(config, name)
    return None if value is None else source
