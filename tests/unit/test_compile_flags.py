"""compile_flags: the flags every object is compiled with, as the real make evaluates a tree's Makefile for one
configuration (a small tree whose top Makefile reads auto.conf as Kbuild's does)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES
from pytest_kunit.errors import BuildError
from pytest_kunit.kernel.configuring import FLAGS_KEPT, compile_flags
from pytest_kunit.kernel.makerun import Make

TOP_MAKEFILE = """\
include $(O)/include/config/auto.conf
KBUILD_CFLAGS := -O2
ifdef CONFIG_GCOV_KERNEL
CFLAGS_GCOV := -fprofile-arcs
endif
KBUILD_DEFCONFIG := not-a-flag
export KBUILD_CFLAGS CFLAGS_GCOV

__all:
\t@echo built everything
"""


def flags(tmp_path: Path, auto_conf: str) -> dict[str, str]:
    tree, build = tmp_path / "src", tmp_path / "build"
    tree.mkdir(exist_ok=True)
    (tree / "Makefile").write_text(TOP_MAKEFILE)
    (build / "include/config").mkdir(parents=True, exist_ok=True)
    (build / "include/config/auto.conf").write_text(auto_conf)
    return compile_flags(Make(tree, build, ARCHES["x86_64"], 2, tmp_path / "log", {}))


def test_the_flags_are_the_makefile_s_for_the_configuration_and_nothing_is_built(tmp_path: Path) -> None:
    assert flags(tmp_path, "CONFIG_KUNIT=y\n") == {"CFLAGS_GCOV": "", "KBUILD_CFLAGS": "-O2"}  # exported: defined
    assert flags(tmp_path, "CONFIG_KUNIT=y\nCONFIG_GCOV_KERNEL=y\n") == {
        "CFLAGS_GCOV": "-fprofile-arcs",
        "KBUILD_CFLAGS": "-O2",
    }
    assert "built everything" not in (tmp_path / "log").read_text()


def test_a_directory_never_configured_is_refused_not_configured_by_make(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/Makefile").write_text(TOP_MAKEFILE)
    with pytest.raises(BuildError, match="is not configured"):
        compile_flags(Make(tmp_path / "src", tmp_path / "build", ARCHES["x86_64"], 2, tmp_path / "log", {}))
    assert not (tmp_path / "build/include/config/auto.conf").exists()


def test_the_flags_are_kept_until_the_directory_is_configured_again(tmp_path: Path) -> None:
    assert flags(tmp_path, "CONFIG_KUNIT=y\n")["KBUILD_CFLAGS"] == "-O2"
    auto_conf = tmp_path / "build/include/config/auto.conf"
    kept = (tmp_path / "build" / FLAGS_KEPT).stat().st_mtime_ns
    os.utime(auto_conf, ns=(kept - 10**9, kept - 10**9))  # configured a second before the flags were read
    make = Make(tmp_path / "src", tmp_path / "build", ARCHES["x86_64"], 2, tmp_path / "log", {})
    (tmp_path / "src/Makefile").write_text(TOP_MAKEFILE.replace("-O2", "-O3"))
    assert compile_flags(make)["KBUILD_CFLAGS"] == "-O2"  # read from the directory: make is not run again
    os.utime(auto_conf, ns=(kept + 10**9, kept + 10**9))  # configured again since
    assert compile_flags(make)["KBUILD_CFLAGS"] == "-O3"
