"""Real-tier tests written in a session whose machine had no build time left to run them even once.

They stay out of command two and CI until they have passed on a real kernel here: a test never seen to pass would
decide CI on its first try. Run them with PYTEST_KUNIT_REAL_PENDING=1 (each module says what it costs in builds).
"""

from __future__ import annotations

import os

import pytest

PENDING = os.environ.get("PYTEST_KUNIT_REAL_PENDING") != "1"

never_run_yet = pytest.mark.skipif(
    PENDING, reason="never run on a real kernel yet (no build time): set PYTEST_KUNIT_REAL_PENDING=1"
)
