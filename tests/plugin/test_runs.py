"""The whole plugin against the fake kernel: outcomes, selection, boots, reports."""

from __future__ import annotations

import json
import shutil
import tarfile
import xml.etree.ElementTree as ET

import pytest

from .conftest import FAKE, FakeKernel


def test_outcomes_map_from_the_console(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-rA"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*example.example_failing_test FAILED at lib/kunit/kunit-example-test.c:11*",
            "*EXPECTATION FAILED at lib/kunit/kunit-example-test.c:11",
            "*Expected 1 + 1 == 3, but*",
            "*guest boots: 2*",
            "*SKIPPED*this test should be skipped*",
        ]
    )
    # One list boot, then one boot for everything, with no filter.
    assert fake_kernel.filters() == [None]


def test_parameterised_case_fails_when_one_parameter_fails(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-k", "example_params_test"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*failing parameters: value 2*", "*kunit parameters*", "*passed  value 1*", "*failed  value 2*"]
    )


def test_node_ids_and_junit_xml(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    result.stdout.fnmatch_lines(
        [
            "kunit.kunitconfig::example::example_simple_test",
            "kunit.kunitconfig::example::example_failing_test",
            "kunit.kunitconfig::other::second",
        ]
    )
    xml = project.path / "junit.xml"
    project.runpytest(*fake_kernel.options(f"--junitxml={xml}"))
    cases = ET.parse(xml).getroot().findall(".//testcase")
    assert sorted(case.get("name", "") for case in cases) == sorted(
        [
            "example_simple_test",
            "example_failing_test",
            "example_skip_test",
            "example_params_test",
            "first",
            "second",
        ]
    )
    failing = next(case for case in cases if case.get("name") == "example_failing_test")
    assert failing.find("failure") is not None


def test_k_selection_boots_exactly_the_chosen_case(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-k", "example_simple_test"))
    result.assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["example.example_simple_test"]


def test_whole_suites_are_named_once(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-k", "other or example_simple_test"))
    result.assert_outcomes(passed=3)
    assert fake_kernel.filters() == ["example.example_simple_test,other"]


def test_node_id_selection(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options(), "kunit.kunitconfig::other::second")
    result.assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["other.second"]


def test_last_failed_reboots_only_the_failures(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options("--lf")).assert_outcomes(passed=3, failed=2, skipped=1)
    fake_kernel.qemu_log.unlink()
    result = project.runpytest(*fake_kernel.options("--lf"))
    result.assert_outcomes(failed=2)
    assert fake_kernel.filters() == ["example.example_failing_test,example.example_params_test"]


def test_single_glob_trees_boot_once_per_suite(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    (fake_kernel.tree / "lib/kunit/executor.c").write_text("/* one glob only */\n")
    spec = fake_kernel.spec()
    spec["single_glob"] = True
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options("-k", "example_simple_test or first or second"))
    result.assert_outcomes(passed=3)
    assert fake_kernel.filters() == ["example.example_simple_test", "other"]


@pytest.mark.parametrize(("isolate", "boots"), [("none", 1), ("suite", 2), ("case", 6)])
def test_isolation_sets_the_number_of_boots(
    project: pytest.Pytester, fake_kernel: FakeKernel, isolate: str, boots: int
) -> None:
    project.runpytest(*fake_kernel.options(f"--kunit-isolate={isolate}")).assert_outcomes(passed=3, failed=2, skipped=1)
    assert len(fake_kernel.test_boots()) == boots


def test_tap14_dialect(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    spec["dialect"] = "tap14"
    fake_kernel.write_spec(spec)
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)


def test_case_without_result_line_is_an_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="noresult")
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*other.first NO RESULT*", "*without printing this case's result*"])


def test_guest_killing_crash_costs_one_extra_boot(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("example", "example_simple_test", outcome="crash", kills_guest=True)
    result = project.runpytest(*fake_kernel.options())
    result.assert_outcomes(passed=2, failed=3, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*example.example_simple_test CRASHED*",
            "*kernel crash report:*",
            "*BUG: kernel NULL pointer dereference*",
        ]
    )
    # The second boot runs exactly what the first one did not reach.
    assert fake_kernel.filters() == [
        None,
        "example.example_failing_test,example.example_skip_test,example.example_params_test,other",
    ]


def test_kernel_reported_crash_needs_no_reboot(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("example", "example_simple_test", outcome="crash")
    result = project.runpytest(*fake_kernel.options("-k", "example_simple_test or other"))
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*example.example_simple_test CRASHED*", "*try faulted*"])
    assert len(fake_kernel.test_boots()) == 1


def test_kernel_reported_timeout(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="timeout")
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.first TIMED OUT*", "*try timed out*"])


def test_silent_guest_is_killed_and_the_case_timed_out(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="hang")
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-timeout=2"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.first TIMED OUT*"])
    # Silent with a case left to run, the hang may have been that one's: first runs again alone, and hangs again.
    assert fake_kernel.filters() == ["other", "other.first", "other.second"]


def test_a_hang_right_after_a_passing_case_is_blamed_on_the_hanging_case(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """KUnit prints a result line without a newline and printk holds such a line back until the next one: a hang
    right after a passing case hides that case's result, so the passing case looks in flight."""
    spec = fake_kernel.spec()
    spec["unterminated_results"] = True
    fake_kernel.write_spec(spec)
    fake_kernel.set_case("other", "second", outcome="hang")
    fake_kernel.set_case("other", "first", outcome="pass")
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-timeout=2", "-rA"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.second TIMED OUT*", "*with later cases to run*"])
    assert "other.first TIMED OUT" not in result.stdout.str()
    assert fake_kernel.filters() == ["other", "other.first", "other.second"]


