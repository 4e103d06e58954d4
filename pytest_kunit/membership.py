"""Which KUnit suites a kernel configured from one kunitconfig fragment would hold, told from a bigger "union" build
(one kernel configured from several fragments' lines together), so that fragment need not be built alone.

A suite is in a kernel when the object whose suite table registers it is linked into vmlinux and, compiled under that
kernel's configuration, still registers it. Linking is decided by Kbuild's Makefiles, which make evaluates under the
fragment's configuration (kbuildlists); compiling, by the `#if`s in the object's own sources: an object whose sources
mention a symbol the two configurations set differently is compiled again under the fragment's, and must then
register some of the union's suites, each with the same cases, since the union kernel is what runs them. Whatever
cannot be told for sure raises Unknown, and the caller builds the fragment alone.

Not looked at: `#if`s in headers (only the object's .c files are read), and objects the union's vmlinux.a lacks or
holds without a suite table, which the fragment's kernel would link or give one only through a negative condition
(`ifneq ($(CONFIG_X),y)`, `#ifndef CONFIG_X`) on a symbol the union sets and the fragment does not.

Names are those stored in the objects. The series' module_test() suites are renamed at boot from their kunit_module
(`test_module` prints as `My_fabulous_test_module`); the order is the same (table order, then link order, which the
executor keeps), so a caller matches them by position against the union kernel's list.
"""

from __future__ import annotations

import os
import re
import shlex
import struct
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .kbuildlists import MakeFailed, built_in
from .processes import ToolTimeout, run_bounded
from .suitetable import Opaque, suite_digests, suite_names, thin_members

COMPILE_TIMEOUT = 1800  # seconds to compile one object again: far above any kernel object's compile
_CONFIG = re.compile(r"\bCONFIG_[A-Za-z0-9_]+")


@dataclass(frozen=True)
class SuiteObject:
    path: str  # relative to the build directory, e.g. "lib/kunit/kunit-example-test.o"
    suites: tuple[str, ...]  # the suite names its .kunit_test_suites table registers, in order


class Unknown(Exception):
    """Membership cannot be told for sure: the caller builds the fragment alone. str() says why, for a log line."""


def _names(path: Path) -> tuple[str, ...]:
    try:
        return suite_names(path)
    except (Opaque, OSError, ValueError, struct.error) as error:
        raise Unknown(f"the suite table of {path} cannot be read: {error}") from error


def suite_objects(build_dir: Path) -> list[SuiteObject]:
    """Members of vmlinux.a (thin archive; see suitetable.thin_members) with a suite table, and their suite names."""
    try:
        members = thin_members(build_dir / "vmlinux.a")
    except (Opaque, OSError, ValueError) as error:
        raise Unknown(f"{build_dir}/vmlinux.a cannot be read: {error}") from error
    objects = [SuiteObject(os.path.normpath(member), _names(build_dir / member)) for member in members]
    return [item for item in objects if item.suites]


def unrepresentable(union: Mapping[str, str], alone: Mapping[str, str]) -> list[str]:
    """The fragment's settings the union kernel does not have: built in where the union is not (y against m or
    unset), enabled where the union is not, or another value (string, number). Only a fragment that asks for less
    than the union can be read from it."""
    wrong = []
    for symbol, value in sorted(alone.items()):
        held = union.get(symbol, "n")
        if value != held and not (value == "m" and held == "y"):
            wrong.append(f"{symbol}={value} (union: {held if held != 'n' else 'not set'})")
    return wrong


def differing(union: Mapping[str, str], alone: Mapping[str, str]) -> set[str]:
    """The symbols the two configurations set differently (unset counts as a value)."""
    return {symbol for symbol in union.keys() | alone.keys() if union.get(symbol, "n") != alone.get(symbol, "n")}


def mentioned(text: str, symbols: set[str]) -> set[str]:
    """Which of `symbols` a source names, as CONFIG_X or as CONFIG_X_MODULE (what autoconf.h defines for m)."""
    tokens = set(_CONFIG.findall(text))
    return {name for token in tokens for name in (token, token.removesuffix("_MODULE")) if name in symbols}


def autoconf_header(config: Mapping[str, str]) -> str:
    """include/generated/autoconf.h as Kconfig writes it: y as `CONFIG_X 1`, m as `CONFIG_X_MODULE 1`, strings quoted
    as in .config, numbers as they are, unset symbols absent."""
    lines = ["/* Written by pytest-kunit from a .config, as Kconfig writes it. */"]
    for symbol, value in sorted(config.items()):
        if value == "y":
            lines.append(f"#define {symbol} 1")
        elif value == "m":
            lines.append(f"#define {symbol}_MODULE 1")
        elif value != "n":
            lines.append(f"#define {symbol} {value}")
    return "\n".join(lines) + "\n"


def _command_file(build_dir: Path, path: str) -> str:
    """The .cmd file Kbuild wrote beside an object: how it was compiled and from which files."""
    directory, name = os.path.split(path)
    try:
        return (build_dir / directory / f".{name}.cmd").read_text()
    except OSError as error:
        raise Unknown(f"how {path} was compiled is not known: {error}") from error


def own_sources(build_dir: Path, path: str, command_file: str) -> list[Path]:
    """The object's source and the .c files it includes (`source_`, `deps_` entries), headers left out."""
    source = re.search(rf"^source_{re.escape(path)} := (\S+)$", command_file, re.MULTILINE)
    deps = re.search(rf"^deps_{re.escape(path)} :=(.*?)(?<!\\)\n", command_file, re.MULTILINE | re.DOTALL)
    if source is None or deps is None:
        raise Unknown(f"the .cmd file of {path} names no source")
    names = [source[1], *(token for token in deps[1].split() if token.endswith(".c") and token != source[1])]
    return [build_dir / name for name in names]  # absolute names stay absolute


