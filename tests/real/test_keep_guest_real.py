"""--kunit-keep-guest on a real kernel: the framework fragment's module suites (UML, module mode) run on fresh guests,
then on a guest kept up between runs, give the same verdict case by case; the kept guest served its second run with
no boot, through the real /init's serve loop."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_kunit.guest import keepers

from .conftest import FRAMEWORK, TIER_CACHE, Kunit

pytestmark = [pytest.mark.real("modules"), pytest.mark.xdist_group("modules")]

# The fragment's module suites that fault nowhere (kunit-test.ko's try-catch suite faults on purpose, which ends a
# kept guest): the example module, the mock tests and the mock example's two suites.
MODULE_SUITES = tuple(f"{FRAMEWORK}::{suite}" for suite in ("example", "kunit_mock", "eeprom_buffer_fake"))
MODULES = ("--kunit-arch=um", "--kunit-modules")


@pytest.fixture
def ended_after() -> Iterator[None]:
    yield
    keepers.end_all(TIER_CACHE)  # no guest outlives the test


def test_verdicts_from_a_kept_guest_equal_those_from_fresh_boots_case_by_case(kunit: Kunit, ended_after: None) -> None:
    kunit.kernel("modules")
    fresh = kunit.run(*MODULES, *MODULE_SUITES)
    assert "guest boots: 1 " in fresh.stdout, fresh.report()
    first = kunit.run(*MODULES, "--kunit-keep-guest", *MODULE_SUITES)
    assert "guest boots: 1 " in first.stdout and "was ended" not in first.stdout, first.report()
    second = kunit.run(*MODULES, "--kunit-keep-guest", *MODULE_SUITES)
    assert "guest boots: 0 " in second.stdout and "batches on a kept guest: 1" in second.stdout, second.report()
    assert fresh.outcomes, fresh.report()
    assert {suite.split(".")[0] for suite in fresh.outcomes} >= {"example", "kunit_mock", "eeprom_buffer_fake"}
    assert first.outcomes == fresh.outcomes, first.report()
    assert second.outcomes == fresh.outcomes, second.report()
    assert "skipped" in fresh.outcomes.values()  # the example suite's skips, as the console said them
