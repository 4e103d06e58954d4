"""Who this process is in an xdist run, learnt from `config.workerinput` (never from environment variables, which
leak into a pytest session started inside a worker), and what the controller hands every worker."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from .planning import Durations

DURATIONS_KEY = "kunit_durations"


def _workerinput(config: pytest.Config) -> dict[str, Any] | None:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return workerinput


def is_worker(config: pytest.Config) -> bool:
    return _workerinput(config) is not None


def worker_count(config: pytest.Config) -> int:
    workerinput = _workerinput(config)
    return int(workerinput.get("workercount", 1)) if workerinput else 1


def run_id(config: pytest.Config) -> str:
    """One id per pytest run, shared by all its xdist workers (so they build each kernel once between them)."""
    workerinput = _workerinput(config)
    if workerinput and workerinput.get("testrunuid"):
        return str(workerinput["testrunuid"])
    return uuid.uuid4().hex


def worker_durations(config: pytest.Config) -> Durations | None:
    """The stored suite durations the controller planned with, on a worker; None elsewhere."""
    workerinput = _workerinput(config)
    if workerinput is None or DURATIONS_KEY not in workerinput:
        return None
    durations: Durations = workerinput[DURATIONS_KEY]
    return durations
