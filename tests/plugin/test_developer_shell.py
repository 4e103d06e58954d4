"""What a kernel developer's shell exports, against the fake kernel: each variable either honoured as kunit.py honours
it (the flags and compiler Kbuild reads, ccache's directory) or overridden by what pytest-kunit decides itself (ARCH,
CROSS_COMPILE, O, KBUILD_OUTPUT) and said once; a cross compiler named by a path prefix is run through the wrapper and
never written; a make past its deadline is stopped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_kunit.kernel import makerun

from .conftest import FakeKernel

OUTCOMES = {"passed": 3, "failed": 2, "skipped": 1}


def make_env(fake_kernel: FakeKernel) -> dict[str, dict[str, str]]:
    """What of the developer's shell reached each make run's environment, by build directory (the fake make's
    record); one entry per directory, as every run of one build gets the same."""
    seen: dict[str, dict[str, str]] = {}
    for record in fake_kernel.cache.glob("build/*/make-env"):
        entries = {json.dumps(json.loads(line), sort_keys=True) for line in record.read_text().splitlines()}
        assert len(entries) == 1, entries
        seen[record.parent.name] = json.loads(entries.pop())
    return seen


def from_command_line(fake_kernel: FakeKernel, build: str) -> dict[str, str]:
    """What reaches make's environment from pytest-kunit's own command line alone (make exports its variables)."""
    return {"ARCH": "x86_64", "O": str(fake_kernel.cache / "build" / build)}


def said(result: pytest.RunResult, name: str) -> list[str]:
    return [line for line in result.outlines if f"pytest-kunit: {name}=" in line and "is not used" in line]


@pytest.fixture
def fresh_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process's notes: each inner run here is one more in this interpreter, and says once a process."""
    monkeypatch.setattr(makerun, "_said", set())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ARCH", "arm64"),
        ("CROSS_COMPILE", "aarch64-linux-gnu-"),
        ("O", "/tmp/elsewhere"),
        ("KBUILD_OUTPUT", "/tmp/elsewhere"),
    ],
)
def test_what_pytest_kunit_decides_is_overridden_and_said_once(
    project: pytest.Pytester,
    fake_kernel: FakeKernel,
    monkeypatch: pytest.MonkeyPatch,
    fresh_notes: None,
    name: str,
    value: str,
) -> None:
    monkeypatch.setenv(name, value)
    exported = project.runpytest(*fake_kernel.options())
    exported.assert_outcomes(**OUTCOMES)
    (note,) = said(exported, name)
    assert note.endswith(f"pytest-kunit: {name}={value} in the environment is not used: {makerun.OVERRIDDEN[name]}")
    ((build, seen),) = make_env(fake_kernel).items()
    assert seen == from_command_line(fake_kernel, build)

    # Without it: the same kernel serves, nothing is made again, nothing is said.
    monkeypatch.delenv(name)
    plain = project.runpytest(*fake_kernel.options())
    plain.assert_outcomes(**OUTCOMES)
    assert "kernel builds: 0 " in plain.stdout.str() and not said(plain, name)


def test_a_value_pytest_kunit_would_give_anyway_is_not_said(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch, fresh_notes: None
) -> None:
    monkeypatch.setenv("ARCH", "x86_64")
    result = project.runpytest(*fake_kernel.options())
    result.assert_outcomes(**OUTCOMES, warnings=0)


