"""--kunit-alltests: the tree's own tools/testing/kunit/configs/all_tests.config (the fake tree has one) collected as
kunit.py's --alltests runs it: alone when no path is named, beside the fragments named otherwise, under the same node
ids whichever tree it came from (a directory, a tarball, the tree pytest runs in), and under xdist."""

from __future__ import annotations

import shutil
import tarfile

import pytest

from .conftest import FakeKernel, no_traceback
from .test_any_tree import without_source

ALLTESTS = "tools/testing/kunit/configs/all_tests.config"
CASES = [
    f"{ALLTESTS}::example::example_simple_test",
    f"{ALLTESTS}::example::example_failing_test",
    f"{ALLTESTS}::example::example_skip_test",
    f"{ALLTESTS}::example::example_params_test",
    f"{ALLTESTS}::other::first",
    f"{ALLTESTS}::other::second",
]


def built_configs(fake_kernel: FakeKernel) -> list[str]:
    return [path.read_text() for path in sorted(fake_kernel.cache.glob("build/*/.config"))]


def test_alone_without_paths_and_built_from_the_tree_s_file(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """The project's own kunit.kunitconfig (what `pytest --kunit` would collect) is left out, as kunit.py --alltests
    runs all_tests.config alone."""
    result = project.runpytest(*fake_kernel.options("--kunit-alltests", "--collect-only", "-q"))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(CASES, consecutive=True)
    result.stdout.fnmatch_lines(["6 tests collected*"])
    result.stdout.no_fnmatch_line("kunit.kunitconfig::*")
    (config,) = built_configs(fake_kernel)
    assert "CONFIG_DEBUG_FS=y" in config  # the file's own line: the fragment built is the tree's file
    result = project.runpytest(*fake_kernel.options("--kunit-alltests", "-k", "other"))
    result.assert_outcomes(passed=2)


def test_beside_the_fragments_named(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-alltests", "--collect-only", "-q", "kunit.kunitconfig"))
    result.stdout.fnmatch_lines(["kunit.kunitconfig::example::example_simple_test", *CASES, "12 tests collected*"])
    # A node id selects among what is named; the alltests fragment comes whole (-k selects among its cases).
    result = project.runpytest(*fake_kernel.options("--kunit-alltests", "kunit.kunitconfig::other::first"))
    result.assert_outcomes(passed=4, failed=2, skipped=1)


def test_the_ini_twin_and_under_xdist(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_alltests = true\n")
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2", "-k", "other or simple"))
    result.assert_outcomes(passed=3)
    assert len(built_configs(fake_kernel)) == 1
    # The controller plans the fragment's cases as any fragment's: one boot per batch, not one per case.
    assert len(fake_kernel.test_boots()) <= 2


def test_the_tree_pytest_runs_in(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """`cd ~/linux && pytest --kunit --kunit-alltests`: the tree's own file, the tree built in place; there, a node
    id of the fragment names its cases as any fragment's does."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(fake_kernel.tree)
        result = pytester.runpytest_subprocess(*without_source(fake_kernel.options("--kunit-alltests", "-rA")))
        named = pytester.runpytest_subprocess(*without_source(fake_kernel.options("--kunit-alltests", CASES[4])))
        root = pytester.runpytest_subprocess(*without_source(fake_kernel.options("--kunit-alltests", "-q", ".")))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines([f"PASSED {CASES[0]}"])
    result.stdout.fnmatch_lines([f"kunit: kernel tree {fake_kernel.tree} (the tree the fragment lies in), no patches*"])
    named.assert_outcomes(passed=1)
    assert fake_kernel.filters()[1] == "other.first"
    root.assert_outcomes(passed=3, failed=2, skipped=1)  # the tree's root holds the file: collected once


def test_alone_in_a_tree_full_of_fragments_it_announces_none_of_them(
    pytester: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """`cd ~/linux && pytest --kunit --kunit-alltests -n 2` in 6.12's tree, as CI types it, said "21 kunitconfig
    fragments collected ... up to 21 kernel builds" though the run collects and builds all_tests.config alone."""
    for name in ("fs/a", "fs/b", "lib/c", "net/d"):
        (fake_kernel.tree / name).mkdir(parents=True)
        (fake_kernel.tree / name / ".kunitconfig").write_text("CONFIG_KUNIT=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(fake_kernel.tree)
        result = pytester.runpytest_subprocess(*without_source(fake_kernel.options("--kunit-alltests", "-n", "2")))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    assert "kunitconfig fragments collected" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*kernel builds: 1 *"])


def test_a_tarball_s_file_builds_the_tarball(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    tarball = project.path / "linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(fake_kernel.tree, arcname="linux")
    shutil.rmtree(fake_kernel.tree)  # only the tarball remains
    options = [*without_source(fake_kernel.options("--kunit-alltests", "-k", "other")), f"--kunit-kernel-src={tarball}"]
    result = project.runpytest(*options)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"kunit: kernel tree {tarball} (--kunit-kernel-src), no patches*"])
    (config,) = built_configs(fake_kernel)
    assert "CONFIG_DEBUG_FS=y" in config


def test_a_tree_without_the_file_is_a_usage_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    (fake_kernel.tree / ALLTESTS).unlink()
    result = project.runpytest(*fake_kernel.options("--kunit-alltests"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--kunit-alltests: the kernel source {fake_kernel.tree} has no {ALLTESTS}*", "*--kunit-kernel-src*"]
    )
    no_traceback(result)
    assert not any((fake_kernel.cache / "build").iterdir())


def test_alltests_and_replay_are_refused_together(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    (project.path / "console.log").write_text("KTAP version 1\n1..0\n")
    result = project.runpytest(*fake_kernel.options("--kunit-alltests", "--kunit-replay", "console.log"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-alltests builds and runs*--kunit-replay builds nothing*"])


def test_lf_reruns_its_failures_by_their_node_ids(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options("--lf", "--kunit-alltests")).assert_outcomes(passed=3, failed=2, skipped=1)
    result = project.runpytest(*fake_kernel.options("--lf", "--kunit-alltests"))
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([f"FAILED {CASES[1]}*", f"FAILED {CASES[3]}*"])
    assert fake_kernel.filters()[-1] == "example.example_failing_test,example.example_params_test"
