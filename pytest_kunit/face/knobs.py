"""kunit.py's knobs as options: each raw value (and where it came from, for errors) checked into what the build and
the boots add to their own: kconfig lines, make options, kernel and QEMU arguments, a cross compiler's prefix."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest


def kconfig_add(value: Any, source: str) -> tuple[str, ...]:
    """--kunit-kconfig-add's lines, each checked as a fragment's line is (the same parser); errors name each by its
    place among them (`--kunit-kconfig-add:2`), as a file's by its line."""
    from ..errors import ConfigError
    from ..kernel.kconfig import parse_fragment

    lines = tuple(line for entry in value for line in str(entry).splitlines())
    try:
        parse_fragment("\n".join(lines), "--kunit-kconfig-add")
    except ConfigError as error:
        raise pytest.UsageError(f"{source}: {error.render()}") from None
    return lines


# Words of --kunit-make-options that pytest-kunit sets itself, and the option that sets each instead.
_OWN_MAKE_WORDS = {
    "ARCH": "--kunit-arch",
    "O": "--kunit-cache-dir (every build has a directory of its own there)",
    "CROSS_COMPILE": "--kunit-cross-compile (it also decodes crash reports)",
    "-C": "--kunit-kernel-src",
    "--directory": "--kunit-kernel-src",
}
# Kernel parameters of --kunit-kernel-args that would undo pytest-kunit's own choice of cases.
_OWN_KERNEL_ARGS = ("kunit.filter_glob", "kunit.filter", "kunit.action")


def _occurrences(value: Any) -> list[str]:
    """A repeatable option's occurrences, in the order given (its flag given again, or its ini key's lines)."""
    return [str(entry) for entry in value]


def words(value: Any, source: str) -> tuple[str, ...]:
    """An option's words, each occurrence split as a shell splits it (no shell runs), all in the order given."""
    found: list[str] = []
    for occurrence in _occurrences(value):
        try:
            found.extend(shlex.split(occurrence))
        except ValueError as error:
            raise pytest.UsageError(f"{source}: {occurrence!r} does not split into words: {error}") from None
    return tuple(found)


def make_options(value: Any, source: str) -> tuple[str, ...]:
    """--kunit-make-options' words, none of them one pytest-kunit sets itself."""
    split = words(value, source)
    for word in split:
        name = word.split("=", 1)[0]
        if name in _OWN_MAKE_WORDS or (word.startswith("-C") and len(word) > 2):
            instead = _OWN_MAKE_WORDS.get(name, _OWN_MAKE_WORDS["-C"])
            raise pytest.UsageError(f"{source}: pytest-kunit sets {name} itself: use {instead}")
    return split


# A kernel command-line word, as the kernel's next_arg() reads it: up to whitespace outside double quotes, which stay.
_KERNEL_WORD = re.compile(r'(?:[^\s"]+|"[^"]*")+')


def kernel_parameter(word: str) -> str:
    """The name of the parameter a command-line word sets, as the kernel reads it: next_arg() (lib/cmdline.c) drops
    the double quote a word may start with and ends the name at the first `=` (in a quoted word without one, at the
    closing quote); parameq() (kernel/params.c) takes a dash in a name for an underscore."""
    quoted = word.startswith('"')
    name, equals, _ = word.removeprefix('"').partition("=")
    if quoted and not equals:
        name = name.removesuffix('"')
    return name.replace("-", "_")


def kernel_args(value: Any, source: str) -> tuple[str, ...]:
    """--kunit-kernel-args' words, each occurrence split as the kernel splits its command line (quotes kept:
    `x="a b"` is one), none setting a parameter that chooses the cases."""
    found: list[str] = []
    for occurrence in _occurrences(value):
        if occurrence.count('"') % 2:
            raise pytest.UsageError(f"{source}: {occurrence!r} has an unclosed double quote")
        found.extend(_KERNEL_WORD.findall(occurrence))
    for word in found:
        if kernel_parameter(word) in _OWN_KERNEL_ARGS:
            raise pytest.UsageError(
                f"{source}: {word!r} would change which cases the kernel runs, which pytest-kunit chooses: select "
                "cases with -k, -m or node ids"
            )
    return tuple(found)


def cross_compile(value: Any, source: str) -> str:
    """--kunit-cross-compile's prefix: a compiler name's start, with no spaces."""
    prefix = str(value)
    if any(character.isspace() for character in prefix):
        raise pytest.UsageError(f"{source}: {prefix!r} is not a compiler prefix (aarch64-linux-gnu-, with no spaces)")
    return prefix
