"""What the xdist controller hands each worker (its `workerinput`) and what each worker hands back at its end (its
`workeroutput`), as typed values: the only place the keys are spelt. Both carry the protocol's version, so a worker
and a controller running different pytest-kunit versions say so instead of misreading each other."""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, TypeGuard, Union, get_args, get_origin, get_type_hints

import pytest

from ..console.transcript import strip_controls
from ..errors import KunitError
from ..findings.sanitizer_verdicts import OutsideReport
from ..model import BuiltKernel, Durations, Stats
from .workers import workerinput

PROTOCOL = 1  # raise whenever a field is added, removed or changes meaning
VERSION_KEY = "kunit_protocol"
_INPUT = {"durations": "kunit_durations", "fragments": "kunit_fragments", "cache_id": "kunit_cache_id"}
_SERVICE_KEY = "kunit_service"  # an execnet channel: passed through as it is
_OUTPUT = {
    "stats": "kunit_stats",
    "suite_seconds": "kunit_suite_seconds",
    "outside_reports": "kunit_outside_reports",
    "kernels": "kunit_kernels",
    "coverage_boots": "kunit_coverage_boots",
}
_SUMMED_STATS = tuple(field.name for field in fields(Stats) if field.name != "filters")
# Each field's declared type, which a worker's value must have: a worker's output is data from another process,
# possibly another host, and what it says reaches the controller's files and terminal.
_KERNEL_TYPES = get_type_hints(BuiltKernel)
_REPORT_TYPES = get_type_hints(OutsideReport)


class ProtocolMismatch(KunitError):
    """A worker and its controller do not speak the same protocol: different pytest-kunit versions."""


def _mismatch(side: str, what: str) -> ProtocolMismatch:
    return ProtocolMismatch(
        f"The {side} sent pytest-kunit data this process cannot read ({what}; this process speaks protocol "
        f"{PROTOCOL}): the xdist controller and its workers run different pytest-kunit versions, or a worker sent what "
        "no pytest-kunit sends.",
        "install the same pytest-kunit on the controller and on every worker host (-d --tx), and run again.",
    )


def _check_version(given: Mapping[str, Any], side: str) -> None:
    version = given.get(VERSION_KEY)
    if version != PROTOCOL:
        raise _mismatch(side, "no protocol version" if version is None else f"protocol {version!r}")


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and 0 <= value < math.inf


def _fits(value: Any, declared: Any) -> bool:
    """Whether `value`, as plain data from a worker, has the `declared` type of a dataclass field."""
    if declared is bool:
        return type(value) is bool
    if declared is float:
        return _is_number(value)
    if declared is str:
        return isinstance(value, str)
    if declared is type(None):
        return value is None
    origin, arguments = get_origin(declared), get_args(declared)
    if origin in (Union, types.UnionType):
        return any(_fits(value, argument) for argument in arguments)
    if origin is tuple and arguments[1:] == (Ellipsis,):
        return isinstance(value, list | tuple) and all(_fits(item, arguments[0]) for item in value)
    raise TypeError(f"no check for a field declared {declared!r}")  # a new field's type: teach _fits it


def _typed(value: Any, declared: dict[str, Any]) -> TypeGuard[dict[str, Any]]:
    """Whether `value` is a dataclass's fields as a dict, each of its declared type."""
    return (
        isinstance(value, dict)
        and set(value) == set(declared)
        and all(_fits(value[name], kind) for name, kind in declared.items())
    )


def _clean(value: Any) -> Any:
    """A worker's text (a string, or a sequence of them) without terminal controls: the controller shows it on its
    terminal and in its reports; anything else as it is."""
    if isinstance(value, str):
        return strip_controls(value)
    if isinstance(value, list | tuple):
        return tuple(map(_clean, value))
    return value


def _cleaned(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: _clean(value) for name, value in fields.items()}


