"""--kunit-keep-guest for built-in suites on a real kernel (the series' kunit.autorun and debugfs run files; UML, the
framework fragment): the suites run on fresh boots, then twice on a guest kept up, booted with kunit.autorun=0 and
running them again through their run files, give the same verdicts case by case; the second run boots nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_kunit.guest import keepers

from .conftest import FRAMEWORK, TIER_CACHE, Kunit

pytestmark = [pytest.mark.real("served"), pytest.mark.xdist_group("served")]

# Built-in suites of the fragment that fault nowhere (the try-catch suite faults on purpose, which ends a kept guest):
# the example, the mock, the EEPROM example's fake and the debugfs suite itself, run again after boot.
SUITES = tuple(f"{FRAMEWORK}::{suite}" for suite in ("example", "kunit_mock", "eeprom_buffer_fake", "kunit_debugfs"))
SERVED = ("--kunit-arch=um", "--kunit-keep-guest")


@pytest.fixture
def ended_around() -> Iterator[None]:
    keepers.end_all(TIER_CACHE)  # the first kept run boots its guest: none is left from a run before
    yield
    keepers.end_all(TIER_CACHE)  # no guest outlives the test


def test_verdicts_of_suites_run_again_on_a_kept_guest_equal_those_from_fresh_boots(
    kunit: Kunit, ended_around: None
) -> None:
    kunit.kernel("served")
    # One case a batch selects part of its suite: each boots as usual, none on a kept guest.
    fresh = kunit.run(*SERVED, "--kunit-isolate=case", *SUITES)
    assert "batches on a kept guest" not in fresh.stdout and "guest boots: 1 " not in fresh.stdout, fresh.report()
    first = kunit.run(*SERVED, *SUITES)
    assert "guest boots: 1 " in first.stdout and "was ended" not in first.stdout, first.report()
    second = kunit.run(*SERVED, *SUITES)
    assert "guest boots: 0 " in second.stdout and "batches on a kept guest: 1" in second.stdout, second.report()
    assert {suite.split(".")[0] for suite in fresh.outcomes} == {
        "example",
        "kunit_mock",
        "eeprom_buffer_fake",
        "kunit_debugfs",
    }, fresh.report()
    assert first.outcomes == fresh.outcomes, first.report()
    assert second.outcomes == fresh.outcomes, second.report()
    assert "skipped" in fresh.outcomes.values()  # the example suite's skips, as the console said them