def compile_command(path: str, command_file: str, output: Path, header_dir: Path) -> list[str]:
    """The object's compile command from its .cmd file, writing `output` (and its dependency file beside it) and
    finding `<generated/autoconf.h>` in `header_dir` first; what follows the compile (objtool) is left out."""
    line = re.search(rf"^(?:saved)?cmd_{re.escape(path)} := (.*)$", command_file, re.MULTILINE)
    if line is None:
        raise Unknown(f"the .cmd file of {path} has no command")
    unescaped = re.sub(r"\$\$|\$\(pound\)", lambda match: "$" if match[0] == "$$" else "#", line[1])
    arguments = shlex.split(unescaped.split(";")[0])
    outputs = [index for index, argument in enumerate(arguments) if argument == "-o"]
    if len(outputs) != 1 or arguments[outputs[0] + 1 : outputs[0] + 2] != [path]:
        raise Unknown(f"the compile command of {path} does not write {path}")
    arguments[outputs[0] + 1] = str(output)
    arguments = [f"-Wp,-MMD,{output}.d" if argument.startswith("-Wp,-MMD,") else argument for argument in arguments]
    first_option = next((index for index, argument in enumerate(arguments) if argument.startswith("-")), 0)
    return [*arguments[:first_option], f"-I{header_dir}", *arguments[first_option:]]


def _digests(path: Path) -> tuple[tuple[str, str], ...]:
    try:
        return suite_digests(path)
    except (Opaque, OSError, ValueError, struct.error) as error:
        raise Unknown(f"the suites of {path} cannot be compared: {error}") from error


def _recompiled(build_dir: Path, path: str, command_file: str, scratch: Path) -> tuple[str, ...]:
    """The suite names of the object compiled again under the configuration written in `scratch`/include. Each must
    be a suite the union's object registers, with the same cases: the union kernel runs that one."""
    output = scratch / "objects" / path
    output.parent.mkdir(parents=True, exist_ok=True)
    command = compile_command(path, command_file, output, scratch / "include")
    try:
        done = run_bounded(command, COMPILE_TIMEOUT, f"Compiling {path}", cwd=build_dir, text=True)
    except ToolTimeout as error:
        raise Unknown(error.what) from None
    if done.returncode:
        raise Unknown(f"{path} does not compile under the fragment's configuration: {done.stderr.strip()[-300:]}")
    alone = _digests(output)
    union = set(_digests(build_dir / path)) if alone else set()
    differ = [name for name, digest in alone if (name, digest) not in union]
    if differ:
        raise Unknown(f"under the fragment's configuration {path} registers {', '.join(differ)} unlike the union's")
    return tuple(name for name, _ in alone)


def _suites(build_dir: Path, item: SuiteObject, symbols: set[str], scratch: Path) -> tuple[str, ...]:
    """An object's suites under the fragment's configuration: the union's, unless its sources name a symbol the
    configurations set differently."""
    command_file = _command_file(build_dir, item.path)
    for source in own_sources(build_dir, item.path, command_file):
        try:
            text = source.read_text(errors="replace")
        except OSError as error:
            raise Unknown(f"a source of {item.path} cannot be read: {error}") from error
        if mentioned(text, symbols):
            return _recompiled(build_dir, item.path, command_file, scratch)
    return item.suites


def _srcarch(build_dir: Path) -> str:
    """The tree's architecture directory (x86 for x86_64), from the arch/ directories a build directory has: one, or
    UML's `um` beside its host's ("um/x86")."""
    names = sorted(entry.name for entry in (build_dir / "arch").iterdir() if entry.is_dir())
    if len(names) == 2 and "um" in names:
        return "um/" + next(name for name in names if name != "um")
    if len(names) != 1:
        raise Unknown(f"{build_dir}/arch does not name one architecture: {names}")
    return names[0]


def _linked(
    tree: Path, build_dir: Path, union: Mapping[str, str], alone: Mapping[str, str], paths: list[str], scratch: Path
) -> set[str]:
    """Which suite objects `alone` links, once the same evaluation under `union` reproduced the union's vmlinux.a."""
    srcarch = _srcarch(build_dir)
    try:
        missed = sorted(set(paths) - built_in(tree, union, paths, srcarch, scratch, "union"))
        if missed:
            raise Unknown(f"Kbuild's Makefiles, as read here, do not link {', '.join(missed)} into the union kernel")
        return built_in(tree, alone, paths, srcarch, scratch, "alone")
    except (MakeFailed, OSError) as error:
        raise Unknown(str(error)) from error


def suites_alone(
    tree: Path, build_dir: Path, union: Mapping[str, str], alone: Mapping[str, str], scratch: Path
) -> set[str]:
    """The suite names a kernel configured as `alone` would hold, read from the union build (configured as `union`).
    Configs are dicts CONFIG_X -> value as pytest_kunit.kconfig.read_dotconfig returns (unset symbols absent).
    `scratch`: a directory it may write (compiles, generated headers). Raises Unknown."""
    wrong = unrepresentable(union, alone)
    if wrong:
        raise Unknown(f"the union kernel cannot stand for this configuration: {', '.join(wrong[:5])}")
    objects = suite_objects(build_dir)
    linked = _linked(tree, build_dir, union, alone, [item.path for item in objects], scratch)
    header = scratch / "include/generated/autoconf.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(autoconf_header(alone))
    symbols = differing(union, alone)
    kept = [item for item in objects if item.path in linked]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        found = list(pool.map(lambda item: _suites(build_dir, item, symbols, scratch), kept))
    return {name for names in found for name in names}
