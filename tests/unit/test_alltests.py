"""--kunit-alltests' fragment: kunit.py's path, and a node id the xdist controller plans as any fragment's."""

from __future__ import annotations

from pytest_kunit.arch import ARCHES
from pytest_kunit.fragments.alltests import NODEID
from pytest_kunit.guest.planning import PlannedCase, case_from_nodeid, plan_batches
from pytest_kunit.options import Isolate


def test_the_node_id_is_kunit_py_s_path() -> None:
    # kunit_kernel.py's ALL_TESTS_CONFIG_PATH, 6.1 and 6.12 alike.
    assert NODEID == "tools/testing/kunit/configs/all_tests.config"


def test_the_controller_reads_its_cases_from_node_ids() -> None:
    assert case_from_nodeid(f"{NODEID}::kunit-log-test::kunit_log_test") == PlannedCase(
        f"{NODEID}::kunit-log-test::kunit_log_test", NODEID, "kunit-log-test", "kunit_log_test"
    )
    assert case_from_nodeid(f"{NODEID}::um::example::simple", matrix=("um", "x86_64")) == PlannedCase(
        f"{NODEID}::um::example::simple", f"{NODEID}::um", "example", "simple"
    )
    assert case_from_nodeid("tools/testing/kunit/configs/default.config::example::simple") is None


def test_its_suites_are_dealt_to_batches_not_one_boot_each() -> None:
    cases = [PlannedCase(f"{NODEID}::s{index}::c", NODEID, f"s{index}", "c") for index in range(75)]
    assert len(set(plan_batches(cases, 2, Isolate.NONE).values())) == 2


# What kunit.py adds to every x86_64 run, all_tests.config's included: qemu_configs/x86_64.py's kconfig (6.1, 6.12).
KUNIT_PY_X86_64 = {"CONFIG_SERIAL_8250=y", "CONFIG_SERIAL_8250_CONSOLE=y"}
# What pytest-kunit adds besides, for its boot alone (QEMU starts vmlinux through the PVH note; 64BIT is what
# ARCH=x86_64 sets anyway): on 6.12's all_tests.config the two .config files differ in these lines only.
BOOT_ONLY = {"CONFIG_64BIT=y", "CONFIG_HYPERVISOR_GUEST=y", "CONFIG_PVH=y"}


def test_x86_64_alltests_is_kunit_py_s_fragment_plus_the_boot_s_own_lines() -> None:
    """KernelCI's job, `kunit.py run --arch=x86_64 --alltests`: the tree's all_tests.config (collected as is) and
    the architecture's lines, which must be kunit.py's and nothing that could add or drop a test."""
    assert set(ARCHES["x86_64"].kconfig) == KUNIT_PY_X86_64 | BOOT_ONLY
