"""Which objects Kbuild links into vmlinux under a given configuration, told by Kbuild's own Makefiles.

Each directory's `Kbuild` (else `Makefile`) is read by GNU make through a small driver, as scripts/Makefile.build
reads it, and make prints the resulting `obj-y` and each composite's parts: whatever conditions a Makefile uses
(`obj-$(CONFIG_X)`, `ifeq` blocks, variables), make evaluates them, not us. Make parses only: the driver's own goal
has no recipe, `-n` keeps make from running the goals' recipes, and every recipe's shell is /bin/false for the ones
`-n` does not stop (those remaking an included makefile): such a Makefile fails to read instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..host.processes import ToolTimeout, run_bounded

_GOAL = "pytest-kunit-lists"
READ_TIMEOUT = 600  # seconds for make to read one directory's makefiles (it runs no recipe): far above the usual
_HEAD = """\
.DEFAULT_GOAL := {goal}
%: SHELL := /bin/false
include {autoconf}
srctree := {tree}
objtree := .
SRCARCH := {srcarch}
ARCH := {srcarch}
SUBARCH := {subarch}
"""
# The top Makefile's part: the directories the arch Makefile adds, which the root Kbuild lists as $(ARCH_CORE) etc.,
# and what it sets that directories' Makefiles use in object names (x86: `entry_$(BITS).o`).
_ARCH = """\
core-y :=
drivers-y :=
libs-y := lib/
include $(srctree)/arch/$(SRCARCH)/Makefile
$(info {goal}-arch ARCH_CORE := $(core-y))
$(info {goal}-arch ARCH_LIB := $(filter %/, $(libs-y)))
$(info {goal}-arch ARCH_DRIVERS := $(drivers-y) $(drivers-m))
$(info {goal}-arch BITS := $(BITS))
{goal}: ;
"""
# scripts/Makefile.build's part: one directory's Kbuild file read, its obj-y and composites' parts (Makefile.lib's
# real-search: `foo.o` stands for $(foo-objs) $(foo-y)) printed.
_DIRECTORY = """\
src := {directory}
obj := {directory}
{arch}
include {kbuild}
$(info {goal}-obj $(obj-y))
$(foreach m,$(filter %.o,$(obj-y)),$(info {goal}-part $(m) $($(m:.o=-objs)) $($(m:.o=-y))))
{goal}: ;
"""


class MakeFailed(Exception):
    """Make could not read a directory's Makefile: what it would link there is not known."""


@dataclass(frozen=True)
class Listing:
    """What one directory's Makefile puts in obj-y, as paths relative to the tree's root."""

    directories: frozenset[str]  # "lib/kunit": a subdirectory whose built-in objects are linked
    objects: frozenset[str]  # "lib/kunit/executor.o": directly listed, or a part of a listed composite


def write_autoconf(config: Mapping[str, str], path: Path) -> Path:
    """include/config/auto.conf as Kconfig writes it: the set symbols, as make variables."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{symbol}={value}\n" for symbol, value in sorted(config.items()) if value != "n"))
    return path


def _relative(directory: str, entry: str) -> str:
    return os.path.normpath(os.path.join(directory, entry))


def _make(tree: Path, scratch: Path, name: str, text: str) -> list[str]:
    """The lines a driver makefile prints while make reads it; make runs no recipe. Makefiles that include others
    by paths relative to the tree find them as in Kbuild's own make (`--include-dir`)."""
    driver = scratch / f"{name}.mk"
    driver.write_text(text)
    environment = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    command = [
        "make",
        "-n",
        "-r",
        "-R",
        "-s",
        "--no-print-directory",
        f"--include-dir={tree}",
        "-f",
        driver.name,
        _GOAL,
    ]
    try:
        done = run_bounded(command, READ_TIMEOUT, f"make reading {driver}", cwd=scratch, env=environment, text=True)
    except ToolTimeout as error:
        raise MakeFailed(error.what) from None
    if done.returncode:
        raise MakeFailed(f"make could not read {driver}: {done.stderr.strip()[-500:]}")
    lines: list[str] = done.stdout.splitlines()
    return lines


