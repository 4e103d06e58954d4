"""The settings of a run, read only with --kunit: each option declared in options.py, from its flag, `-o`, ini key
(switch.py says which) or declared default, checked by its type's reader (readers.py) and resolved into one frozen
Settings value.

An unusable value is a `pytest.UsageError` naming the option or ini key it came from.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from ..arch import ARCHES
from ..model import Settings
from ..options import OPTIONS
from .readers import READERS
from .switch import raw

BY_NAME = {option.name: option for option in OPTIONS}


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
    if arches is None:
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