def test_panic_in_a_case_loses_nothing_else(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("example", "example_failing_test", outcome="panic")
    result = project.runpytest(*fake_kernel.options())
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["*example.example_failing_test CRASHED*", "*Kernel panic - not syncing*"])
    assert len(fake_kernel.test_boots()) == 2


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("panic_before_kunit", "*The kernel panicked before KUnit started.*"),
        ("no_ktap", "*no KTAP output at all*"),
        ("silent_kernel", "*The kernel printed nothing: it died before its console came up*"),
    ],
)
def test_guest_that_never_starts_kunit(
    project: pytest.Pytester, fake_kernel: FakeKernel, flag: str, message: str
) -> None:
    spec = fake_kernel.spec()
    spec[flag] = True
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options())
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message, "*What to do:*"])


def test_kvm_failure_falls_back_to_tcg(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    spec["kvm"] = "abort"
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options("--kunit-accel=kvm", "-k", "other"))
    result.assert_outcomes(passed=2)
    # The list boot finds KVM broken; every later boot goes straight to TCG.
    assert [boot["accel"] for boot in fake_kernel.boots()] == ["kvm", "tcg", "tcg"]
    # Only TCG guests run their clocks on the instruction count (KVM refuses -icount).
    assert ["-icount" in boot["argv"] for boot in fake_kernel.boots()] == [False, True, True]


