"""A record's compiler check: the probe compiled by the record's compiler (a stub here writing the assembly a sound or
a faulty compiler gives), and the build refused, with the assembly shown, when the expected instruction is missing."""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES, Arch
from pytest_kunit.errors import BuildError
from pytest_kunit.kernel.compiler_check import check_compiler

SOUND = "probe:\n\tmov.l\t.L10,r1\n\tmov.l\t@r1,r1\n\ttst\tr1,r1\n\tbt\t.L9\n"
FAULTY = '\t.file\t"probe.c"\nprobe:\n\tbt\t.L9\n\trts\n'


def sh4_compiled_by(tmp_path: Path, script: str) -> Arch:
    """The sh4 record with its compiler a stub (`script` run by sh, the compiler's arguments in "$@")."""
    compiler = tmp_path / "stub-gcc"
    compiler.write_text(f"#!/bin/sh\n{script}\n")
    compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    sh4 = ARCHES["sh4"]
    return replace(sh4, make=replace(sh4.make, cross_compile=str(tmp_path / "stub-")))


def writing(assembly: str) -> str:
    """A stub compiler's script: the assembly written where -o points."""
    return f'while [ "$1" != -o ]; do shift; done\nprintf \'{assembly}\' > "$2"'


def test_a_sound_compiler_passes(tmp_path: Path) -> None:
    check_compiler(sh4_compiled_by(tmp_path, writing(SOUND)))


def test_a_compiler_that_drops_the_test_is_refused_with_its_assembly(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as refused:
        check_compiler(sh4_compiled_by(tmp_path, writing(FAULTY)))
    assert "stub-gcc miscompiles sh4 kernels: it drops the test of `if (!flag)`" in refused.value.what
    assert "--kunit-cross-compile" in refused.value.remedy
    # The probe and its code, without the assembler's directives.
    assert "\tif (!flag)" in refused.value.detail
    assert refused.value.detail.endswith("probe:\n\tbt\t.L9\n\trts")


def test_a_compiler_that_cannot_compile_the_probe_is_named(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as refused:
        check_compiler(sh4_compiled_by(tmp_path, "echo 'cc1: internal compiler error' >&2; exit 1"))
    assert "could not compile a ten-line probe" in refused.value.what
    assert refused.value.detail == "cc1: internal compiler error"


def test_a_record_without_a_check_runs_no_compiler(tmp_path: Path) -> None:
    arch = ARCHES["arm"]
    check_compiler(replace(arch, make=replace(arch.make, cross_compile=str(tmp_path / "absent-"))))
