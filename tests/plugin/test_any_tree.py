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
    assert not (fake_kernel.cache / "src").exists()
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


def test_unchanged_directory_tree_needs_no_make(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """A user's tree is rebuilt only when a file in it changed since the last build started, as Kbuild would."""
    age(fake_kernel.tree)
    project.runpytest(*fake_kernel.options()).stdout.fnmatch_lines(["*kernel builds: 1 *"])
    project.runpytest(*fake_kernel.options()).stdout.fnmatch_lines(["*kernel builds: 0 *"])
    (fake_kernel.tree / "lib/kunit/kunit-example-test.c").write_text("/* edited */\n")
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    project.runpytest(*fake_kernel.options()).stdout.fnmatch_lines(["*kernel builds: 1 *"])
    project.runpytest(*fake_kernel.options()).stdout.fnmatch_lines(["*kernel builds: 0 *"])
    (fake_kernel.tree / "lib/kunit/executor.c").unlink()  # a removed file shows in its directory's time
    project.runpytest(*fake_kernel.options()).stdout.fnmatch_lines(["*kernel builds: 1 *"])


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
