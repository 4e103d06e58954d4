"""--kunit-modules: tristate suites built as modules (CONFIG_MODULES=y), loaded by the initramfs's /init; an edit to
a module's source makes that module alone and boots the unchanged image. The suite modsuite (CONFIG_FAKE_MODULE_TEST,
tristate; added to the spec here) can be a module, example (KUNIT_EXAMPLE_TEST, bool) cannot; the fake QEMU runs a
module's suite when the boot's /init arguments name it, from the .ko the initramfs holds."""

from __future__ import annotations

import time

import pytest

from .conftest import FakeKernel

FRAGMENT = "CONFIG_KUNIT=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\nCONFIG_FAKE_MODULE_TEST=y\n"
MODULE_SOURCE = "lib/kunit/fake-module-test.c"


@pytest.fixture
def modular(project: pytest.Pytester, fake_kernel: FakeKernel) -> FakeKernel:
    spec = fake_kernel.spec()
    spec["objects"] = True
    cases = [{"name": "mod_first"}, {"name": "mod_second"}]
    spec["suites"].append({"name": "modsuite", "config": "FAKE_MODULE_TEST", "cases": cases})
    fake_kernel.write_spec(spec)
    project.makefile(".kunitconfig", kunit=FRAGMENT)
    return fake_kernel


def run(project: pytest.Pytester, kernel: FakeKernel, *extra: str) -> pytest.RunResult:
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    return project.runpytest(*kernel.options("--kunit-modules", "-rA", *extra))


def make_runs(kernel: FakeKernel) -> list[str]:
    (runs,) = kernel.cache.glob("build/*/make-runs")
    return runs.read_text().split()


def dotconfig(kernel: FakeKernel) -> str:
    (config,) = kernel.cache.glob("build/*/.config")
    return config.read_text()


def test_tristate_suites_are_modules_and_run_after_boot(project: pytest.Pytester, modular: FakeKernel) -> None:
    result = run(project, modular)
    result.assert_outcomes(passed=5, failed=2, skipped=1)
    assert "CONFIG_MODULES=y" in dotconfig(modular)
    assert "CONFIG_BLK_DEV_INITRD=y" in dotconfig(modular)  # /init's: without it the kernel finds no root
    assert "CONFIG_FAKE_MODULE_TEST=m" in dotconfig(modular)
    assert "CONFIG_KUNIT=y" in dotconfig(modular) and "CONFIG_KUNIT_EXAMPLE_TEST=y" in dotconfig(modular)
    result.stdout.fnmatch_lines(["kunit: *kunit.kunitconfig: built in (cannot be a module): example, other"])
    assert str(result.stdout).count("built in (cannot be a module)") == 1
    result.stdout.fnmatch_lines(["PASSED *::modsuite::mod_first", "PASSED *::modsuite::mod_second"])
    (boot,) = modular.test_boots()
    assert boot["params"]["pytest_kunit.modules"] == "fake_module_test"
    assert boot["params"]["kunit_shutdown"] == "none"


def test_a_module_that_does_not_load_errors_its_cases_saying_so(project: pytest.Pytester, modular: FakeKernel) -> None:
    modular.set_suite("modsuite", insmod_fails="Unknown symbol in module")
    result = run(project, modular, "-k", "modsuite")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "/init could not load the module fake_module_test, which holds this case's suite:",
            "  fake_module_test: Unknown symbol in module",
            "  insmod: can't insert '/lib/pytest-kunit/fake_module_test.ko': Unknown symbol in module",
        ]
    )


