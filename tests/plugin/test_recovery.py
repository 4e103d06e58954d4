"""Verdicts that do not depend on an earlier crash or on a signal from outside: reruns in fresh guests."""

from __future__ import annotations

import pytest

from .conftest import FakeKernel


def test_hang_only_after_an_earlier_crash_passes_in_a_fresh_guest(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    fake_kernel.set_case("other", "first", outcome="crash")
    fake_kernel.set_case("other", "second", if_crashed="hang")
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-timeout=2", "-rA"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*other.first CRASHED*",
            "*kunit rerun*",
            "*guest 1: the guest went silent and was killed by the watchdog during this case, "
            "after other.first had crashed: BUG: kernel NULL pointer dereference*",
            "*guest 2, fresh: the result above*",
            "*cases run again in a fresh guest: 1 *",
        ]
    )
    assert "other.second TIMED OUT" not in result.stdout.str()
    assert fake_kernel.filters() == ["other", "other.second"]


def test_death_only_after_an_earlier_crash_passes_in_a_fresh_guest(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    fake_kernel.set_case("example", "example_simple_test", outcome="crash")
    fake_kernel.set_case("other", "first", if_crashed="panic")
    result = project.runpytest(*fake_kernel.options("-rA"))
    # Only the crash itself and the cases that fail on purpose fail.
    result.assert_outcomes(passed=2, failed=3, skipped=1)
    result.stdout.fnmatch_lines(["*guest 1: the guest died during this case, after example.example_simple_test*"])
    assert fake_kernel.filters() == [None, "other"]


def test_hang_in_a_clean_guest_too_is_a_timeout_that_tells_of_the_first_guest(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    fake_kernel.set_case("other", "first", outcome="crash")
    fake_kernel.set_case("other", "second", outcome="hang")
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-timeout=2"))
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*other.second TIMED OUT*",
            "*run again in a fresh guest, since an earlier one stopped for a reason that may not have been this case*",
            "*guest 1: the guest went silent*after other.first had crashed*",
        ]
    )
    # The fresh guest runs the case first: its kernel is clean, so its hang is the case's own.
    assert fake_kernel.filters() == ["other", "other.second"]


def test_a_clean_guest_is_not_rerun(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="panic")
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.first CRASHED*"])
    assert "fresh guest" not in result.stdout.str()
    assert fake_kernel.filters() == ["other", "other.second"]


def test_reboot_after_crash_runs_every_later_case_on_a_clean_kernel(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    fake_kernel.set_case("example", "example_simple_test", outcome="crash")
    fake_kernel.set_case("other", "first", if_crashed="hang")
    result = project.runpytest(*fake_kernel.options("--kunit-reboot-after-crash", "--kunit-timeout=2"))
    result.assert_outcomes(passed=2, failed=3, skipped=1)
    result.stdout.fnmatch_lines(["*example.example_simple_test CRASHED*"])
    # The guest is ended right after the crashed case's result line; nothing later runs on that kernel.
    assert fake_kernel.filters() == [
        None,
        "example.example_failing_test,example.example_skip_test,example.example_params_test,other",
    ]
    assert "fresh guest:" not in result.stdout.str()


def test_reboot_after_crash_from_the_ini_file(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_reboot_after_crash = true\n")
    fake_kernel.set_case("other", "first", outcome="crash")
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=1, failed=1)
    assert fake_kernel.filters() == ["other", "other.second"]


@pytest.mark.parametrize(("name", "number"), [("SIGKILL", 9), ("SIGTERM", 15)])
def test_signal_from_outside_once_is_rerun_and_blames_nothing(
    project: pytest.Pytester, fake_kernel: FakeKernel, name: str, number: int
) -> None:
    fake_kernel.set_case("other", "first", outcome="signal", signal=name, times=1)
    result = project.runpytest(*fake_kernel.options("-k", "other", "-rA"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [f"*guest 1: QEMU was killed by signal {number} ({name}) from outside (pytest-kunit did not send it)*"]
    )
    assert fake_kernel.filters() == ["other", "other"]


@pytest.mark.parametrize(("name", "number"), [("SIGKILL", 9), ("SIGTERM", 15)])
def test_signal_from_outside_twice_is_an_error_naming_it(
    project: pytest.Pytester, fake_kernel: FakeKernel, name: str, number: int
) -> None:
    fake_kernel.set_case("other", "first", outcome="signal", signal=name)
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    # Neither the case in flight nor the one after it is blamed: both are errors of the run.
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            f"*QEMU was killed by signal {number} ({name}) from outside (pytest-kunit did not send it), again in a "
            "fresh guest, before this case had a result*",
            "*What to do: find what ends QEMU*",
        ]
    )
    assert "CRASHED" not in result.stdout.str()
    assert len(fake_kernel.test_boots()) == 2


def test_signal_from_outside_before_kunit_is_rerun_then_named(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest(*fake_kernel.options("--collect-only"))  # the case list, cached
    monkeypatch.setenv("FAKE_QEMU_FAULT", '{"do": "kill", "after": 1, "boots": "tests"}')
    result = project.runpytest(*fake_kernel.options("-k", "other"))
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*QEMU was killed by signal 9 (SIGKILL) from outside*again in a fresh guest*"])
    assert len(fake_kernel.test_boots()) == 2


def test_signal_from_outside_while_listing_is_named(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_QEMU_FAULT", '{"do": "kill", "after": 1, "boots": "list"}')
    result = project.runpytest(*fake_kernel.options())
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*QEMU was killed by signal 9 (SIGKILL) from outside (pytest-kunit did not send it) before KUnit started.*"]
    )


def test_reruns_are_counted_across_xdist_workers(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="crash")
    fake_kernel.set_case("other", "second", if_crashed="panic")
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2"))
    result.assert_outcomes(passed=2, failed=3, skipped=1)
    result.stdout.fnmatch_lines(["*cases run again in a fresh guest: 1 *"])
