#!/usr/bin/env bash
# Command two: set everything up, then run the plugin's own tests: unit, fake-kernel plugin tests, and the real
# tier that builds and boots the packaged kernel (-m "not real" leaves that out). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
exec python3 -m pytest tests "$@"
