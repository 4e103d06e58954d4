"""Which KUnit suites a kernel configured from one kunitconfig fragment would hold, and whether a bigger kernel
(one configured from several fragments' lines together, or any kernel already built) runs them exactly as the
fragment's own kernel would, told from that kernel's build so that the fragment need not be built alone.

Kbuild keeps the answers; nothing here reads C. A suite is in a kernel when the object whose suite table registers it
is linked into vmlinux: Kbuild's Makefiles decide that, and make evaluates them under the fragment's configuration
(kbuildlists). A linked suite object runs the same in both kernels only if nothing it is compiled from tests a symbol
the two configurations set differently: fixdep records in each object's .cmd file every CONFIG_ symbol its source and
each header it includes name (`$(wildcard include/config/X)`), under `#ifdef`, `#ifndef`, `IS_ENABLED()` alike. One
differing symbol there, and the caller builds the fragment alone, unless that object, compiled again under the
fragment's configuration (its own command from the .cmd file), registers no suite at all: then no suite of the
fragment's comes from it (KUnit's executor includes its own tests only with CONFIG_KUNIT_TEST).

Makefiles could link into the fragment's kernel a suite the bigger one lacks (`ifneq`, `ifndef`, an `else`): every
directory whose Kbuild file names a differing symbol is evaluated under both configurations, and the fragment's may
list nothing the union's does not. The flags every object is compiled with (KASAN's, GCOV's, UBSAN's) are make's to
evaluate for each configuration (kernel/configuring.compile_flags): before_build, asked first, compares them. Whatever
cannot be told for sure raises Unknown.

Names are those the objects register their suites under, as the kernel prints them (suitenames.py; the series'
module_test() suites take theirs from their struct kunit_module).
"""

from __future__ import annotations

import os
import re
import shlex
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..host.processes import ToolTimeout, run_bounded
from ..versions import SUITE_NAME_BYTES, suite_name_bytes
from .kbuildlists import MakeFailed, built_in, listings
from .records import CmdRecord, read_cmd, thin_members
from .suitenames import suite_names
from .suitetable import Opaque


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
    """Members of vmlinux.a (a thin archive, records.thin_members) with a suite table, and their suite names."""
    try:
        members = thin_members(build_dir / "vmlinux.a")
    except (OSError, ValueError) as error:  # records.NotARecord is a ValueError
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


def before_build(
    union: Mapping[str, str], alone: Mapping[str, str], union_flags: Mapping[str, str], alone_flags: Mapping[str, str]
) -> str:
    """Why the union kernel cannot stand for the fragment's, told before either is built (sharing.py asks before
    building a union): a setting of the fragment's the union lacks (unrepresentable), or other flags for every
    object (the configurations' compile flags as make evaluates them: UBSAN, KCSAN, FUNCTION_TRACER). "" if neither."""
    wrong = unrepresentable(union, alone)
    if wrong:
        return f"the union kernel cannot stand for this configuration: {', '.join(wrong[:5])}"
    flags = sorted(
        name for name in union_flags.keys() | alone_flags.keys() if union_flags.get(name) != alone_flags.get(name)
    )
    if flags:
        return f"every object is compiled with other flags ({', '.join(flags[:4])} as make evaluates them)"
    return ""


MAKEFILES = ("Makefile", "Kbuild")
COMPILE_TIMEOUT = 1800  # seconds to compile one object again: far above any kernel object's compile


def _record(build_dir: Path, path: str) -> CmdRecord:
    """The .cmd file Kbuild wrote beside an object: how it was compiled and from which files."""
    try:
        return read_cmd(build_dir, path)
    except OSError as error:
        raise Unknown(f"how {path} was compiled is not known: {error}") from error


def fixdep_symbols(build_dir: Path, path: str) -> set[str]:
    """The CONFIG_ symbols the object's source and every header it includes name, as fixdep recorded them."""
    record = _record(build_dir, path)
    if record.deps is None:
        raise Unknown(f"the .cmd file of {path} records no dependencies")
    return set(record.config_symbols)


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


def compile_command(record: CmdRecord, output: Path, header_dir: Path) -> list[str]:
    """The object's compile command from its .cmd file, writing `output` (and its dependency file beside it) and
    finding `<generated/autoconf.h>` in `header_dir` first; what follows the compile (objtool) is left out."""
    path = record.target
    if record.command is None:
        raise Unknown(f"the .cmd file of {path} has no command")
    arguments = shlex.split(record.command.split(";")[0])
    outputs = [index for index, argument in enumerate(arguments) if argument == "-o"]
    if len(outputs) != 1 or arguments[outputs[0] + 1 : outputs[0] + 2] != [path]:
        raise Unknown(f"the compile command of {path} does not write {path}")
    arguments[outputs[0] + 1] = str(output)
    arguments = [f"-Wp,-MMD,{output}.d" if argument.startswith("-Wp,-MMD,") else argument for argument in arguments]
    first_option = next((index for index, argument in enumerate(arguments) if argument.startswith("-")), 0)
    return [*arguments[:first_option], f"-I{header_dir}", *arguments[first_option:]]


