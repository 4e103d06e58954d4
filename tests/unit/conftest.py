"""Configuration for the unit tests: no kernel built, no guest booted (some run make, gcc, git or tar on small
trees)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import configuration

# Hypothesis keeps caches (unicode tables, constants) even with no example database: keep them out of the checkout.
configuration.set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "pytest-kunit-hypothesis")
