"""What of a tree a build read, from its records (kbuild/read_dirs.py), and the look at only that
(changed_since with a scope): a synthetic tree and build directory laid out as Kbuild leaves them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_kunit.kbuild.read_dirs import ReadScope, read_scope
from pytest_kunit.kernel.changed_since import changed_since

KCONFIG = "deps_config := \\\n\tlib/kunit/Kconfig \\\n\tKconfig \\\n\tarch/arm/Kconfig \\\n\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for path in (
        "Makefile",
        "Kconfig",
        "lib/kunit/Makefile",
        "lib/kunit/Kconfig",
        "lib/kunit/test.c",
        "lib/kunit/unbuilt.c",
        "include/linux/kernel.h",
        "include/linux/unread.h",
        "include/drm/drm.h",
        "arch/arm/Kconfig",
        "arch/arm/kernel/setup.c",
        "tools/include/linux/list.h",
        "Documentation/index.rst",
    ):
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text("x\n")
    return tree


@pytest.fixture
def build(tmp_path: Path, tree: Path) -> Path:
    """A build of lib/kunit/test.c through the link S (ccache's), and a host tool's compile naming the tree in full."""
    build = tmp_path / "build"
    (build / "lib/kunit").mkdir(parents=True)
    (build / "include/config").mkdir(parents=True)
    (build / "S").symlink_to(tree)
    (build / ".config").write_text("CONFIG_KUNIT=y\n")
    (build / "include/config/auto.conf.cmd").write_text(KCONFIG)
    (build / "lib/kunit/.test.o.cmd").write_text(
        "savedcmd_lib/kunit/test.o := gcc -IS/include -I./include -c -o lib/kunit/test.o S/lib/kunit/test.c\n\n"
        "source_lib/kunit/test.o := S/lib/kunit/test.c\n\n"
        "deps_lib/kunit/test.o := \\\n  S/include/linux/kernel.h \\\n    $(wildcard include/config/KUNIT) \\\n\n"
    )
    (build / "tools/objtool").mkdir(parents=True)
    (build / "tools/objtool/.check.o.cmd").write_text(f"cmd_check.o := gcc -I{tree}/tools/include/ -c check.c\n")
    return build


def test_a_scope_lists_what_kbuild_descended_into_and_what_the_compiles_named(tree: Path, build: Path) -> None:
    scope = read_scope(build, tree, "S")
    assert scope is not None
    # Build subdirectories the tree has, the -I directories, the directories of the files the records name, and all
    # of tools/, as a host tool was made there (its records name what it read relative to a directory they omit).
    assert scope.listed == (
        "",
        "include",
        "include/linux",
        "lib",
        "lib/kunit",
        "tools",
        "tools/include",
        "tools/include/linux",
    )
    # Alone: each Kconfig file read and each directory above what was read, unless a listed directory holds it.
    assert scope.alone == ("arch/arm", "arch/arm/Kconfig")


def test_a_scope_survives_its_record(tree: Path, build: Path) -> None:
    scope = read_scope(build, tree, "S")
    assert scope is not None
    assert ReadScope.parse(scope.text()) == scope
    assert ReadScope.parse('{"listed": [1]}') is None


def test_the_scoped_look_sees_what_the_build_read_and_nothing_else(tree: Path, build: Path) -> None:
    scope = read_scope(build, tree, "S")
    since = time.time_ns() - 1_000_000_000  # file times come from a coarse clock: a second before now
    past = since - 1_000_000_000
    for directory, subdirectories, files in os.walk(tree):
        for name in (*subdirectories, *files):
            os.utime(os.path.join(directory, name), ns=(past, past))
    os.utime(tree, ns=(past, past))
    for edited in (
        "include/linux/kernel.h",  # read
        "include/linux/unread.h",  # unread, in a directory a compile read from (an include could find it)
        "lib/kunit/unbuilt.c",  # in a directory Kbuild descended into (its Makefile could name it)
        "arch/arm/Kconfig",  # read by Kconfig
        "arch/arm/kernel/setup.c",  # never read
        "include/drm/drm.h",  # never read: nothing includes from include/drm
        "Documentation/index.rst",  # never read
    ):
        os.utime(tree / edited)
    assert scope is not None
    assert sorted(changed_since(tree, since, scope) or {}) == [
        str(tree / "arch/arm/Kconfig"),
        str(tree / "include/linux/kernel.h"),
        str(tree / "include/linux/unread.h"),
        str(tree / "lib/kunit/unbuilt.c"),
    ]
    # A new entry in a directory above what was read changes that directory: seen.
    (tree / "arch/arm/Kconfig.debug").write_text("x\n")
    assert str(tree / "arch/arm") in (changed_since(tree, since, scope) or {})
    assert len(changed_since(tree, since) or {}) > 5  # the whole tree's look sees everything


@pytest.mark.parametrize(
    "unsure",
    ["no fixdep list", "no Kconfig record", "kheaders"],
)
def test_records_that_cannot_say_give_no_scope(tree: Path, build: Path, unsure: str) -> None:
    if unsure == "no fixdep list":
        (build / "lib/kunit/.test.o.cmd").write_text("cmd_lib/kunit/test.o := gcc -c\n")
    elif unsure == "no Kconfig record":
        (build / "include/config/auto.conf.cmd").unlink()
    else:  # kheaders archives every header directory by a walk of its own
        (build / ".config").write_text("CONFIG_KUNIT=y\nCONFIG_IKHEADERS=y\n")
    assert read_scope(build, tree, "S") is None
