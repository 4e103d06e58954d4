"""The cache's small files: a damaged one is discarded with a one-line note and never served; writes are atomic."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pytest_kunit.host.cache import (
    LIST_FORMAT,
    CacheWarning,
    CaseList,
    load_case_list,
    load_durations,
    load_kvm_verdict,
    save_case_list,
    save_durations,
    save_kvm_verdict,
    write_atomically,
)
from pytest_kunit.host.cachelayout import CacheLayout

LISTING = CaseList((("example", "simple"), ("example", "failing")), {"simple": ("lib/kunit/x.c", 12)})
DIGEST = "0123456789abcdef"


def test_a_case_list_round_trips(tmp_path: Path) -> None:
    save_case_list(tmp_path, DIGEST, LISTING)
    assert load_case_list(tmp_path, DIGEST) == LISTING
    assert load_case_list(tmp_path, "fedcba9876543210") is None


def damaged(**fields: object) -> bytes:
    """A case list that is whole but for `fields`."""
    data: dict[str, object] = {"format": LIST_FORMAT, "cases": [], "locations": {}, "attributes": []}
    data.update(fields)
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{",
        b"\xff\xfe\x00garbage",
        b"[]",
        json.dumps({"format": LIST_FORMAT}).encode(),
        damaged(format=LIST_FORMAT - 1),
        damaged(cases=[["example"]]),
        damaged(cases={}),
        damaged(locations=[]),
        damaged(locations={"simple": ["x.c", "twelve"]}),
        damaged(attributes={}),
        damaged(attributes=[["example", "simple", 5]]),
        damaged(attributes=[["example", "simple", [["speed"]]]]),
    ],
)
def test_a_damaged_case_list_is_discarded_with_a_note(tmp_path: Path, damage: bytes) -> None:
    path = CacheLayout(tmp_path).case_list(DIGEST)
    path.parent.mkdir(parents=True)
    path.write_bytes(damage)
    with pytest.warns(CacheWarning, match=r"^pytest-kunit: discarded the damaged cache file .*; it will be rebuilt$"):
        assert load_case_list(tmp_path, DIGEST) is None
    assert not path.exists()
    # Rebuilt: the next read is silent.
    save_case_list(tmp_path, DIGEST, LISTING)
    assert load_case_list(tmp_path, DIGEST) == LISTING


def test_a_damaged_file_is_gone_even_when_warnings_are_errors(tmp_path: Path) -> None:
    path = CacheLayout(tmp_path).case_list(DIGEST)
    path.parent.mkdir(parents=True)
    path.write_text("not json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        with pytest.raises(CacheWarning):
            load_case_list(tmp_path, DIGEST)
    assert not path.exists()


@pytest.mark.parametrize("damage", ["", "[1, 2]", '{"k": []}', '{"k": {"suite": "slow"}}', '{"k": {"s": NaN}}'])
def test_damaged_durations_are_discarded(tmp_path: Path, damage: str) -> None:
    save_durations(tmp_path, tmp_path, {"k": {"suite": 1.5}})
    (path,) = (tmp_path / "durations").glob("*.json")
    path.write_text(damage)
    with pytest.warns(CacheWarning):
        assert load_durations(tmp_path, tmp_path) == {}
    save_durations(tmp_path, tmp_path, {"k": {"suite": 2.0}})
    assert load_durations(tmp_path, tmp_path) == {"k": {"suite": 2.0}}


def test_an_atomic_write_leaves_no_part_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "lists" / "x.json"
    write_atomically(target, json.dumps({"old": True}))

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.fsync", full_disk)
    with pytest.raises(OSError):
        write_atomically(target, json.dumps({"new": True}))
    assert json.loads(target.read_text()) == {"old": True}
    assert [path.name for path in target.parent.iterdir()] == ["x.json"]


def test_a_kvm_verdict_round_trips_and_a_damaged_one_is_discarded(tmp_path: Path) -> None:
    assert load_kvm_verdict(tmp_path, "machine") is None
    save_kvm_verdict(tmp_path, "machine", "the guest hung")
    assert load_kvm_verdict(tmp_path, "machine") == "the guest hung"
    (tmp_path / "kvm" / "machine.json").write_text('{"why": 5}')
    with pytest.warns(CacheWarning):
        assert load_kvm_verdict(tmp_path, "machine") is None
