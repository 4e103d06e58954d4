"""Compiler wrappers: which compilers get one, what each script runs, make's environment, and the errors a user
sees when a wrapper is missing or has nowhere to compile."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES, MakeSettings
from pytest_kunit.errors import BuildError
from pytest_kunit.kernel import ccache_stats, wrapper, wrapper_scripts
from pytest_kunit.options import Wrapper

X86 = ARCHES["x86_64"].make
ARM64 = MakeSettings(
    arch="arm64", source_arch="arm64", target="Image", image="arch/arm64/boot/Image", cross_compile="aarch64-linux-gnu-"
)


def fake_program(bin_dir: Path, name: str, log: Path) -> None:
    """A stand-in for ccache/distcc that logs its arguments and its environment's build identity."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    program = bin_dir / name
    program.write_text(f'#!/bin/sh\necho "$0 $* | $KBUILD_BUILD_TIMESTAMP | $PATH" >> {log}\n')
    program.chmod(0o755)


@pytest.fixture
def only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holds a directory of fake programs first (then the system's, for sh); distcc's hosts files are the
    test's own."""
    hosts = (str(tmp_path / "home" / ".distcc" / "hosts"), str(tmp_path / "etc-distcc-hosts"))
    monkeypatch.setitem(wrapper.TOOLS, Wrapper.DISTCC, replace(wrapper.TOOLS[Wrapper.DISTCC], hosts_files=hosts))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    for name in ("CCACHE_BASEDIR", "CCACHE_DEPEND", "CCACHE_NODEPEND", "DISTCC_HOSTS", "KBUILD_BUILD_TIMESTAMP"):
        monkeypatch.delenv(name, raising=False)
    return bin_dir


def test_auto_is_ccache_when_installed(only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(only))
    assert wrapper.chosen(Wrapper.AUTO) is Wrapper.NONE
    fake_program(only, "ccache", tmp_path / "log")
    assert wrapper.chosen(Wrapper.AUTO) is Wrapper.CCACHE
    assert wrapper.chosen(Wrapper.NONE) is Wrapper.NONE


def test_no_wrapper_leaves_make_alone(only: Path, tmp_path: Path) -> None:
    wrapping = wrapper.wrap_compilers(Wrapper.NONE, X86, tmp_path / "build", tmp_path / "tree")
    assert wrapping.env == {}
    assert not (tmp_path / "build" / wrapper_scripts.WRAPPER_DIR).exists()


def test_ccache_goes_in_front_of_the_compiler_with_what_it_needs_to_hit(only: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    fake_program(only, "ccache", log)
    cache = tmp_path / "cache"
    build, tree = cache / "build" / "k1", cache / "src" / "s1"
    wrapping = wrapper.wrap_compilers(Wrapper.CCACHE, X86, build, tree)
    # Paths are rewritten relative to the build directory, which reaches the tree through a link of its own.
    assert wrapping.env["CCACHE_BASEDIR"] == str(build)
    assert (build / wrapper_scripts.TREE_LINK).readlink() == tree
    assert wrapping.env["KBUILD_BUILD_TIMESTAMP"] == wrapper.BUILD_IDENTITY["KBUILD_BUILD_TIMESTAMP"]
    assert wrapping.env["KBUILD_BUILD_USER"] == wrapping.env["KBUILD_BUILD_HOST"] == "pytest-kunit"
    # Depend mode: a miss is the compile alone, not a preprocessor run first.
    assert wrapping.env["CCACHE_DEPEND"] == "1"
    scripts = build / wrapper_scripts.WRAPPER_DIR
    assert wrapping.env["PATH"].split(os.pathsep)[0] == str(scripts)
    assert sorted(path.name for path in scripts.iterdir()) == ["gcc"]
    # make finds the script by the compiler's name; the script runs ccache on the real compiler, with the PATH
    # make was given minus itself, and maps the relative paths ccache hands the compiler back to the tree's.
    subprocess.run(["gcc", "-c", "x.c"], env=os.environ | wrapping.env, cwd=tmp_path, check=True)
    line = log.read_text()
    link = wrapper_scripts.TREE_LINK
    assert line.startswith(f"{only}/ccache gcc -fmacro-prefix-map={link}/= ")
    maps = f"-fdebug-prefix-map={build}=. -fdebug-prefix-map={link}/= -fdebug-prefix-map={build}/{link}/="
    assert f"{maps} -c x.c |" in line
    assert "| Thu Jan  1 00:00:00 UTC 1970 |" in line
    assert str(scripts) not in line.split("|")[2]
    assert "ccache in front of gcc (CCACHE_BASEDIR=" in wrapping.describe


def test_the_cross_compiler_comes_from_the_record(only: Path, tmp_path: Path) -> None:
    fake_program(only, "ccache", tmp_path / "log")
    wrapper.wrap_compilers(Wrapper.CCACHE, ARM64, tmp_path / "build", tmp_path / "tree")
    scripts = tmp_path / "build" / wrapper_scripts.WRAPPER_DIR
    # Host tools are built with gcc, the kernel with $(CROSS_COMPILE)gcc: both are wrapped.
    assert sorted(path.name for path in scripts.iterdir()) == ["aarch64-linux-gnu-gcc", "gcc"]
    assert "ccache aarch64-linux-gnu-gcc " in (scripts / "aarch64-linux-gnu-gcc").read_text()


def test_what_the_user_exports_wins(only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_program(only, "ccache", tmp_path / "log")
    monkeypatch.setenv("CCACHE_BASEDIR", "/srv")
    monkeypatch.setenv("KBUILD_BUILD_TIMESTAMP", "2026-01-01")
    wrapping = wrapper.wrap_compilers(Wrapper.CCACHE, X86, tmp_path / "build", tmp_path / "tree")
    assert (wrapping.env["CCACHE_BASEDIR"], wrapping.env["KBUILD_BUILD_TIMESTAMP"]) == ("/srv", "2026-01-01")


@pytest.mark.parametrize("exported", ["CCACHE_DEPEND", "CCACHE_NODEPEND"])
def test_the_user_s_depend_mode_choice_wins_either_way(
    exported: str, only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ccache reads CCACHE_NODEPEND as `depend_mode = false`, but with CCACHE_DEPEND set beside it (ours) ccache 4.7
    turns depend mode on: the user's choice, whichever variable says it, must keep ours out."""
    fake_program(only, "ccache", tmp_path / "log")
    monkeypatch.setenv(exported, "1")
    wrapping = wrapper.wrap_compilers(Wrapper.CCACHE, X86, tmp_path / "build", tmp_path / "tree")
    assert "CCACHE_DEPEND" not in wrapping.env


def test_depend_mode_hits_a_compile_as_kbuild_writes_it(tmp_path: Path) -> None:
    """Depend mode needs -MD or -MMD on the command line; Kbuild passes it as -Wp,-MMD,<file>, which ccache must
    read as such, or every compile would miss."""
    (tmp_path / "x.h").write_text("#define X 1\n")
    (tmp_path / "x.c").write_text('#include "x.h"\nint x(void) { return X; }\n')
    env = dict(os.environ, CCACHE_DIR=str(tmp_path / "ccache"), CCACHE_DEPEND="1")
    compile_x = ["ccache", "gcc", "-Wp,-MMD,.x.o.d", "-c", "x.c", "-o", "x.o"]
    for _ in range(2):
        subprocess.run(compile_x, env=env, cwd=tmp_path, check=True)
    stats = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True).stdout
    counters = dict(line.split("\t") for line in stats.splitlines() if "\t" in line)
    assert (counters["direct_cache_hit"], counters["cache_miss"]) == ("1", "1")
    # A header edit is seen through the dependency file: a miss, not a stale hit.
    (tmp_path / "x.h").write_text("#define X 2\n")
    subprocess.run(compile_x, env=env, cwd=tmp_path, check=True)
    stats = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True).stdout
    assert dict(line.split("\t") for line in stats.splitlines() if "\t" in line)["cache_miss"] == "2"


@pytest.mark.parametrize(
    ("choice", "advice"),
    [
        (Wrapper.CCACHE, "apt-get install ccache"),
        (Wrapper.DISTCC, "apt-get install distcc"),
        (Wrapper.SCCACHE, "Debian 12 does not package it"),
    ],
)
def test_a_missing_wrapper_names_its_package(
    only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: Wrapper, advice: str
) -> None:
    monkeypatch.setenv("PATH", str(only))
    with pytest.raises(BuildError) as error:
        wrapper.wrap_compilers(choice, X86, tmp_path / "build", tmp_path / "tree")
    text = error.value.render()
    assert text.startswith(f"--kunit-wrapper {choice.value}: {choice.value} is not installed")
    assert advice in text
    assert "--kunit-wrapper none" in text


def test_distcc_needs_hosts(only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    fake_program(only, "distcc", log)
    with pytest.raises(BuildError) as error:
        wrapper.wrap_compilers(Wrapper.DISTCC, X86, tmp_path / "build", tmp_path / "tree")
    assert "DISTCC_HOSTS is unset" in error.value.render()
    assert "--kunit-jobs" in error.value.render()
    monkeypatch.setenv("DISTCC_HOSTS", "127.0.0.1:3633/2")
    wrapping = wrapper.wrap_compilers(Wrapper.DISTCC, X86, tmp_path / "build", tmp_path / "tree")
    assert "CCACHE_BASEDIR" not in wrapping.env
    assert "DISTCC_HOSTS=127.0.0.1:3633/2" in wrapping.describe
    subprocess.run(["gcc", "-c", "x.c"], env=os.environ | wrapping.env, cwd=tmp_path, check=True)
    # distccd runs only compilers named by a bare name; distcc preprocesses locally, so no path maps are needed.
    assert log.read_text().startswith(f"{only}/distcc gcc -c x.c |")


def test_distcc_hosts_file_counts(only: Path, tmp_path: Path) -> None:
    fake_program(only, "distcc", tmp_path / "log")
    hosts = tmp_path / "etc-distcc-hosts"
    hosts.write_text("# no host yet\n\n")
    with pytest.raises(BuildError):
        wrapper.wrap_compilers(Wrapper.DISTCC, X86, tmp_path / "build", tmp_path / "tree")
    hosts.write_text("# the local machine\nlocalhost/2\n")
    assert wrapper.wrap_compilers(Wrapper.DISTCC, X86, tmp_path / "build", tmp_path / "tree").wrapper is Wrapper.DISTCC


def test_a_build_counts_its_own_compiles_not_those_of_builds_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds share one ccache (the user's, or the real tier's builder beside a test's build): each build's hits
    and misses are its own compiles', read from its stats log, not ccache's counters for the whole cache."""
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    monkeypatch.delenv("CCACHE_STATSLOG", raising=False)
    (tmp_path / "x.c").write_text("int x(void) { return 1; }\n")
    wrapping = wrapper.wrap_compilers(Wrapper.CCACHE, X86, tmp_path / "build", tmp_path)
    before = ccache_stats.ccache_counts(wrapping)
    assert before == (0, 0)
    compile_x = ["gcc", "-Wp,-MMD,.x.o.d", "-c", "x.c", "-o", "x.o"]
    subprocess.run(compile_x, env=os.environ | wrapping.env, cwd=tmp_path, check=True)
    # Another build's compiles, meanwhile, into the same cache: a miss and a hit that are not this build's.
    other = wrapper.wrap_compilers(Wrapper.CCACHE, X86, tmp_path / "other", tmp_path)
    for _ in range(2):
        subprocess.run(compile_x, env=os.environ | other.env, cwd=tmp_path, check=True)
    subprocess.run(compile_x, env=os.environ | wrapping.env, cwd=tmp_path, check=True)
    assert ccache_stats.hit_note(before, ccache_stats.ccache_counts(wrapping)) == "ccache: 1 of 2 compiles hit"
    assert ccache_stats.hit_note((0, 0), ccache_stats.ccache_counts(other)) == "ccache: 2 of 2 compiles hit"


def test_the_user_s_own_stats_log_is_left_alone(only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_program(only, "ccache", tmp_path / "log")
    monkeypatch.setenv("CCACHE_STATSLOG", str(tmp_path / "mine.log"))
    wrapping = wrapper.wrap_compilers(Wrapper.CCACHE, X86, tmp_path / "build", tmp_path / "tree")
    assert "CCACHE_STATSLOG" not in wrapping.env and wrapping.stats_log is None


def test_hit_note() -> None:
    assert ccache_stats.hit_note((10, 5), (1490, 25)) == "ccache: 1480 of 1500 compiles hit"
    assert ccache_stats.hit_note(None, (1, 1)) == ""


@pytest.mark.parametrize("choice", [Wrapper.CCACHE, Wrapper.DISTCC])
def test_the_compiler_answers_for_itself_through_any_wrapper(
    only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: Wrapper
) -> None:
    """Kconfig records `$(CC) --version`'s first line (CONFIG_CC_VERSION_TEXT), on which every object depends:
    through a wrapper it must read as it does without one, or changing the wrapper would rebuild the kernel (real
    distcc answers as x86_64-linux-gnu-gcc)."""
    log = tmp_path / "log"
    fake_program(only, choice.value, log)
    monkeypatch.setenv("DISTCC_HOSTS", "127.0.0.1:3633/2")
    fake_program(only, "gcc", tmp_path / "gcc-log")
    wrapping = wrapper.wrap_compilers(choice, X86, tmp_path / "build", tmp_path / "tree")
    for query in ("--version", "-dumpmachine"):
        subprocess.run(["gcc", query], env=os.environ | wrapping.env, cwd=tmp_path, check=True)
    assert not log.exists()
    assert (tmp_path / "gcc-log").read_text().splitlines()[0].startswith(f"{only}/gcc --version |")
    # A compile still goes through the wrapper.
    subprocess.run(["gcc", "-c", "x.c"], env=os.environ | wrapping.env, cwd=tmp_path, check=True)
    assert log.read_text().startswith(f"{only}/{choice.value} gcc ")


def test_real_distcc_reports_the_version_text_an_unwrapped_build_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def version(env: dict[str, str], *command: str) -> str:
        run = subprocess.run([*command, "gcc", "--version"], env=env, capture_output=True, text=True, check=True)
        return run.stdout.splitlines()[0]

    monkeypatch.setenv("DISTCC_HOSTS", "127.0.0.1:3633/1")  # never reached: --version runs locally
    wrapping = wrapper.wrap_compilers(Wrapper.DISTCC, X86, tmp_path / "build", tmp_path / "tree")
    unwrapped = version(dict(os.environ))
    assert unwrapped.startswith("gcc ")
    assert version(os.environ | wrapping.env) == unwrapped
    # What the script saves a build from: distcc itself answers under the target's name.
    assert version(dict(os.environ), "distcc") != unwrapped


def test_ccache_names_the_tree_through_its_link_except_for_coverage(only: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    fake_program(only, "ccache", log)
    build, tree = tmp_path / "cache" / "build" / "k1", tmp_path / "cache" / "src" / "s1"
    env = os.environ | wrapper.wrap_compilers(Wrapper.CCACHE, X86, build, tree).env
    # Kbuild's O= compile names the tree by its absolute path, in the file and inside options.
    subprocess.run(["gcc", f"-fmacro-prefix-map={tree}/=", f"-I{tree}/include", "-c", f"{tree}/lib/x.c"], env=env)
    link = build / wrapper_scripts.TREE_LINK
    assert f" -fmacro-prefix-map={link}/= -I{link}/include -c {link}/lib/x.c |" in log.read_text()
    # A coverage compile's .gcno records its names for gcov: they stay the tree's, and base_dir is off for it.
    log.unlink()
    subprocess.run(["gcc", "-fprofile-arcs", "-ftest-coverage", "-c", f"{tree}/lib/x.c"], env=env)
    line = log.read_text()
    assert line.startswith(f"{only}/ccache gcc -fprofile-arcs -ftest-coverage -c {tree}/lib/x.c |")


@pytest.mark.parametrize(
    ("variables", "compilers"),
    [
        ((), ()),
        (("LLVM=1",), ("clang",)),
        (("W=1", "LLVM=-15"), ("clang-15",)),
        (("LLVM=1", "LLVM="), ()),  # the last one wins, as on make's command line
        (("LLVM=/usr/lib/llvm-15/bin/",), ()),  # run by its path: no script on PATH stands in front
    ],
)
def test_the_clang_kbuild_runs_for_llvm(variables: tuple[str, ...], compilers: tuple[str, ...]) -> None:
    assert wrapper.llvm_compilers(variables) == compilers


def test_two_processes_re_pointing_the_tree_link_each_use_a_scratch_name_of_their_own(tmp_path: Path) -> None:
    """xdist workers of one run re-point the same build directory's tree link at once: a shared scratch name let
    one worker's symlink_to meet the other's (FileExistsError at collection)."""
    import os
    import subprocess
    import sys

    from pytest_kunit.kernel import wrapper_scripts

    link = tmp_path / wrapper_scripts.TREE_LINK
    program = (
        "import sys; from pathlib import Path; from pytest_kunit.kernel.wrapper_scripts import _link\n"
        "for i in range(5000): _link(Path(sys.argv[1]), Path(sys.argv[2] + str(i % 2)))\n"
    )
    runs = [subprocess.Popen([sys.executable, "-c", program, str(link), str(tmp_path / "tree")]) for _ in range(2)]
    assert [run.wait() for run in runs] == [0, 0]
    assert os.readlink(link) in (str(tmp_path / "tree0"), str(tmp_path / "tree1"))
