"""kunit.py's remaining knobs against the fake kernel: what each option gives reaches make, the configuration, the
guest's command line and QEMU's, through the hooks' own path (a hook sees and may change it), with an ini twin each,
and a bad value is a usage error naming it before anything is built."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

import pytest

from .conftest import FakeKernel, no_traceback


def built_configs(fake_kernel: FakeKernel) -> dict[str, str]:
    return {path.parent.name: path.read_text() for path in fake_kernel.cache.glob("build/*/.config")}


def make_variables(fake_kernel: FakeKernel) -> list[tuple[str, list[str]]]:
    """Each make target the builds ran, with the variables on make's command line (the fake make's record)."""
    runs = []
    for record in fake_kernel.cache.glob("build/*/make-variables"):
        for line in record.read_text().splitlines():
            target, variables = json.loads(line)
            runs.append((target, shlex.split(variables)))
    return runs


def test_kconfig_add_reaches_config_keys_the_build_and_heads_the_run(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    (before,) = built_configs(fake_kernel).values()
    assert "CONFIG_FAKE_SYSFS=y" in before
    result = project.runpytest(
        *fake_kernel.options("-k", "other", "--kunit-kconfig-add", "# CONFIG_FAKE_SYSFS is not set")
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["kunit: kernel source *; kconfig added '# CONFIG_FAKE_SYSFS is not set'"])
    configs = built_configs(fake_kernel)
    assert len(configs) == 2  # another build, though the fragment is the same
    assert sum("CONFIG_FAKE_SYSFS=y" in text for text in configs.values()) == 1


def test_kconfig_add_from_the_ini_file_and_a_hook_after_it(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    # An ini file's `#` starts a comment: there, CONFIG_X=n says "# CONFIG_X is not set".
    project.makeini("[pytest]\nkunit_kconfig_add =\n    CONFIG_FAKE_SYSFS=n\n    CONFIG_KUNIT_TEST=n\n")
    # A hook's lines come after the option's: this one turns the suite the option turned off back on.
    project.makeconftest('def pytest_kunit_kconfig(config, fragment, arch):\n    return "CONFIG_KUNIT_TEST=y"\n')
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    (config,) = built_configs(fake_kernel).values()
    assert "CONFIG_FAKE_SYSFS=y" not in config
    assert "CONFIG_KUNIT_TEST=y" in config


def test_malformed_kconfig_add_is_a_usage_error_naming_it(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    options = ("--kunit-kconfig-add", "CONFIG_KUNIT=y", "--kunit-kconfig-add", "KUNIT_TEST=y")
    result = project.runpytest(*fake_kernel.options(*options))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--kunit-kconfig-add: Malformed kunitconfig line(s):", "*--kunit-kconfig-add:2: 'KUNIT_TEST=y' is not*"]
    )
    no_traceback(result)
    assert not fake_kernel.cache.joinpath("build").exists()


def test_kconfig_add_that_does_not_hold_is_named_by_the_option(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-kconfig-add", "CONFIG_NO_SUCH_SYMBOL=y"))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CONFIG_NO_SUCH_SYMBOL=y (--kunit-kconfig-add:1): no such symbol*"])
    assert not fake_kernel.boots()


def test_make_options_reach_every_make_run_and_key_the_build(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-make-options", "W=1 KCFLAGS='-O1 -g'"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["kunit: kernel source *; make options W=1 'KCFLAGS=-O1 -g'"])
    assert len(built_configs(fake_kernel)) == 2
    with_options = [variables for _, variables in make_variables(fake_kernel) if "W=1" in variables]
    assert {target for target, variables in make_variables(fake_kernel) if "W=1" in variables} >= {
        "syncconfig",
        "vmlinux",
    }
    assert all("KCFLAGS=-O1 -g" in variables for variables in with_options)


def test_make_options_from_the_ini_file(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_make_options = LLVM=1\n")
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    assert all("LLVM=1" in variables for _, variables in make_variables(fake_kernel))


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ("ARCH=arm64", "*--kunit-make-options: pytest-kunit sets ARCH itself: use --kunit-arch"),
        ("O=/tmp/x", "*pytest-kunit sets O itself: use --kunit-cache-dir*"),
        ("CROSS_COMPILE=x-", "*pytest-kunit sets CROSS_COMPILE itself: use --kunit-cross-compile*"),
        ("W=1 'CC=clang", "*--kunit-make-options: * does not split into words: No closing quotation"),
    ],
)
def test_make_options_pytest_kunit_sets_itself_are_refused(
    project: pytest.Pytester, fake_kernel: FakeKernel, words: str, message: str
) -> None:
    result = project.runpytest(*fake_kernel.options(f"--kunit-make-options={words}"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    no_traceback(result)


KERNEL_ARGS_HOOK = """
def pytest_kunit_kernel_args(config, kernel, args):
    assert args[-2:] == ["quiet", 'fake.label="a b"'], args
    args.remove("quiet")
