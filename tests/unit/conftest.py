"""Configuration for the pure unit tests: no kernel builds, no QEMU."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import configuration

# Hypothesis keeps caches (unicode tables, constants) even with no example database: keep them out of the checkout.
configuration.set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "pytest-kunit-hypothesis")


def pytest_configure(config: pytest.Config) -> None:
    # `pytest_plugins` is refused in a non-top-level conftest when pytest starts at the repository root, so register
    # pytester here instead: this works whether the run starts at tests/unit, tests/ or the root.
    if not config.pluginmanager.hasplugin("pytester"):
        config.pluginmanager.import_plugin("pytester")
