"""Who this process is in an xdist run, learnt from `config.workerinput` (never from environment variables, which
leak into a pytest session started inside a worker) and xdist's own keys; pytest-kunit's are protocol.py's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest


def workerinput(config: pytest.Config) -> dict[str, Any] | None:
    """What the controller handed this worker; None outside an xdist worker."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return workerinput


def is_worker(config: pytest.Config) -> bool:
    return workerinput(config) is not None


def worker_count(config: pytest.Config) -> int:
    given = workerinput(config)
    return int(given.get("workercount", 1)) if given else 1


def given_run_id(given: dict[str, Any] | None) -> str | None:
    """The run's id xdist handed a worker in its `workerinput` (seen from the worker or the controller)."""
    return str(given["testrunuid"]) if given and given.get("testrunuid") else None


def run_id(config: pytest.Config) -> str:
    """One id per pytest run, shared by all its xdist workers (so they build each kernel once between them)."""
    return given_run_id(workerinput(config)) or uuid.uuid4().hex
