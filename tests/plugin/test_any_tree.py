"""Fragments wherever users keep them: outside the rootdir, inside a kernel tree, named by their directory."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from .conftest import KUNITCONFIG, FakeKernel


def without_source(arguments: list[str]) -> list[str]:
    return [arg for arg in arguments if not arg.startswith("--kunit-kernel-src")]


def outside(fake_kernel: FakeKernel, project: pytest.Pytester, *extra: str) -> list[str]:
    return fake_kernel.options(f"--rootdir={project.path}", *extra)


def test_fragment_outside_the_rootdir_runs_with_a_readable_node_id(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    # As when `--kunit-patches /project/kernel-patches` makes pytest choose that project as the rootdir.
    project.makeini("[pytest]\n")
    elsewhere = tmp_path / "my work" / "mine.kunitconfig"
    elsewhere.parent.mkdir()
    elsewhere.write_text(KUNITCONFIG)
    listed = project.runpytest(*outside(fake_kernel, project, "--collect-only", "-q", str(elsewhere)))
    listed.stdout.fnmatch_lines([f"{elsewhere.as_posix()}::example::example_simple_test"])
    result = project.runpytest(*outside(fake_kernel, project, "-rA", str(elsewhere)))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    # The node id works as an argument: exactly that case boots.
    nodeid = f"{elsewhere}::example::example_simple_test"
    result = project.runpytest(*outside(fake_kernel, project, nodeid))
    result.assert_outcomes(passed=1)
    assert fake_kernel.filters()[-1] == "example.example_simple_test"


def test_two_outside_fragments_of_one_name_are_two_kernels(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    project.makeini("[pytest]\n")
    first, second = tmp_path / "a" / "x.kunitconfig", tmp_path / "b" / "x.kunitconfig"
    for fragment in (first, second):
        fragment.parent.mkdir()
        fragment.write_text(KUNITCONFIG)
    result = project.runpytest(*outside(fake_kernel, project, "-k", "example_simple_test", str(first), str(second)))
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*AssertionError*")


def test_fragment_outside_the_rootdir_under_xdist(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    project.makeini("[pytest]\n")
    elsewhere = tmp_path / "mine.kunitconfig"
    elsewhere.write_text(KUNITCONFIG)
    result = project.runpytest(*outside(fake_kernel, project, "-n", "2", str(elsewhere)))
    result.assert_outcomes(passed=3, failed=2, skipped=1)


@pytest.fixture
def in_tree(fake_kernel: FakeKernel) -> Path:
    """The fake tree holding its own lib/kunit/.kunitconfig, as upstream trees do."""
    fragment = fake_kernel.tree / "lib" / "kunit" / ".kunitconfig"
    fragment.write_text(KUNITCONFIG)
    return fragment


def test_in_tree_fragment_beside_kconfig_and_makefile_is_not_an_out_of_tree_suite(
    project: pytest.Pytester, fake_kernel: FakeKernel, in_tree: Path
) -> None:
    """lib/kunit/.kunitconfig lies beside lib/kunit's Kconfig and Makefile: built in place, never copied in again."""
    (in_tree.parent / "Kconfig").write_text("config KUNIT_EXTRA\n\tbool\n")
    (in_tree.parent / "Makefile").write_text("obj-y += test.o\n")
    result = project.runpytest(*without_source(fake_kernel.options(str(in_tree))))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    assert not any((fake_kernel.cache / "src").iterdir())
    assert not (fake_kernel.tree / "pytest-kunit").exists()


@pytest.mark.parametrize("named", ["file", "directory"])
def test_in_tree_fragment_builds_the_tree_it_lies_in(
    project: pytest.Pytester, fake_kernel: FakeKernel, in_tree: Path, named: str
) -> None:
    argument = in_tree if named == "file" else in_tree.parent
    result = project.runpytest(*without_source(fake_kernel.options("-rA", str(argument))))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines([f"kunit: kernel tree {fake_kernel.tree} (the tree the fragment lies in), no patches*"])


