"""Sanitizer reports in a run: the case that printed one fails with it as evidence, one printed while no case ran
fails the run as an error item (once, under xdist too), and --kunit-sanitize builds and validates its own kernel."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from .conftest import FakeKernel

KASAN = [
    "==================================================================",
    "BUG: KASAN: slab-out-of-bounds in overflow_work_fn+0x2a/0x40",
    "Write of size 1 at addr ffff888003b4c47b by task kworker/0:1/17",
    "Call Trace:",
    " <TASK>",
    " overflow_work_fn+0x2a/0x40",
    " </TASK>",
    "==================================================================",
]
LOCKDEP = [
    "======================================================",
    "WARNING: possible circular locking dependency detected",
    "stack backtrace:",
    "Call Trace:",
    " <TASK>",
    " boot_helper+0x1c/0x40",
    " </TASK>",
]


def test_a_report_fails_the_case_whose_line_said_ok(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", printk=KASAN)
    result = project.runpytest(*fake_kernel.options("-n", "2", "-p", "xdist"))
    result.assert_outcomes(passed=2, failed=3, skipped=1)  # two example cases fail on their own
    result.stdout.fnmatch_lines(
        [
            "*other.first FAILED",
            "sanitizer report while this case ran (its own result line said passed: KUnit did not see it): "
            "BUG: KASAN: slab-out-of-bounds in overflow_work_fn+0x2a/0x40",
            "KASAN report:",
            "=====*",
            "BUG: KASAN: slab-out-of-bounds in overflow_work_fn+0x2a/0x40",
        ]
    )
    # Shown once, decoded, in the failure; the case's own console slice still holds the raw lines.
    failure = result.stdout.str().split("other.first FAILED", 1)[1].split("Captured kunit console", 1)[0]
    assert failure.count("BUG: KASAN") == 2  # the summary line and the report


def test_a_report_inside_a_parameter_fails_its_case(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("example", "example_params_test", params=[["value 1", "pass"], ["value 2", "pass", KASAN]])
    result = project.runpytest(*fake_kernel.options("-k", "params"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*example.example_params_test FAILED", "sanitizer report while this case ran*"])


def test_a_report_outside_any_case_fails_the_run_once(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    spec["printk_boot"] = LOCKDEP
    fake_kernel.write_spec(spec)
    junit = project.path / "junit.xml"
    # Both workers' guests print it: one error for the kernel, naming the report and when it came.
    result = project.runpytest(
        *fake_kernel.options("-n", "2", "-p", "xdist", "-k", "not failing", f"--junitxml={junit}")
    )
    # No test of its own (none --lf could rerun): the run's exit status, and why in the terminal summary and JUnit.
    result.assert_outcomes(passed=3, failed=1, skipped=1)  # example_params_test fails on its own
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= kunit: the run failed: kunit.kunitconfig: kernel reports outside any case =*",
            "The kernel printed a lockdep report before KUnit's first suite started (boot), while no test case ran: "
            "lockdep: WARNING: possible circular locking dependency detected",
            "What to do: *",
        ]
    )
    assert result.stdout.str().count("kunit: the run failed") == 1
    assert "outside any case" not in " ".join(case.get("name") or "" for case in ET.parse(junit).iter("testcase"))
    (failure,) = [item for item in ET.parse(junit).iter("property") if item.get("name") == "kunit_run_failure"]
    assert (failure.get("value") or "").startswith("kunit.kunitconfig: The kernel printed a lockdep report before")


def test_a_run_failure_alone_is_a_failed_run_that_maxfail_and_last_failed_leave_alone(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    spec = fake_kernel.spec()
    spec["printk_boot"] = LOCKDEP
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options("-k", "other", "--maxfail=1"))
    result.assert_outcomes(passed=2)  # --maxfail counts no forged report: every case ran
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # pytest's --lf finds no failed test to rerun, so it runs everything: the report is seen again.
    again = project.runpytest(*fake_kernel.options("--lf", "-k", "other"))
    again.assert_outcomes(passed=2)
    assert again.ret == pytest.ExitCode.TESTS_FAILED


def test_a_report_after_the_last_suite_fails_a_selection(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    spec["printk_end"] = KASAN
    spec["suites"][1]["printk_exit"] = LOCKDEP
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "The kernel printed a lockdep report in suite other after its last case*",
            "The kernel printed a KASAN report after the last suite (other) ended*",
        ]
    )


def test_a_clean_console_has_no_error_item(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=2)
    assert "outside any case" not in result.stdout.str()


def test_sanitize_builds_its_own_kernel_with_its_boot_args(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options("-k", "example_simple_test")).assert_outcomes(passed=1)
    result = project.runpytest(*fake_kernel.options("-k", "example_simple_test", "--kunit-sanitize", "ubsan,kasan"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*kernel builds: 1 *"])
    dotconfigs = {path.read_text() for path in fake_kernel.cache.glob("build/*/.config")}
    assert len(dotconfigs) == 2
    assert any("CONFIG_KASAN=y" in text and "CONFIG_UBSAN=y" in text for text in dotconfigs)
    boots = fake_kernel.boots()
    assert all("kasan_multi_shot" in boot["append"] for boot in boots[-1:])
    assert "kasan_multi_shot" not in boots[0]["append"]


def test_ini_twin(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_sanitize = kasan\n")
    result = project.runpytest(*fake_kernel.options("-k", "example_simple_test"))
    result.assert_outcomes(passed=1)
    assert "kasan_multi_shot" in fake_kernel.boots()[-1]["append"]


def test_an_impossible_sanitizer_names_the_missing_dependency(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-sanitize", "kcsan"))
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*The kernel configuration does not hold what the kunitconfig asks for:",
            "*CONFIG_KCSAN=y (--kunit-sanitize kcsan:2): is not set after olddefconfig; "
            "Kconfig: depends on HAVE_ARCH_KCSAN && DEBUG_KERNEL; not set: CONFIG_HAVE_ARCH_KCSAN",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_an_unknown_sanitizer_is_a_usage_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-sanitize", "kasan,asan"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-sanitize: 'kasan,asan' is not a comma-separated list of: kasan, ubsan*"])


LEAK = [
    "unreferenced object 0xffff888003b4c400 (size 123):",
    '  comm "kunit_try_catch", pid 101, jiffies 4294668000 (age 7.120s)',
    "  hex dump (first 32 bytes):",
    "    6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b  kkkkkkkkkkkkkkkk",
    "  backtrace:",
    "    [<ffffffff81234567>] __kmalloc+0x4f/0x120",
    "    [<ffffffff81345678>] sanitize_leak+0x1c/0x40",
]


def test_kmemleak_final_scan_fails_the_run_with_the_leak(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    spec = fake_kernel.spec()
    spec["leaks"] = LEAK
    fake_kernel.write_spec(spec)
    result = project.runpytest(
        *fake_kernel.options("-n", "2", "-p", "xdist", "-k", "other", "--kunit-sanitize=kmemleak")
    )
    # The guest scans at its end (under xdist: the report reaches the controller, which reports it once).
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= kunit: the run failed: kunit.kunitconfig: kernel reports outside any case =*",
            "The kernel printed a kmemleak report after the last suite (other) ended, while no test case ran: "
            "kmemleak: unreferenced object 0xffff888003b4c400 (size 123):",
            "What to do: *",
            "unreferenced object 0xffff888003b4c400 (size 123):",
            "*comm*",
        ]
    )
    assert result.stdout.str().count("    [<ffffffff81345678>] sanitize_leak+0x1c/0x40") == 1
    boots = fake_kernel.test_boots()
    assert boots
    for boot in boots:
        assert "-initrd" in boot["argv"]
        assert {"kunit_shutdown": "none", "pytest_kunit.kmemleak": "scan", "kmemleak.verbose": "1"}.items() <= boot[
            "params"
        ].items()
    assert "pytest_kunit.gcov" not in boots[0]["params"]  # no counters asked for


def test_a_final_scan_killed_before_its_end_fails_the_run(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """The guest goes silent in the scan and the watchdog kills it: every case passed, yet the run is not green."""
    spec = fake_kernel.spec()
    spec["scan_hangs"] = True
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-sanitize=kmemleak", "--kunit-timeout=1"))
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= kunit: the run failed: kunit.kunitconfig: kernel reports outside any case =*",
            "kmemleak's final scan did not finish: leaks found by it, if any, went unreported.",
            "What to do: see below why the guest ended first*",
            "The boot ran every case, then the guest printed nothing for 1.25 s and was killed.",
            "Its console's last line: pytest-kunit: kmemleak's final scan",
        ]
    )


@pytest.mark.parametrize("initrd", [True, False])
def test_a_fragment_with_kmemleak_gets_the_final_scan_if_it_can(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, initrd: bool
) -> None:
    """Without --kunit-sanitize: the kernel's own .config decides; a kernel that cannot run /init is warned of."""
    lines = "CONFIG_KUNIT=y\nCONFIG_KUNIT_TEST=y\nCONFIG_DEBUG_KERNEL=y\nCONFIG_DEBUG_KMEMLEAK=y\nCONFIG_DEBUG_FS=y\n"
    pytester.makefile(".kunitconfig", kunit=lines + ("CONFIG_BLK_DEV_INITRD=y\n" if initrd else ""))
    result = pytester.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=2)  # a clean scan: green
    (boot,) = fake_kernel.test_boots()
    assert ("pytest_kunit.kmemleak=scan" in boot["append"]) is initrd
    assert ("-initrd" in boot["argv"]) is initrd
    warned = "has kmemleak but not CONFIG_BLK_DEV_INITRD, which its final scan at the end of each boot needs"
    assert (warned in result.stdout.str()) is not initrd