def _head(tree: Path, autoconf: Path, srcarch: str) -> str:
    """The variables the top Makefile sets for every directory; `srcarch` "um/x86" is UML on x86 (SUBARCH)."""
    srcarch, _, subarch = srcarch.partition("/")
    return _HEAD.format(goal=_GOAL, autoconf=autoconf, tree=tree, srcarch=srcarch, subarch=subarch or srcarch)


def arch_directories(tree: Path, autoconf: Path, srcarch: str, scratch: Path) -> str:
    """Assignments of ARCH_CORE, ARCH_LIB, ARCH_DRIVERS as the top Makefile exports them to the root Kbuild, and of
    BITS as the arch Makefile exports it to every directory."""
    head = _head(tree, autoconf, srcarch)
    lines = _make(tree, scratch, f"{autoconf.parent.name}-arch", head + _ARCH.format(goal=_GOAL))
    return "\n".join(line.partition(" ")[2] for line in lines if line.startswith(f"{_GOAL}-arch "))


def evaluate(tree: Path, directory: str, autoconf: Path, srcarch: str, scratch: Path, arch: str = "") -> Listing:
    """One directory's obj-y under the configuration in `autoconf` ("." is the tree's root Kbuild), with the
    `arch_directories` assignments made first."""
    source = tree / directory
    kbuild = source / "Kbuild" if (source / "Kbuild").is_file() else source / "Makefile"
    if not kbuild.is_file():
        return Listing(frozenset(), frozenset())
    head = _head(tree, autoconf, srcarch)
    text = head + _DIRECTORY.format(goal=_GOAL, directory=directory, kbuild=kbuild, arch=arch)
    directories: set[str] = set()
    objects: set[str] = set()
    for line in _make(tree, scratch, f"{autoconf.parent.name}-{directory.replace('/', '+')}", text):
        kind, _, rest = line.partition(" ")
        entries = rest.split()
        if kind == f"{_GOAL}-obj":
            directories |= {_relative(directory, entry) for entry in entries if entry.endswith("/")}
            objects |= {_relative(directory, entry) for entry in entries if entry.endswith(".o")}
        elif kind == f"{_GOAL}-part":
            objects |= {_relative(directory, entry) for entry in entries[1:]}
    return Listing(frozenset(directories), frozenset(objects))


def _ancestors(path: str) -> list[str]:
    """ "lib/kunit/x.o" -> [".", "lib", "lib/kunit"]: the directories whose Makefiles decide whether it is linked."""
    parts = path.split("/")[:-1]
    return [".", *("/".join(parts[: depth + 1]) for depth in range(len(parts)))]


def _depth(directory: str) -> int:
    return 0 if directory == "." else directory.count("/") + 1


def built_in(
    tree: Path, config: Mapping[str, str], objects: Iterable[str], srcarch: str, scratch: Path, label: str
) -> set[str]:
    """Which of `objects` (paths relative to the build directory) Kbuild links into vmlinux under `config`: an object
    is linked if an included directory lists it, a directory is included if an included ancestor lists it, up to the
    root Kbuild. Only the objects' ancestors are read, so an object listed from elsewhere counts as not linked."""
    objects = sorted(objects)
    directories = sorted({directory for path in objects for directory in _ancestors(path)}, key=_depth)
    listed = listings(tree, config, directories, srcarch, scratch, label)
    included = {"."}
    for directory in directories:
        if any(
            directory in listed[ancestor].directories
            for ancestor in _ancestors(directory + "/x")
            if ancestor in included
        ):
            included.add(directory)
    linked = set().union(*(listed[directory].objects for directory in included))
    return {path for path in objects if path in linked}


def listings(
    tree: Path, config: Mapping[str, str], directories: Iterable[str], srcarch: str, scratch: Path, label: str
) -> dict[str, Listing]:
    """Each directory's obj-y under `config`, as `evaluate` reads it."""
    autoconf = write_autoconf(config, scratch / label / "auto.conf")
    arch = (
        arch_directories(tree, autoconf, srcarch, scratch)
        if (tree / "arch" / srcarch.partition("/")[0] / "Makefile").is_file()
        else ""
    )
    wanted = sorted(directories)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(
            zip(wanted, pool.map(lambda d: evaluate(tree, d, autoconf, srcarch, scratch, arch), wanted), strict=True)
        )
