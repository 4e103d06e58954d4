"""What pytest-kunit costs a pytest run that does not use it: installed, it is loaded into every run of every project
in the environment, so without --kunit it registers its options and hooks and imports nothing more."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Its options need options.py and settings.py (they are resolved, so a bad value fails every run), its --kunit-arch
# check arch.py, its hook specifications newhooks.py.
INERT = [
    "pytest_kunit",
    "pytest_kunit.arch",
    "pytest_kunit.newhooks",
    "pytest_kunit.options",
    "pytest_kunit.plugin",
    "pytest_kunit.settings",
]


def imported_by_a_run(pytester: pytest.Pytester, *args: str) -> list[str]:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    script = (
        "import json, sys, pytest\n"
        f"code = pytest.main(['-q', '-p', 'no:cacheprovider', *{list(args)!r}])\n"
        "print(json.dumps(sorted(name for name in sys.modules if name.startswith('pytest_kunit'))))\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=pytester.path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    modules: list[str] = json.loads(result.stdout.splitlines()[-1])
    return modules


def test_a_run_without_kunit_imports_only_the_entry_point(pytester: pytest.Pytester) -> None:
    assert imported_by_a_run(pytester) == INERT


def test_a_run_with_kunit_imports_the_rest(pytester: pytest.Pytester) -> None:
    modules = imported_by_a_run(pytester, "--kunit", "--kunit-patches=none")
    assert {"pytest_kunit.enabled", "pytest_kunit.session", "pytest_kunit.items"} <= set(modules)
