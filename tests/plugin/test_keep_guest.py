"""--kunit-keep-guest: a --kunit-modules guest kept up between runs serves the next run's module batch without a boot,
takes an edited module over its console, and is ended (the next run boots afresh) once it is not sound. The fake
QEMU's /init serves as the real one does (its `put` and `load` commands); its keeper is a real one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from pytest_kunit.guest import keepers, kept_protocol

from .conftest import FakeKernel
from .test_modules import MODULE_SOURCE, modular  # noqa: F401 (a fixture)

KEEP = ("--kunit-modules", "--kunit-keep-guest", "-rA")


@pytest.fixture
def keeping(project: pytest.Pytester, modular: FakeKernel) -> Iterator[FakeKernel]:  # noqa: F811
    yield modular
    keepers.end_all(modular.cache)  # no keeper outlives its test


def run(project: pytest.Pytester, kernel: FakeKernel, *extra: str) -> pytest.RunResult:
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    return project.runpytest(*kernel.options(*KEEP, *extra))


def served(kernel: FakeKernel) -> list[list[str]]:
    log = kernel.qemu_log.with_name(kernel.qemu_log.name + ".served")
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_next_run_is_served_by_the_kept_guest_without_a_boot(project: pytest.Pytester, keeping: FakeKernel) -> None:
    first = run(project, keeping, "-k", "modsuite")
    first.assert_outcomes(passed=2)
    assert len(keeping.test_boots()) == 1
    second = run(project, keeping, "-k", "modsuite")
    second.assert_outcomes(passed=2)
    second.stdout.fnmatch_lines(["*guest boots: 0 *batches on a kept guest: 1"])
    assert len(keeping.test_boots()) == 1  # no boot of its own
    assert served(keeping) == [["fake_module_test"], ["fake_module_test"]]


def test_an_edited_module_is_sent_into_the_kept_guest_and_its_new_outcome_is_reported(
    project: pytest.Pytester, keeping: FakeKernel
) -> None:
    run(project, keeping, "-k", "mod_first").assert_outcomes(passed=1)
    run(project, keeping, "-k", "mod_first").assert_outcomes(passed=1)  # a build that records its directories
    with (keeping.tree / MODULE_SOURCE).open("a") as source:
        source.write("// fake-outcome: mod_first fail\n")
    result = run(project, keeping, "-k", "mod_first")
    result.assert_outcomes(failed=1)  # the module sent in ran: its outcome is the console's
    assert len(keeping.test_boots()) == 1
    assert len(served(keeping)) == 3


def test_a_guest_whose_case_faulted_is_ended_and_the_next_run_boots_afresh(
    project: pytest.Pytester, keeping: FakeKernel
) -> None:
    keeping.set_case("modsuite", "mod_first", outcome="crash")
    first = run(project, keeping, "-k", "modsuite")
    first.assert_outcomes(passed=1, failed=1)
    first.stdout.fnmatch_lines(["*the kept guest of * was ended (its console shows a fault: *"])
    run(project, keeping, "-k", "modsuite").assert_outcomes(passed=1, failed=1)
    assert len(keeping.test_boots()) == 2


def test_a_guest_left_tainted_is_ended(project: pytest.Pytester, keeping: FakeKernel) -> None:
    spec = keeping.spec()
    spec["taint"] = (1 << 18) | (1 << 9)  # TAINT_WARN besides TAINT_TEST
    keeping.write_spec(spec)
    run(project, keeping, "-k", "modsuite").stdout.fnmatch_lines(["*was ended (the kernel is tainted (0x40200*"])
    run(project, keeping, "-k", "modsuite").assert_outcomes(passed=2)
    assert len(keeping.test_boots()) == 2


def test_a_batch_with_built_in_cases_boots_as_usual_and_the_kept_guest_serves_the_run_after(
    project: pytest.Pytester, keeping: FakeKernel
) -> None:
    run(project, keeping, "-k", "modsuite").assert_outcomes(passed=2)
    (keeper,) = [json.loads(path.read_text())["keeper"] for path in (keeping.cache / "guests").glob("*.json")]
    built_in = run(project, keeping, "-k", "example_simple_test or modsuite")
    built_in.assert_outcomes(passed=3)
    built_in.stdout.fnmatch_lines(["*guest boots: 1 (*"])  # built-in cases run only at boot
    assert "kept guest" not in built_in.stdout.str()
    again = run(project, keeping, "-k", "modsuite")
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["*guest boots: 0 *batches on a kept guest: 1"])
    assert [json.loads(path.read_text())["keeper"] for path in (keeping.cache / "guests").glob("*.json")] == [keeper]


def test_a_taint_the_guest_booted_with_is_no_reason_to_end_it(project: pytest.Pytester, keeping: FakeKernel) -> None:
    spec = keeping.spec()
    spec["boot_taint"] = 1 << 9  # a platform's WARN at boot, before any case: TAINT_WARN
    keeping.write_spec(spec)
    run(project, keeping, "-k", "modsuite").assert_outcomes(passed=2)
    run(project, keeping, "-k", "modsuite").stdout.fnmatch_lines(["*batches on a kept guest: 1"])


def test_what_makes_a_guest_unsound() -> None:
    assert kept_protocol.unsound(["pytest-kunit: tainted 266240"]) == ""  # TAINT_TEST and TAINT_OOT_MODULE
    assert "tainted" in kept_protocol.unsound(["pytest-kunit: tainted 512"])
    assert "would not unload" in kept_protocol.unsound(["pytest-kunit: rmmod failed: fake_module_test"])
    assert "fault" in kept_protocol.unsound(["BUG: kernel NULL pointer dereference, address: 0000000000000000"])


def test_a_rebuilt_image_boots_a_fresh_guest_and_ends_the_one_kept_for_the_old_image(
    project: pytest.Pytester, keeping: FakeKernel
) -> None:
    run(project, keeping, "-k", "modsuite").assert_outcomes(passed=2)
    run(project, keeping, "-k", "modsuite").assert_outcomes(passed=2)  # a build that records its directories
    (old,) = [json.loads(path.read_text())["keeper"] for path in (keeping.cache / "guests").glob("*.json")]
    with (keeping.tree / "lib/kunit/kunit-example-test.c").open("a") as source:
        source.write("// fake-outcome: example_simple_test fail\n")
    run(project, keeping, "-k", "modsuite").assert_outcomes(passed=2)
    assert len(keeping.test_boots()) == 2
    (new,) = [json.loads(path.read_text())["keeper"] for path in (keeping.cache / "guests").glob("*.json")]
    assert new != old
    time.sleep(0.5)  # the old keeper ends its guest, then itself
    assert not keepers.alive(old)


def test_under_xdist_one_worker_uses_the_kept_guest_and_every_verdict_stays(
    project: pytest.Pytester, keeping: FakeKernel
) -> None:
    keeping.set_case("modsuite", "mod_second", outcome="fail")
    for _ in range(2):
        result = run(project, keeping, "-n", "2", "-k", "modsuite or example_simple_test")
        result.assert_outcomes(passed=2, failed=1)
    assert len(list((keeping.cache / "guests").glob("*.json"))) == 1
    assert served(keeping)  # the module batch went to the kept guest


def test_on_a_kernel_that_filters_modules_each_batch_sets_its_own_glob(
    project: pytest.Pytester, keeping: FakeKernel
) -> None:
    """6.6+ filter a loaded module's suites by kunit.filter_glob: a kept guest booted for one selection would go on
    filtering later ones by it, so each batch writes its own."""
    spec = keeping.spec()
    spec["module_filter"] = True
    keeping.write_spec(spec)
    (keeping.tree / "lib/kunit/test.c").write_text(
        "static void kunit_module_init(struct module *mod)\n{\n\tkunit_filter_suites(&set, glob, &err);\n}\n"
    )
    keeping.set_case("modsuite", "mod_first", outcome="fail")
    run(project, keeping, "-k", "mod_second").assert_outcomes(passed=1)
    again = run(project, keeping, "-k", "mod_first")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*batches on a kept guest: 1"])
    assert "run too" not in again.stdout.str()  # the kernel filtered the module's suites: only mod_first ran