def test_manual_fragments_only_run_when_named(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makefile(".kunitconfig", faults="# pytest-kunit: manual\nCONFIG_KUNIT=y\n")
    collected = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    assert "faults.kunitconfig" not in collected.stdout.str()
    named = project.runpytest(*fake_kernel.options("--collect-only", "-q"), "faults.kunitconfig")
    named.stdout.fnmatch_lines(["faults.kunitconfig::example::example_simple_test"])


def test_configuration_is_kunit_py_s_one_pass(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """The fragment and the guest's needs, completed by Kconfig's defaults, as kunit.py's olddefconfig does."""
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    (build,) = fake_kernel.cache.glob("build/*/")
    assert (build / "make-runs").read_text().split() == ["olddefconfig", "syncconfig", "vmlinux"]
    config = set((build / ".config").read_text().split())
    # What Kconfig turns on by default stays on (SYSFS decides a lib/kunit verdict on real trees).
    assert {"CONFIG_FAKE_SYSFS=y", "CONFIG_PVH=y", "CONFIG_KUNIT_TEST=y", "CONFIG_SERIAL_8250_CONSOLE=y"} <= config


def test_plugin_is_inert_without_kunit(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_out_of_tree_suite_is_built_in_without_touching_the_source(
    pytester: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    shutil.copytree(FAKE / "outoftree/mysuite", pytester.path / "mysuite")
    before = (fake_kernel.tree / "Kconfig").read_text()
    result = pytester.runpytest(*fake_kernel.options("-k", "my_"), "mysuite/mysuite.kunitconfig")
    result.assert_outcomes(passed=1, failed=1)
    assert fake_kernel.filters() == ["my-suite"]
    result.stdout.fnmatch_lines(["*my-suite.my_failing_case FAILED at pytest-kunit/mysuite/my-test.c:9*"])
    assert (fake_kernel.tree / "Kconfig").read_text() == before
    assert not (fake_kernel.tree / "pytest-kunit").exists()


def test_out_of_tree_suite_changes_rebuild_and_nothing_else_does(
    pytester: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    tarball = pytester.path / "linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(fake_kernel.tree, arcname="linux-fake")
    shutil.copytree(FAKE / "outoftree/mysuite", pytester.path / "mysuite")
    options = [*fake_kernel.options("-k", "my_"), f"--kunit-kernel-src={tarball}", "mysuite/mysuite.kunitconfig"]
    pytester.runpytest(*options).assert_outcomes(passed=1, failed=1)
    pytester.runpytest(*options).stdout.fnmatch_lines(["*kernel builds: 0 *"])
    suite = pytester.path / "mysuite/fake-suite.json"
    suite.write_text(suite.read_text().replace('"outcome": "fail", ', ""))
    result = pytester.runpytest(*options)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*kernel builds: 1 *"])


def test_xdist_workers_boot_their_own_batches(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2", "-v"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    # Built once (the other worker waits on the lock and reuses it), listed once, then one boot per worker,
    # each for whole suites only.
    assert (fake_kernel.cache / "build").exists()
    make_runs = [path.read_text().splitlines() for path in fake_kernel.cache.glob("build/*/make-runs")]
    assert sum(runs.count("vmlinux") for runs in make_runs) == 1
    assert sorted(f or "" for f in fake_kernel.filters()) == ["example", "other"]
    result.stdout.fnmatch_lines(["*guest boots: 3 *"])  # the list boot, then one per worker


def test_xdist_deals_a_one_glob_tree_s_suites_in_a_few_boots(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """A tree whose filter takes one glob (every tree without the series) ran a boot per suite under -n; suites are
    now dealt in groups sharing a prefix, each batch named by a glob or two."""
    (fake_kernel.tree / "lib/kunit/executor.c").write_text("/* one glob only */\n")
    spec = fake_kernel.spec()
    spec["single_glob"] = True
    families = ("kunit", "net", "ext4", "string")
    spec["suites"] = [
        {"name": f"{family}_{n}", "cases": [{"name": "a"}, {"name": "b"}]} for family in families for n in range(4)
    ]
    fake_kernel.write_spec(spec)
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2"))
    result.assert_outcomes(passed=32)
    filters = fake_kernel.filters()
    assert 2 <= len(filters) <= 4, filters  # was 16, one per suite
    assert all(glob is not None and "," not in glob for glob in filters)


def test_xdist_with_case_isolation(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2", "--kunit-isolate=case"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    assert len(fake_kernel.test_boots()) == 6


def test_suite_times_are_kept_for_the_next_plan(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    files = list(fake_kernel.cache.glob("durations/*.json"))
    assert len(files) == 1
    measured = json.loads(files[0].read_text())
    assert set(measured["kunit.kunitconfig"]) == {"example", "other"}
    assert all(seconds >= 0 for seconds in measured["kunit.kunitconfig"].values())
