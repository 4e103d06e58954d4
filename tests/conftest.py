"""For every tier: each module of the package loaded before any test runs, as a long-lived process has them.

pytester's in-process runs (runpytest, parseconfigure) drop every module first imported inside them once they end;
the package that held one keeps it as an attribute, which the next run's `from .face import hooks` would find: that
run would mix its modules with the last one's, each with stash keys of its own. Loaded here, every module is in the
modules pytester keeps, so none is ever dropped (a run in a subprocess imports afresh, as a user's does)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest_kunit

for module in pkgutil.walk_packages(pytest_kunit.__path__, f"{pytest_kunit.__name__}."):
    importlib.import_module(module.name)