@pytest.mark.parametrize(("name", "value"), [("KCFLAGS", "-O1 -g"), ("LLVM", "1")])
def test_the_flags_and_compiler_kbuild_reads_are_honoured_and_key_the_build(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    project.runpytest(*fake_kernel.options()).assert_outcomes(**OUTCOMES)
    (plain,) = make_env(fake_kernel)
    monkeypatch.setenv(name, value)
    exported = project.runpytest(*fake_kernel.options())
    exported.assert_outcomes(**OUTCOMES, warnings=0)
    # Built again, as kunit.py's make would rebuild with them, into a directory of its own: both kernels stay.
    assert "kernel builds: 1 " in exported.stdout.str()
    seen = make_env(fake_kernel)
    assert seen.pop(plain) == from_command_line(fake_kernel, plain)
    ((build, honoured),) = seen.items()
    assert honoured == from_command_line(fake_kernel, build) | {name: value}
    monkeypatch.delenv(name)
    again = project.runpytest(*fake_kernel.options())
    assert "kernel builds: 0 " in again.stdout.str()


@pytest.fixture
def logging_ccache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `ccache` first on PATH that logs the cache directory each compile was given, then runs the compiler."""
    bin_dir, log = tmp_path / "bin", tmp_path / "ccache.log"
    bin_dir.mkdir()
    program = bin_dir / "ccache"
    program.write_text(f'#!/bin/sh\necho "$1 ${{CCACHE_DIR-unset}}" >> {log}\nexec "$@"\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_the_user_s_ccache_directory_is_the_one_compiles_use(
    project: pytest.Pytester, fake_kernel: FakeKernel, logging_ccache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = fake_kernel.cache.parent / "my-ccache"
    monkeypatch.setenv("CCACHE_DIR", str(own))
    project.runpytest(*fake_kernel.options("--kunit-wrapper=ccache")).assert_outcomes(**OUTCOMES, warnings=0)
    compiles = [line for line in logging_ccache.read_text().splitlines() if not line.startswith("--")]
    assert compiles == [f"gcc {own}"]
    assert [entry["CCACHE_DIR"] for entry in make_env(fake_kernel).values()] == [str(own)]


@pytest.fixture
def cross_prefix(tmp_path: Path) -> str:
    """A cross compiler at a path prefix of its own, as a toolchain unpacked under /opt: it logs its runs."""
    bin_dir = tmp_path / "opt" / "cross" / "bin"
    bin_dir.mkdir(parents=True)
    compiler = bin_dir / "mine-linux-gnu-gcc"
    compiler.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "cross.log"}\nexec gcc "$@"\n')
    compiler.chmod(0o755)
    return f"{bin_dir}{os.sep}mine-linux-gnu-"


def test_a_cross_compiler_named_by_path_runs_through_the_wrapper_and_is_never_written(
    project: pytest.Pytester, fake_kernel: FakeKernel, logging_ccache: Path, cross_prefix: str, tmp_path: Path
) -> None:
    compiler = Path(f"{cross_prefix}gcc")
    before = compiler.read_bytes()
    # A deadline: a compiler overwritten by its wrapper runs itself in a loop.
    wrapped = ("--kunit-wrapper=ccache", "--kunit-make-timeout=30")
    options = fake_kernel.options(*wrapped, f"--kunit-cross-compile={cross_prefix}")
    project.runpytest(*options).assert_outcomes(**OUTCOMES)
    assert compiler.read_bytes() == before
    assert [path.name for path in compiler.parent.iterdir()] == [compiler.name]
    # Kbuild runs it by name, which the build directory's wrapper script answers: ccache, then the compiler.
    compiles = [line.split()[0] for line in logging_ccache.read_text().splitlines() if not line.startswith("--")]
    assert compiles == ["mine-linux-gnu-gcc"]
    (ran,) = (tmp_path / "cross.log").read_text().splitlines()  # with the wrapper's flags (wrapper_scripts._path_flags)
    assert ran.startswith("-fmacro-prefix-map=") and ran.endswith(f"-E -x c {os.devnull} -o {os.devnull}")
    (build,) = fake_kernel.cache.glob("build/*")
    assert (build / ".pytest-kunit-wrapper" / compiler.name).is_file()


def test_a_make_past_its_deadline_is_stopped_and_named(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    pytester.makefile(".kunitconfig", hang="CONFIG_KUNIT=y\nCONFIG_FAKE_BUILD_HANG=y\n")
    pytester.makeini("[pytest]\nkunit_make_timeout = 2\n")
    result = pytester.runpytest(*fake_kernel.options())
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*make ran past its deadline of 2 s and was stopped (--kunit-make-timeout): make *vmlinux",
            "What to do: if the build is slow rather than stuck, give it longer with --kunit-make-timeout SECONDS "
            "(ini kunit_make_timeout; 0: no deadline); the log so far is *build.log.",
        ]
    )
    (build,) = fake_kernel.cache.glob("build/*")
    assert (build / "hanging").exists()
    # Its whole process group is gone: no fake make job of this build is left running.
    jobs = [path for path in Path("/proc").glob("[0-9]*/cmdline") if _reads(path, str(build))]
    assert not jobs


def _reads(cmdline: Path, text: str) -> bool:
    try:
        return text in cmdline.read_bytes().decode(errors="replace") and "fake_make.py" in cmdline.read_text()
    except OSError:
        return False


def test_a_make_timeout_that_is_not_seconds_is_a_usage_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-make-timeout=soon"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-make-timeout: 'soon' is not whole seconds, 0: none"])


def test_clang_of_an_exported_llvm_runs_through_the_wrapper(
    project: pytest.Pytester,
    fake_kernel: FakeKernel,
    logging_ccache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clang = tmp_path / "bin" / "clang"  # beside the fake ccache
    clang.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "clang.log"}\n')
    clang.chmod(0o755)
    monkeypatch.setenv("LLVM", "1")
    project.runpytest(*fake_kernel.options("--kunit-wrapper=ccache")).assert_outcomes(**OUTCOMES)
    compiles = [line.split()[0] for line in logging_ccache.read_text().splitlines() if not line.startswith("--")]
    assert compiles == ["clang"]
    assert (tmp_path / "clang.log").read_text().strip().endswith(f"-E -x c {os.devnull} -o {os.devnull}")
    (build,) = fake_kernel.cache.glob("build/*")
    assert "ccache in front of gcc and clang (CCACHE_BASEDIR=" in (build / "build.log").read_text()
