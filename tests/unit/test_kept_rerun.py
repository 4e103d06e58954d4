"""Which batches a kept guest runs again through debugfs (kept_protocol.rerun_suites): whole built-in suites of a
kernel with kunit.autorun and no modules; and what such a kernel is built with covers what /init's serve loop needs."""

from __future__ import annotations

from pathlib import Path

from pytest_kunit.arch import ARCHES
from pytest_kunit.findings import guest_init
from pytest_kunit.guest.kept_protocol import rerun_suites
from pytest_kunit.kernel.build_request import SERVE_LINES
from pytest_kunit.model import BuildResult, Kernel, SuiteModule
from pytest_kunit.versions import TreeFeatures

CASES = (("example", "simple"), ("example", "failing"), ("other", "first"), ("other", "second"))


def kernel(autorun: bool = True, modules: tuple[SuiteModule, ...] = ()) -> Kernel:
    build = BuildResult(Path("vmlinux"), "digest", Path("."), False, 0.0, Path("build.log"))
    features = TreeFeatures(filter_list=True, case_timeout=True, autorun=autorun)
    return Kernel("a.kunitconfig", build, ARCHES["x86_64"], features, Path("."), CASES, modules=modules)


def test_whole_suites_run_again_in_the_kernel_s_order() -> None:
    assert rerun_suites(kernel(), list(CASES)) == ("example", "other")
    assert rerun_suites(kernel(), [("other", "first"), ("other", "second")]) == ("other",)


def test_part_of_a_suite_does_not_run_again() -> None:
    assert rerun_suites(kernel(), [("example", "simple")]) is None
    assert rerun_suites(kernel(), [("example", "simple"), ("example", "failing"), ("other", "first")]) is None


def test_a_kernel_without_autorun_or_with_modules_runs_nothing_again() -> None:
    assert rerun_suites(kernel(autorun=False), list(CASES)) is None
    module = SuiteModule("other_test", "lib/other_test.ko", (), (("other", ("first", "second")),))
    assert rerun_suites(kernel(modules=(module,)), [("example", "simple"), ("example", "failing")]) is None


def test_a_kernel_served_again_is_built_with_all_init_s_serve_loop_needs() -> None:
    assert set(guest_init.KCONFIG) <= set(SERVE_LINES)
    assert "CONFIG_KUNIT_DEBUGFS=y" in SERVE_LINES  # the run files
