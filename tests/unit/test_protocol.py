"""The xdist worker protocol: what a controller hands a worker and a worker hands back survives the trip as it was,
and anything else (another version's, a damaged payload) is a clear error, never misread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kunit.findings.sanitizer_verdicts import OutsideReport, OutsideReports
from pytest_kunit.host.cachelayout import CacheLayout
from pytest_kunit.model import BuiltKernel, Stats
from pytest_kunit.scaleout.protocol import PROTOCOL, VERSION_KEY, ProtocolMismatch, WorkerInput, WorkerOutput

KERNEL = BuiltKernel("a.kunitconfig", "tree", "the tree", "patches", "digest", "x86_64", "CONFIG_KUNIT=y\n", 12.5)


def output() -> WorkerOutput:
    stats = Stats(builds=1, build_seconds=3.5, boots=2, boot_seconds=4.0, reruns=1, filters=["kunit.filter_glob=x"])
    outside = OutsideReports()
    outside.add(OutsideReport("a.kunitconfig", "KASAN", "BUG: KASAN: x", "at boot", ("line",), "/c.log"))
    return WorkerOutput.of(stats, {"a.kunitconfig": {"example": 1.5}}, outside.dump(), [KERNEL], ["/runs/1-1"])


def test_the_input_survives_the_trip() -> None:
    service = object()  # an execnet channel: passed through as it is
    sent = WorkerInput({"k": {"suite": 2.0}}, {"a.kunitconfig": "token"}, "cache", service)
    data = sent.to_dict()
    assert data[VERSION_KEY] == PROTOCOL
    assert WorkerInput.from_dict(data) == sent


def test_the_output_survives_the_trip() -> None:
    sent = output()
    received = WorkerOutput.from_dict(sent.to_dict())
    assert received == sent
    assert received.kernels == (KERNEL,)
    assert "filters" not in received.stats  # only the process that booted shows its filters
    reports = OutsideReports()
    reports.load(received.outside_reports)
    assert list(reports.by_kernel()) == ["a.kunitconfig"]


def test_a_workers_boots_travel_by_name() -> None:
    assert output().coverage_boots == ["1-1"]  # of /runs/1-1: where the controller finds it is its own business


def test_the_controller_finds_a_named_boot_only_inside_its_run(tmp_path: Path) -> None:
    run = tmp_path / "cache" / "coverage" / "runs" / "run"
    (run / "1-1").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (run / "1-2").symlink_to(victim)
    assert CacheLayout.coverage_boot(run, "1-1") == run / "1-1"
    for name in ("1-2", "../../../../victim", str(victim), "..", "1-3"):  # a link, paths, nothing there
        assert CacheLayout.coverage_boot(run, name) is None


def test_a_workers_text_reaches_the_controller_without_terminal_controls() -> None:
    data = output().to_dict()
    report = data["kunit_outside_reports"][0]
    report.update(title="BUG: \x1b]0;owned\x07KASAN\x1b[2J", lines=["\x1b[31mred\x1b[0m", "a\x08b"])
    data["kunit_kernels"][0]["tree"] = "the \x9b31mtree"
    received = WorkerOutput.from_dict(data)
    assert received is not None
    (cleaned,) = received.outside_reports
    assert (cleaned["title"], cleaned["lines"]) == ("BUG: KASAN", ("red", "ab"))
    assert received.kernels[0].tree == "the 31mtree"


def test_a_worker_that_handed_back_nothing_is_no_output() -> None:
    assert WorkerOutput.from_dict({}) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data.pop(VERSION_KEY),  # a pytest-kunit from before the protocol
        lambda data: data.update({VERSION_KEY: PROTOCOL + 1}),
        lambda data: data.update({"kunit_stats": {"builds": "one"}}),
        lambda data: data["kunit_stats"].pop("boots"),
        lambda data: data.update({"kunit_suite_seconds": {"k": {"suite": -1}}}),
        lambda data: data["kunit_kernels"][0].pop("arch"),
        lambda data: data["kunit_kernels"][0].update({"extra": 1}),
        lambda data: data["kunit_outside_reports"][0].pop("lines"),
        lambda data: data.update({"kunit_coverage_boots": "/runs/1-1"}),
        # A worker names its boots, never a path: the controller moves them into its report, then removes them.
        lambda data: data.update({"kunit_coverage_boots": ["/home/user/victim"]}),
        lambda data: data.update({"kunit_coverage_boots": ["../../../victim"]}),
        lambda data: data.update({"kunit_coverage_boots": [".."]}),
        lambda data: data.update({"kunit_coverage_boots": [""]}),
        # Every field of its declared type, refused here rather than raising where it is used.
        lambda data: data["kunit_outside_reports"][0].update({"lines": 5}),
        lambda data: data["kunit_outside_reports"][0].update({"lines": ["line", 5]}),
        lambda data: data["kunit_outside_reports"][0].update({"title": None}),
        lambda data: data["kunit_outside_reports"][0].update({"missing": "no"}),
        lambda data: data["kunit_kernels"][0].update({"seconds": "12.5"}),
        lambda data: data["kunit_kernels"][0].update({"seconds": True}),
        lambda data: data["kunit_kernels"][0].update({"config": ["CONFIG_KUNIT=y"]}),
    ],
)
def test_a_bad_output_is_a_clear_error(damage: Any) -> None:
    data = output().to_dict()
    damage(data)
    with pytest.raises(ProtocolMismatch) as raised:
        WorkerOutput.from_dict(data)
    assert "different pytest-kunit versions" in raised.value.what
    assert "same pytest-kunit" in raised.value.remedy


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data.pop(VERSION_KEY),
        lambda data: data.update({VERSION_KEY: "1"}),
        lambda data: data.update({"kunit_durations": {"k": {"suite": float("inf")}}}),
        lambda data: data.update({"kunit_fragments": {"a.kunitconfig": 3}}),
        lambda data: data.pop("kunit_cache_id"),
        lambda data: data.pop("kunit_service"),
    ],
)
def test_a_bad_input_is_a_clear_error(damage: Any) -> None:
    data = WorkerInput({}, {}, "cache", object()).to_dict()
    damage(data)
    with pytest.raises(ProtocolMismatch, match="xdist controller"):
        WorkerInput.from_dict(data)
