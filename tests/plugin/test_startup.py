"""What pytest-kunit costs a pytest run that does not use it: installed, it is loaded into every run of every project
in the environment, so without --kunit it registers its options and hooks and imports nothing more."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Its options need options.py, what a declaration is made of (optiontypes.py) and the defaults it names from
# versions.py (the packaged tarball, the kernel's timeout range; the standard library alone, its patterns compiled on
# first use), the --kunit switch face/switch.py (the settings themselves are not read), its hook specifications
# newhooks.py.
INERT = [
    "pytest_kunit",
    "pytest_kunit.face",
    "pytest_kunit.face.switch",
    "pytest_kunit.newhooks",
    "pytest_kunit.options",
    "pytest_kunit.optiontypes",
    "pytest_kunit.plugin",
    "pytest_kunit.versions",
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
    assert {"pytest_kunit.face.hooks", "pytest_kunit.fragments.pipeline", "pytest_kunit.face.nodes"} <= set(modules)


# Every setting at a value --kunit refuses, in the ini file and on the command line.
BROKEN_INI = """[pytest]
kunit_kernel_src = /nonexistent
kunit_patches = /nonexistent-series
kunit_jobs = many
kunit_timeout = 0
kunit_boot_timeout = -1
kunit_accel = warp
kunit_raw = maybe
kunit_isolate = module
kunit_reboot_after_crash = maybe
kunit_wrapper = magic
kunit_arch = riscv
kunit_coverage = test_a.py
kunit_sanitize = valgrind
kunit_share_kernels = maybe
kunit_kcidb_origin = Not An Origin
"""
BROKEN_FLAGS = ["--kunit-arch=riscv", "--kunit-jobs=0", "--kunit-timeout=never", "--kunit-isolate=x"]
# A project's hook the plugin must not call either.
BROKEN_HOOK = "def pytest_kunit_add_arches(config, arches):\n    raise RuntimeError('called without --kunit')\n"


@pytest.mark.parametrize("flags", [[], BROKEN_FLAGS], ids=["ini", "ini-and-flags"])
def test_an_ordinary_run_ignores_every_setting_of_the_plugin(pytester: pytest.Pytester, flags: list[str]) -> None:
    pytester.makeini(BROKEN_INI)
    pytester.makeconftest(BROKEN_HOOK)
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *flags, "test_a.py")
    result.assert_outcomes(passed=1)
    # pytest's own header names the installed plugin; nothing else may mention it.
    said = [line for line in result.outlines + result.errlines if not line.startswith("plugins: ")]
    assert not [line for line in said if "kunit" in line]


def test_with_kunit_the_same_settings_are_usage_errors_naming_their_source(pytester: pytest.Pytester) -> None:
    ini = pytester.makeini(BROKEN_INI.replace("kunit_arch = riscv\n", ""))  # the hook would be called first
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--kunit", "test_a.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    refused = f"ERROR: ini key 'kunit_kernel_src' in {ini}: '/nonexistent' is not an existing kernel"
    assert refused in result.stderr.str()
    flagged = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--kunit", *BROKEN_FLAGS, "test_a.py")
    assert flagged.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: --kunit-arch: 'riscv' is not one of: " in flagged.stderr.str()