def test_in_tree_run_from_inside_the_tree(pytester: pytest.Pytester, fake_kernel: FakeKernel, in_tree: Path) -> None:
    """`cd ~/linux && pytest --kunit lib/kunit/`, with no ini file anywhere."""
    arguments = without_source(fake_kernel.options("lib/kunit/"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(fake_kernel.tree)
        result = pytester.runpytest_subprocess(*arguments, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["lib/kunit/.kunitconfig::example::example_simple_test"])


def test_default_series_is_never_looked_up_beside_the_rootdir(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, in_tree: Path
) -> None:
    """A project with a kernel-patches/ directory does not get it applied to a user's tree."""
    series = pytester.mkdir("kernel-patches")
    shutil.copy(
        Path(__file__).parent.parent
        / "data"
        / "patches"
        / "failing"
        / next(path.name for path in (Path(__file__).parent.parent / "data" / "patches" / "failing").iterdir()),
        series,
    )
    pytester.makefile(".kunitconfig", kunit=KUNITCONFIG)
    result = pytester.runpytest(*without_source(fake_kernel.options(str(in_tree))))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["*no patches*"])


def age(tree: Path, seconds: float = 60) -> None:
    """Date every file of the tree a minute back, as a checkout that has not been touched since."""
    past = time.time() - seconds
    for path in [tree, *tree.rglob("*")]:
        os.utime(path, (past, past))


def test_every_change_the_build_reads_is_built_after_one_walk_of_the_tree(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's tree is rebuilt only when a file in it changed since the last build started, as Kbuild would: a
    source, a header, a Kconfig symbol, an added or a removed file, or the fragment. Each run walks the tree once."""
    walks = tmp_path / "walks"
    counting = tmp_path / "bin/find"
    counting.parent.mkdir()
    # Only walks of this test's own tree and cache count: PATH is the whole process's, and another thread of it (the
    # real tier's kernel builder, in command two) may start a find of its own meanwhile.
    mine = f'case "$*" in *{tmp_path}*) echo >> {walks} ;; esac'
    counting.write_text(f'#!/bin/sh\n{mine}\nexec {shutil.which("find")} "$@"\n')
    counting.chmod(0o755)
    monkeypatch.setenv("PATH", f"{counting.parent}{os.pathsep}{os.environ['PATH']}")
    header = fake_kernel.tree / "include/linux/fake.h"
    header.parent.mkdir(parents=True)
    header.write_text("#define FAKE 1\n")
    age(fake_kernel.tree)

    def builds(after: str) -> None:
        walks.unlink(missing_ok=True)
        result = project.runpytest(*fake_kernel.options())
        built = "1" if after else "0"
        assert f"kernel builds: {built} " in result.stdout.str(), f"{after or 'no change'}: not {built} builds"
        assert walks.read_text().count("\n") == 1, f"{after or 'no change'}: walks of the tree"

    builds("the first run")
    builds("")
    (fake_kernel.tree / "lib/kunit/kunit-example-test.c").write_text("/* edited */\n")
    builds("a source edited")
    builds("")
    header.write_text("#define FAKE 2\n")
    builds("a header edited")
    kconfig = fake_kernel.tree / "Kconfig"
    kconfig.write_text(kconfig.read_text() + '\nconfig FAKE_ADDED\n\tbool "added"\n\tdefault y\n')
    builds("a Kconfig symbol added")
    (fake_kernel.tree / "lib/kunit/added.c").write_text("")
    builds("a file added")
    (fake_kernel.tree / "lib/kunit/executor.c").unlink()  # a removed file shows in its directory's time
    builds("a file removed")
    (project.path / "kunit.kunitconfig").write_text(KUNITCONFIG + "CONFIG_KUNIT_TEST=n\n")
    builds("the fragment edited")
    builds("")


def test_build_progress_reaches_a_non_terminal_log(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """CI reads a log, not a terminal: the build's lines are there as it happens, not only inside a failure."""
    result = project.runpytest_subprocess(*fake_kernel.options("-p", "no:randomly"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    text = result.stdout.str()
    assert text.index("kunit: built kunit.kunitconfig") < text.index("collected 6 items")
    assert "Captured stdout" not in text
    # Each phase starts with a line of its own, in order, however quickly the fake kernel goes through them.
    phases = ["kunit: configuring kernel", "kunit: building kernel: make", "kunit: listing the cases", "kunit: booting"]
    positions = [text.index(phase) for phase in phases]
    assert positions == sorted(positions)
