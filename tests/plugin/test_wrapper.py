"""Compiler wrappers against the fake kernel: in front of the compiler make runs, never part of the build key, and
a missing one is a paragraph."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import FakeKernel


@pytest.fixture
def fake_ccache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `ccache` first on PATH that logs how it was called, then runs the compiler as ccache would."""
    bin_dir, log = tmp_path / "bin", tmp_path / "ccache.log"
    bin_dir.mkdir()
    program = bin_dir / "ccache"
    program.write_text(f'#!/bin/sh\necho "$* | $KBUILD_BUILD_USER" >> {log}\nexec "$@"\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def compiles(log: Path) -> list[str]:
    """The compiler runs the fake ccache saw (not pytest-kunit's own `ccache --print-stats`)."""
    return [line for line in log.read_text().splitlines() if not line.startswith("--print-stats")]


def test_the_wrapper_runs_the_compiler_and_never_keys_the_build(
    project: pytest.Pytester, fake_kernel: FakeKernel, fake_ccache: Path
) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-wrapper=ccache"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    calls = compiles(fake_ccache)
    compile_call = "-E -x c /dev/null -o /dev/null | pytest-kunit"
    assert calls and all(call.startswith("gcc ") and call.endswith(compile_call) for call in calls)
    (build,) = fake_kernel.cache.glob("build/*")
    assert "ccache in front of gcc (CCACHE_BASEDIR=" in (build / "build.log").read_text()
    # Another wrapper, or none, reuses that build: nothing is made again.
    for choice in ("none", "auto"):
        project.runpytest(*fake_kernel.options(f"--kunit-wrapper={choice}")).assert_outcomes(
            passed=3, failed=2, skipped=1
        )
        assert (build / "make-runs").read_text().split() == ["syncconfig", "vmlinux"]
    # A changed tree is built again in the same build directory, whatever the wrapper.
    (fake_kernel.tree / "lib" / "edited.c").write_text("/* edited */\n")
    project.runpytest(*fake_kernel.options("--kunit-wrapper=none")).assert_outcomes(passed=3, failed=2, skipped=1)
    assert [path.name for path in fake_kernel.cache.glob("build/*")] == [build.name]
    # Its configuration stands (the fragment and Kconfig files are as they were): only make runs.
    assert (build / "make-runs").read_text().split() == ["syncconfig", "vmlinux", "vmlinux"]
    assert len(compiles(fake_ccache)) == len(calls)


def test_the_ini_twin_chooses_the_wrapper(project: pytest.Pytester, fake_kernel: FakeKernel, fake_ccache: Path) -> None:
    project.makeini("[pytest]\nkunit_wrapper = ccache\n")
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    assert compiles(fake_ccache)


def test_a_missing_wrapper_is_a_paragraph(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-wrapper=sccache"))
    result.stdout.fnmatch_lines(
        [
            "*--kunit-wrapper sccache: sccache is not installed (not found on PATH).",
            "What to do: install it from https://github.com/mozilla/sccache/releases or with `cargo install sccache` "
            "(Debian 12 does not package it), or choose --kunit-wrapper ccache. Or run with --kunit-wrapper none.",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert not list(fake_kernel.cache.glob("build/*/make-runs"))


def test_an_unknown_wrapper_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nkunit_wrapper = gcc\n")
    result = project.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ini key 'kunit_wrapper' in *: 'gcc' is not one of auto, ccache, distcc, sccache, none"]
    )
