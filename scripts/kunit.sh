#!/usr/bin/env bash
# Command one: set everything up (scripts/setup.sh: Debian's packages, and this package in the checkout's .venv), then
# run the main job with .venv's pytest: every default suite in testsuites/ on the packaged Debian 6.1 tree with
# kernel-patches/ applied, in one kernel: testsuites/all-tests.kunitconfig's, which holds the framework fragment's
# suites too (that fragment is manual: docs/features.md, The project's suites). Extra arguments go to pytest (e.g. -k,
# -n 2, --junitxml=out.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m pytest --kunit testsuites/ "$@"