def test_the_ini_twin_turns_it_on(project: pytest.Pytester, modular: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_modules = true\n")
    time.sleep(1.1)
    project.runpytest(*modular.options("-k", "mod_first")).assert_outcomes(passed=1)
    assert "CONFIG_FAKE_MODULE_TEST=m" in dotconfig(modular)


def test_without_it_the_suite_is_built_in(project: pytest.Pytester, modular: FakeKernel) -> None:
    time.sleep(1.1)
    project.runpytest(*modular.options("-k", "mod_first")).assert_outcomes(passed=1)
    assert "CONFIG_FAKE_MODULE_TEST=y" in dotconfig(modular)
    assert "CONFIG_MODULES" not in dotconfig(modular)


def test_inert_without_kunit(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain="def test_one():\n    pass\n")
    result = project.runpytest("-p", "no:cacheprovider", "--kunit-modules", "-o", "kunit_share_kernels=true")
    result.assert_outcomes(passed=1)
    assert "kunit:" not in str(result.stdout)


def test_a_selection_loads_only_the_modules_it_needs(project: pytest.Pytester, modular: FakeKernel) -> None:
    run(project, modular, "-k", "example_simple_test").assert_outcomes(passed=1)
    (boot,) = modular.test_boots()
    assert boot["params"]["pytest_kunit.modules"] == ""
    run(project, modular, "-k", "mod_second").assert_outcomes(passed=1)
    assert modular.test_boots()[-1]["params"]["pytest_kunit.modules"] == "fake_module_test"


def test_cases_a_module_runs_unselected_are_ignored(project: pytest.Pytester, modular: FakeKernel) -> None:
    modular.set_case("modsuite", "mod_first", outcome="fail")
    result = run(project, modular, "-k", "mod_second")
    result.assert_outcomes(passed=1)  # mod_first ran too (6.1 filters no module) and its failure is nobody's


def test_an_edit_to_a_module_source_makes_that_module_alone(project: pytest.Pytester, modular: FakeKernel) -> None:
    run(project, modular, "-k", "mod_first").assert_outcomes(passed=1)
    run(project, modular, "-k", "mod_first").assert_outcomes(passed=1)  # a build that records its directories
    before = make_runs(modular)
    (image,) = modular.cache.glob("build/*/vmlinux")
    linked = image.stat().st_mtime_ns
    with (modular.tree / MODULE_SOURCE).open("a") as source:
        source.write("// fake-outcome: mod_first fail\n")
    result = run(project, modular, "-k", "mod_first")
    result.assert_outcomes(failed=1)  # the new module ran: its outcome is the console's
    result.stdout.fnmatch_lines(["kunit: built kunit.kunitconfig in * (log: *; module-only: 1 module made*"])
    assert make_runs(modular)[len(before) :] == ["lib/kunit/fake-module-test.ko"]
    assert image.stat().st_mtime_ns == linked


def test_an_edit_to_a_built_in_source_takes_the_ordinary_build(project: pytest.Pytester, modular: FakeKernel) -> None:
    run(project, modular, "-k", "mod_first").assert_outcomes(passed=1)
    run(project, modular, "-k", "mod_first").assert_outcomes(passed=1)
    before = make_runs(modular)
    with (modular.tree / "lib/kunit/kunit-example-test.c").open("a") as source:
        source.write("// fake-outcome: example_simple_test fail\n")
    run(project, modular, "-k", "example_simple_test").assert_outcomes(failed=1)
    assert "lib/kunit/fake-module-test.ko" not in make_runs(modular)[len(before) :]
    assert "vmlinux" in make_runs(modular)[len(before) :]


def test_a_module_suite_that_kills_the_guest_is_recovered(project: pytest.Pytester, modular: FakeKernel) -> None:
    """On a kernel that filters a module's suites (6.6+) the rerun leaves the crashed case out."""
    spec = modular.spec()
    spec["module_filter"] = True
    modular.write_spec(spec)
    (modular.tree / "lib/kunit/test.c").write_text(
        "static void kunit_module_init(struct module *mod)\n{\n\tkunit_filter_suites(&set, glob, &err);\n}\n"
    )
    modular.set_case("modsuite", "mod_first", outcome="crash", kills_guest=True)
    result = run(project, modular, "-k", "modsuite")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["PASSED *::modsuite::mod_second", "FAILED *::modsuite::mod_first*"])


def test_on_uml_init_halts_the_guest_which_a_reboot_would_start_again(
    project: pytest.Pytester, modular: FakeKernel
) -> None:
    time.sleep(1.1)
    result = project.runpytest(*modular.uml_options("--kunit-modules", "--kunit-timeout=2", "-k", "modsuite"))
    result.assert_outcomes(passed=2)
    assert all("pytest_kunit.halt" in boot["params"] for boot in modular.boots())
