#!/usr/bin/env bash
# Command two: set everything up (scripts/setup.sh --test), then run the plugin's own tests with .venv's pytest: unit,
# fake-kernel plugin tests, and the real tier that builds and boots the packaged kernel (-m "not real" leaves that
# out). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
exec .venv/bin/python -m pytest tests "$@"