def _is_boot_name(name: Any) -> bool:
    """A boot's directory as a worker names it: one plain name inside the run's coverage directory, never a path."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and name.isprintable()


def _valid_durations(value: Any) -> TypeGuard[Durations]:
    return isinstance(value, dict) and all(
        isinstance(kernel, str)
        and isinstance(suites, dict)
        and all(isinstance(suite, str) and _is_number(seconds) for suite, seconds in suites.items())
        for kernel, suites in value.items()
    )


@dataclass(frozen=True)
class WorkerInput:
    """What the controller hands every worker when it starts."""

    durations: Durations  # the stored suite durations the controller planned with: workers plan the same batches
    fragments: dict[str, str]  # fragment name -> the token to ask the controller's image service for it by
    cache_id: str  # the controller's cache identity: a worker sharing the cache builds for itself
    service: Any  # an execnet channel to the controller's image service (image_service.py)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {VERSION_KEY: PROTOCOL, _SERVICE_KEY: self.service}
        data |= {key: getattr(self, name) for name, key in _INPUT.items()}
        return data

    @staticmethod
    def from_dict(given: Mapping[str, Any]) -> WorkerInput:
        """The controller's input, checked; ProtocolMismatch if it is not what this version sends."""
        _check_version(given, "xdist controller")
        durations, fragments, cache_id = (given.get(key) for key in _INPUT.values())
        if not _valid_durations(durations):
            raise _mismatch("xdist controller", "malformed durations")
        if not isinstance(fragments, dict) or not all(
            isinstance(name, str) and isinstance(token, str) for name, token in fragments.items()
        ):
            raise _mismatch("xdist controller", "malformed fragments")
        if not isinstance(cache_id, str) or _SERVICE_KEY not in given:
            raise _mismatch("xdist controller", "no cache identity or image service")
        return WorkerInput(durations, fragments, cache_id, given[_SERVICE_KEY])


@dataclass(frozen=True)
class WorkerOutput:
    """What a worker hands back at its end: its figures, timings, findings outside any case, kernels, boots."""

    stats: dict[str, float]  # Stats' summed fields (not its filters, which only the process that booted shows)
    suite_seconds: Durations  # suite run times measured here, for the controller to store
    outside_reports: list[dict[str, Any]]  # OutsideReports.dump(): sanitizer reports printed while no case ran
    kernels: tuple[BuiltKernel, ...]  # what this worker knows of each fragment's kernel
    # The boots whose GCOV counters were kept, by their directories' names inside the run's coverage directory: the
    # controller finds them in its own cache (cachelayout.py), so a worker can name nothing outside it.
    coverage_boots: list[str]

    @staticmethod
    def of(
        stats: Stats,
        suite_seconds: Durations,
        outside: list[dict[str, Any]],
        kernels: list[BuiltKernel],
        coverage_boots: list[str],
    ) -> WorkerOutput:
        summed = {name: getattr(stats, name) for name in _SUMMED_STATS}
        boots = [Path(boot).name for boot in coverage_boots]
        return WorkerOutput(summed, suite_seconds, outside, tuple(kernels), boots)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {VERSION_KEY: PROTOCOL}
        data |= {key: getattr(self, name) for name, key in _OUTPUT.items()}
        data[_OUTPUT["kernels"]] = [asdict(kernel) for kernel in self.kernels]
        return data

    @staticmethod
    def from_dict(given: Mapping[str, Any]) -> WorkerOutput | None:
        """A worker's output, checked; None for a worker that handed back nothing (it crashed), ProtocolMismatch for
        one that is not what this version sends."""
        if not given:
            return None
        _check_version(given, "xdist worker")
        stats, suite_seconds, outside, kernels, boots = (given.get(key) for key in _OUTPUT.values())
        if not isinstance(stats, dict) or set(stats) != set(_SUMMED_STATS) or not all(map(_is_number, stats.values())):
            raise _mismatch("xdist worker", "malformed figures")
        if not _valid_durations(suite_seconds):
            raise _mismatch("xdist worker", "malformed suite durations")
        if not isinstance(outside, list) or not all(_typed(report, _REPORT_TYPES) for report in outside):
            raise _mismatch("xdist worker", "malformed sanitizer reports")
        if not isinstance(kernels, list) or not all(_typed(kernel, _KERNEL_TYPES) for kernel in kernels):
            raise _mismatch("xdist worker", "malformed kernels")
        if not isinstance(boots, list) or not all(map(_is_boot_name, boots)):
            raise _mismatch("xdist worker", "malformed coverage boots: each must be one name, never a path")
        reports = [_cleaned(report) for report in outside]
        built = tuple(BuiltKernel(**_cleaned(kernel)) for kernel in kernels)
        return WorkerOutput(stats, suite_seconds, reports, built, boots)


def received_input(config: pytest.Config) -> WorkerInput | None:
    """What the controller handed this worker, checked; None outside an xdist worker."""
    given = workerinput(config)
    return None if given is None else WorkerInput.from_dict(given)