def registers_alone(build_dir: Path, path: str, scratch: Path) -> tuple[str, ...]:
    """The suites the object registers compiled under the fragment's configuration (its autoconf.h in
    `scratch`/include): its own compile command from its .cmd file, run again."""
    output = scratch / "objects" / path
    output.parent.mkdir(parents=True, exist_ok=True)
    command = compile_command(_record(build_dir, path), output, scratch / "include")
    try:
        done = run_bounded(command, COMPILE_TIMEOUT, f"Compiling {path}", cwd=build_dir, text=True)
    except ToolTimeout as error:
        raise Unknown(error.what) from None
    if done.returncode:
        raise Unknown(f"{path} does not compile under the fragment's configuration: {done.stderr.strip()[-300:]}")
    return _names(output)


def _naming(symbols: set[str]) -> re.Pattern[str]:
    return re.compile(r"\bCONFIG_(?:" + "|".join(sorted(re.escape(s[7:]) for s in symbols)) + r")\b")


def directories_naming(tree: Path, symbols: set[str]) -> list[str]:
    """The directories (relative to the tree) whose Kbuild file names one of `symbols`: only there can the two
    configurations list different objects or subdirectories."""
    if not symbols:
        return []
    names = _naming(symbols)
    found = []
    for directory, subdirectories, files in os.walk(tree):
        subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
        kbuild = next((name for name in MAKEFILES[::-1] if name in files), None)  # Kbuild before Makefile
        if kbuild is None:
            continue
        path = Path(directory) / kbuild
        try:
            text = path.read_text(errors="replace")
        except OSError as error:
            raise Unknown(f"{path} cannot be read: {error}") from error
        if names.search(text):
            found.append(os.path.relpath(directory, tree))
    return found


def _only_alone(
    tree: Path, build_dir: Path, union: Mapping[str, str], alone: Mapping[str, str], symbols: set[str], scratch: Path
) -> list[str]:
    """What the fragment's kernel would list that the union's does not, in the directories whose Kbuild files name a
    differing symbol (make evaluates both: `ifneq`, `else`, `$(if)` alike): an object, or a whole directory, whose
    suites the union's build cannot show."""
    directories = directories_naming(tree, symbols)
    if not directories:
        return []
    srcarch = _srcarch(build_dir)
    try:
        theirs = listings(tree, union, directories, srcarch, scratch, "union-dirs")
        mine = listings(tree, alone, directories, srcarch, scratch, "alone-dirs")
    except (MakeFailed, OSError) as error:
        raise Unknown(str(error)) from error
    extra = []
    for directory in directories:
        extra += sorted(mine[directory].objects - theirs[directory].objects)
        extra += sorted(f"{name}/" for name in mine[directory].directories - theirs[directory].directories)
    return extra


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
    """The suite names a kernel configured as `alone` would hold, read from the union build (configured as `union`),
    which runs them as that kernel would. Configs are dicts CONFIG_X -> value as
    pytest_kunit.kernel.kconfig.read_dotconfig returns (unset symbols absent). `scratch`: a directory it may write
    (make's driver files). Raises Unknown."""
    if suite_name_bytes(tree) != SUITE_NAME_BYTES:
        raise Unknown(
            f"{tree}/include/kunit/test.h does not define struct kunit_suite as starting with char "
            f"name[{SUITE_NAME_BYTES}], where the suite tables' names are read"
        )
    wrong = unrepresentable(union, alone)
    if wrong:
        raise Unknown(f"the union kernel cannot stand for this configuration: {', '.join(wrong[:5])}")
    symbols = differing(union, alone)
    objects = suite_objects(build_dir)
    linked = _linked(tree, build_dir, union, alone, [item.path for item in objects], scratch)
    kept = []
    header = scratch / "include/generated/autoconf.h"
    for item in (item for item in objects if item.path in linked):
        tested = fixdep_symbols(build_dir, item.path) & symbols
        if tested:
            # Linked in both kernels, compiled otherwise: if the fragment's own compile registers no suite (the
            # executor without its tests), no suite of the fragment's comes from it; if it registers any, that
            # suite's sources test a differing symbol.
            if not header.exists():
                header.parent.mkdir(parents=True, exist_ok=True)
                header.write_text(autoconf_header(alone))
            if registers_alone(build_dir, item.path, scratch):
                raise Unknown(_tests(item, tested))
            continue
        kept.append(item)
    extra = _only_alone(tree, build_dir, union, alone, symbols, scratch)
    if extra:
        raise Unknown(f"the fragment's own kernel would link what the union's does not: {', '.join(extra[:5])}")
    return {name for item in kept for name in item.suites}


def _tests(item: SuiteObject, tested: set[str]) -> str:
    shown = ", ".join(sorted(tested)[:4]) + (f" and {len(tested) - 4} more" if len(tested) > 4 else "")
    return (
        f"{item.path} (suite {', '.join(item.suites)}) is compiled from sources that test {shown}, "
        "which the two configurations set differently"
    )
