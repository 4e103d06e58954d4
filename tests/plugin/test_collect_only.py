"""kunit.py's --list_tests on a kernel built already: `pytest --kunit --collect-only` lists the suites and cases of
the built image without building it again and without a test boot; its one list boot is made only when the image's
case list is not cached yet."""

from __future__ import annotations

import pytest

from .conftest import FakeKernel

LISTED = [
    "kunit.kunitconfig::example::example_simple_test",
    "kunit.kunitconfig::example::example_failing_test",
    "kunit.kunitconfig::example::example_skip_test",
    "kunit.kunitconfig::example::example_params_test",
    "kunit.kunitconfig::other::first",
    "kunit.kunitconfig::other::second",
]


def make_runs(kernel: FakeKernel) -> list[str]:
    (runs,) = kernel.cache.glob("build/*/make-runs")
    return runs.read_text().split()


def list_boots(kernel: FakeKernel) -> int:
    return len(kernel.boots()) - len(kernel.test_boots())


def test_collect_only_on_a_built_kernel_makes_nothing_and_boots_no_test(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    makes, boots = make_runs(fake_kernel), len(fake_kernel.boots())
    assert list_boots(fake_kernel) == 1 and len(fake_kernel.test_boots()) == 1
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(LISTED, consecutive=True)
    result.stdout.fnmatch_lines(["kernel builds: 0 (0.0 s); guest boots: 0 (0.0 s)"])
    assert make_runs(fake_kernel) == makes  # not even a make that would find nothing to do
    assert len(fake_kernel.boots()) == boots  # the case list was cached by the run that built the kernel


def test_collect_only_lists_an_uncached_image_with_its_one_list_boot(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    makes = make_runs(fake_kernel)
    for listing in fake_kernel.cache.glob("lists/*"):  # the image stays; what it holds must be asked again
        listing.unlink()
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    result.stdout.fnmatch_lines(["kunit.kunitconfig::example::example_simple_test", "*6 tests collected*"])
    assert make_runs(fake_kernel) == makes
    assert list_boots(fake_kernel) == 2 and len(fake_kernel.test_boots()) == 1
