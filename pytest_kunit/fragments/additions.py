"""What a run adds to every fragment's kernel, gathered once at the session's start: --kunit-sanitize's and
--kunit-coverage's options, --kunit-kconfig-add's lines, the pytest_kunit_kconfig hooks'."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

import pytest

from ..arch import Arch
from ..errors import ConfigError
from ..findings import coverage
from ..findings.sanitizers import kconfig_lines as sanitizer_kconfig
from ..findings.sanitizers import refuse_unsupported
from ..kernel.assembly import Additions
from ..kernel.kconfig import Fragment, parse_fragment
from ..model import Settings


def _lines(value: object) -> list[str] | None:
    """A hook's result as text lines: a string's lines, or an iterable's strings; None if it is neither."""
    if isinstance(value, str):
        return value.splitlines()
    if isinstance(value, Iterable):
        lines = list(value)
        return lines if all(isinstance(line, str) for line in lines) else None
    return None


def run_additions(config: pytest.Config, settings: Settings) -> Additions:
    """The run's additions to each fragment (kernel/assembly.py), from its options and its conftests' hooks."""

    def hooked(path: Path, arch: Arch) -> Fragment:
        """What the pytest_kunit_kconfig hooks add to the kernel built from `path` for `arch`."""
        lines: list[str] = []
        for added in config.hook.pytest_kunit_kconfig(config=config, fragment=path, arch=arch):
            if added is None:
                continue
            words = _lines(added)
            if words is None:
                raise ConfigError(
                    f"A pytest_kunit_kconfig hook returned {added!r} for {path}.",
                    "return kunitconfig lines: a string, a list of strings, or None.",
                )
            lines.extend(words)
        return parse_fragment("\n".join(lines), "pytest_kunit_kconfig hook")

    # --kunit-sanitize's options, each line's origin naming its sanitizer (so a dropped one is named).
    options = Fragment(())
    for name, lines in sanitizer_kconfig(settings.sanitize).items():
        options = options + parse_fragment("\n".join(lines), f"--kunit-sanitize {name}")
    if settings.coverage is not None:
        options = options + parse_fragment("\n".join(coverage.KCONFIG), "--kunit-coverage")
    # --kunit-kconfig-add's lines (checked when the option was read), each named by its place among them.
    added = parse_fragment("\n".join(settings.kconfig_add), "--kunit-kconfig-add")
    return Additions(options, added, hooked, functools.partial(refuse_unsupported, settings.sanitize))
