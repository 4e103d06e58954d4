"""Compiler wrappers against the fake kernel: in front of the compiler make runs, never part of the build key, and
a missing one is a paragraph."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES
from pytest_kunit.kernel import wrapper
from pytest_kunit.options import Wrapper

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
        assert (build / "make-runs").read_text().split() == ["olddefconfig", "syncconfig", "vmlinux"]
    # A changed tree is built again in the same build directory, whatever the wrapper.
    (fake_kernel.tree / "lib" / "edited.c").write_text("/* edited */\n")
    project.runpytest(*fake_kernel.options("--kunit-wrapper=none")).assert_outcomes(passed=3, failed=2, skipped=1)
    assert [path.name for path in fake_kernel.cache.glob("build/*")] == [build.name]
    # Its configuration stands (the fragment and Kconfig files are as they were): only make runs.
    assert (build / "make-runs").read_text().split() == ["olddefconfig", "syncconfig", "vmlinux", "vmlinux"]
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
    result = project.runpytest("-p", "no:cacheprovider", "--kunit")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ini key 'kunit_wrapper' in *: 'gcc' is not one of auto, ccache, distcc, sccache, none"]
    )


def test_ccache_hits_across_trees_with_the_file_names_of_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real ccache and gcc on a small file in two caches holding two trees (another series is another tree key),
    compiled as Kbuild's O= builds compile (the tree named by its absolute path, debug info, a dependency file for
    depend mode): the second tree's compile hits, and __FILE__ is the tree's `lib/x.c` in both objects."""
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    monkeypatch.delenv("CCACHE_BASEDIR", raising=False)
    counts = []
    for key in ("a" * 16, "b" * 16):  # as long as a cache's tree keys, which decides what ccache hands gcc
        tree, build = tmp_path / key / "src" / key, tmp_path / key / "build" / "config"
        (tree / "include").mkdir(parents=True)
        (tree / "lib").mkdir()
        build.mkdir(parents=True)
        (tree / "include" / "v.h").write_text("#define V 1\n")
        (tree / "lib" / "x.c").write_text('#include "v.h"\nconst char *f(void) { return __FILE__; }\nint v = V;\n')
        env = os.environ | wrapper.wrap_compilers(Wrapper.CCACHE, ARCHES["x86_64"].make, build, tree).env
        command = ["gcc", "-g", "-Wp,-MMD,.x.o.d", f"-fmacro-prefix-map={tree}/=", "-I", str(tree / "include")]
        subprocess.run([*command, "-c", str(tree / "lib/x.c"), "-o", "x.o"], cwd=build, env=env, check=True)
        data = (build / "x.o").read_bytes()
        # __FILE__ and the debug info's file name are `lib/x.c`: neither tree's path (nor the link) is recorded,
        # so the object the second tree gets from the first is the one it would have compiled.
        assert b"\0lib/x.c\0" in data
        assert str(tmp_path).encode() not in data
        stats = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=True).stdout
        counters = dict(line.split("\t") for line in stats.splitlines())
        counts.append((int(counters["direct_cache_hit"]), int(counters["cache_miss"])))
    assert counts == [(0, 1), (1, 1)]