"""


def test_kernel_args_follow_ours_on_every_boot_and_a_hook_sees_them(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.makeconftest(KERNEL_ARGS_HOOK)
    # Split as the kernel splits its command line: a quoted value is one word, its quotes kept for the kernel.
    options = fake_kernel.options("-k", "other", "--kunit-kernel-args", 'quiet fake.label="a b"')
    project.runpytest(*options).assert_outcomes(passed=2)
    boots = fake_kernel.boots()
    assert len(boots) == 2  # the list boot and the test boot
    for boot in boots:
        assert boot["params"]["fake.label"] == "a b"
        assert "quiet" not in boot["params"]


def test_kernel_args_from_the_ini_file(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_kernel_args = fake.ini=1\n")
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    assert all(boot["params"]["fake.ini"] == "1" for boot in fake_kernel.boots())


def test_kernel_args_that_would_choose_the_cases_are_refused(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-kernel-args=kunit.filter_glob=example.*"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'kunit.filter_glob=example.*' would change which cases the kernel runs*-k*"])
    assert not fake_kernel.boots()


def test_qemu_args_end_every_qemu_command_and_a_hook_sees_them(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.makeconftest(
        """
def pytest_kunit_qemu_command(config, kernel, command):
    assert command[-2:] == ["-smp", "2"], command
    command.extend(["-name", "hooked"])
"""
    )
    project.runpytest(*fake_kernel.options("-k", "other", "--kunit-qemu-args=-smp 2")).assert_outcomes(passed=2)
    boots = fake_kernel.boots()
    assert len(boots) == 2
    assert all(boot["argv"][-4:] == ["-smp", "2", "-name", "hooked"] for boot in boots)


def test_qemu_args_from_the_ini_file(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_qemu_args = -smp 2\n")
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    assert all(boot["argv"][-2:] == ["-smp", "2"] for boot in fake_kernel.boots())


def test_qemu_args_on_uml_are_refused(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.uml_options(), "--kunit-qemu-args=-smp 2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-qemu-args: arch um boots no QEMU*--kunit-kernel-args"])
    no_traceback(result)


@pytest.fixture
def prefixed_tools(tmp_path: Path, fake_kernel: FakeKernel) -> str:
    """A compiler prefix of our own (PREFIXgcc, PREFIXnm), and a decode_stacktrace.sh in the fake tree that marks
    each frame with the CROSS_COMPILE it was decoded with."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("gcc", "nm"):
        tool = tools / f"mine-{name}"
        tool.write_text(f'#!/bin/sh\nexec {name} "$@"\n')
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    script = fake_kernel.tree / "scripts" / "decode_stacktrace.sh"
    script.write_text('while read -r line; do echo "$line [decoded with ${CROSS_COMPILE}nm]"; done\n')
    return f"{tools}{os.sep}mine-"


def test_cross_compile_reaches_make_and_crash_decoding(
    project: pytest.Pytester, fake_kernel: FakeKernel, prefixed_tools: str
) -> None:
    fake_kernel.set_case("other", "first", outcome="crash")
    result = project.runpytest(*fake_kernel.options("-k", "other", f"--kunit-cross-compile={prefixed_tools}"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*[decoded with {prefixed_tools}nm]"])
    # A prefix with a directory reaches make by its name, the directory's tools linked on make's PATH (makerun.py).
    runs = make_variables(fake_kernel)
    assert runs and all("CROSS_COMPILE=mine-" in variables for _, variables in runs)
    (linked,) = fake_kernel.cache.glob("build/*/.pytest-kunit-cross")
    assert sorted(os.readlink(link) for link in linked.iterdir()) == [f"{prefixed_tools}gcc", f"{prefixed_tools}nm"]


def test_cross_compile_from_the_ini_file_keys_the_build(
    project: pytest.Pytester, fake_kernel: FakeKernel, prefixed_tools: str
) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    project.makeini(f"[pytest]\nkunit_cross_compile = {prefixed_tools}\n")
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    assert len(built_configs(fake_kernel)) == 2


def test_a_missing_cross_compiler_is_named_by_its_prefix(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-cross-compile=pytest-kunit-absent-"))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*The x86_64 cross compiler is not installed: 'pytest-kunit-absent-gcc' is not on PATH.",
            "*What to do: install it, or name the prefix of one you have with --kunit-cross-compile.",
        ]
    )
    no_traceback(result)
