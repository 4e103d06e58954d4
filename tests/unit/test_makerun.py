"""The build's step estimate: a step count a killed build left half-written is no count at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit.kernel.makerun import STEPS, _expected_steps


@pytest.mark.parametrize("damage", ["", "12\x00", "  ", "-3"])
def test_a_truncated_steps_file_counts_as_absent(tmp_path: Path, damage: str) -> None:
    """Before the fix, an empty file aborted the build with int('')."""
    own, other = tmp_path / "own", tmp_path / "other"
    own.mkdir()
    other.mkdir()
    (own / STEPS).write_text(damage)
    assert _expected_steps(own, own / "vmlinux") == (0, "")
    (other / STEPS).write_text("1234\n")
    assert _expected_steps(own, own / "vmlinux") == (1234, "as a build of another configuration")
