"""pytest-kunit's extension hooks, each used from a conftest.py as a user would: kernel arguments, the QEMU command,
Kconfig for every fragment, and architectures."""

from __future__ import annotations

import pytest

from .conftest import FakeKernel, no_traceback

KERNEL_ARGS = """
def pytest_kunit_kernel_args(config, kernel, args):
    args.remove("i8042.noaux")
    args.append(f"fragment={kernel.key}")
    args.append(f"cases={len(kernel.cases)}")
"""


def test_kernel_args_hook_edits_every_boots_command_line(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeconftest(KERNEL_ARGS)
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    listing, run = fake_kernel.boots()
    for boot in (listing, run):
        assert "i8042.noaux" not in boot["params"]
        assert boot["params"]["fragment"] == "kunit.kunitconfig"
    # The listing boot's kernel has no cases yet; the test boot's has them all, and runs only the chosen ones.
    assert (listing["params"]["cases"], run["params"]["cases"]) == ("0", "6")
    assert listing["params"]["kunit.action"] == "list"
    assert run["params"]["kunit.filter_glob"] == "other"


def test_qemu_command_hook_adds_arguments(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeconftest(
        """
def pytest_kunit_qemu_command(config, kernel, command):
    assert command[command.index("-kernel") + 1] == str(kernel.build.image)
    command.extend(["-smp", "2"])
"""
    )
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    boots = fake_kernel.boots()
    assert len(boots) == 2
    assert all(boot["argv"][-2:] == ["-smp", "2"] for boot in boots)
    # The command as run heads its console file.
    (console,) = fake_kernel.cache.glob("consoles/*/*.log")
    assert console.read_text().splitlines()[0].endswith(" -smp 2")


def built_configs(fake_kernel: FakeKernel) -> dict[str, str]:
    return {path.parent.name: path.read_text() for path in fake_kernel.cache.glob("build/*/.config")}


def test_kconfig_hook_adds_to_every_fragment_and_keys_the_build(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    (before,) = built_configs(fake_kernel).values()
    assert "CONFIG_FAKE_SYSFS=y" in before
    project.makefile(".kunitconfig", second="CONFIG_KUNIT=y\n")
    project.makeconftest(
        """
def pytest_kunit_kconfig(config, fragment, arch):
    assert arch.name == "x86_64"
    return "# CONFIG_FAKE_SYSFS is not set" if fragment.name == "kunit.kunitconfig" else ["CONFIG_KUNIT_EXAMPLE_TEST=y"]
"""
    )
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=4)
    # Two more kernels: kunit.kunitconfig without FAKE_SYSFS (another build than before, though the file is the
    # same), and second.kunitconfig with the example suite its own lines leave out.
    configs = list(built_configs(fake_kernel).values())
    assert len(configs) == 3
    assert [("CONFIG_FAKE_SYSFS=y" in text, "CONFIG_KUNIT_TEST=y" in text) for text in configs].count(
        (False, True)
    ) == 1
    assert [("CONFIG_KUNIT_EXAMPLE_TEST=y" in text, "CONFIG_KUNIT_TEST=y" in text) for text in configs].count(
        (True, False)
    ) == 1


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ('"CONFIG_NO_SUCH_SYMBOL=y"', "*CONFIG_NO_SUCH_SYMBOL=y (pytest_kunit_kconfig hook:1): no such symbol*"),
        ('"CONFIG_KUNIT_TEST=maybe"', "*pytest_kunit_kconfig hook:1: 'CONFIG_KUNIT_TEST=maybe' is not CONFIG_NAME=*"),
        ("42", "*A pytest_kunit_kconfig hook returned 42 for *kunit.kunitconfig.*"),
    ],
)
def test_kconfig_hook_mistakes_are_named(
    project: pytest.Pytester, fake_kernel: FakeKernel, returned: str, message: str
) -> None:
    project.makeconftest(f"def pytest_kunit_kconfig(config, fragment, arch):\n    return {returned}\n")
    result = project.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines([message])
    no_traceback(result)


ARCHES = """
import dataclasses

def pytest_kunit_add_arches(arches):
    x86 = arches["x86_64"]
    qemu = dataclasses.replace(x86.qemu, args=(*x86.qemu.args, "-smp", "2"), kernel_args=("console=ttyS0", "quiet"))
    arches["x86_64-smp"] = dataclasses.replace(x86, name="x86_64-smp", qemu=qemu)
"""


def test_add_arches_hook_adds_an_architecture(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeconftest(ARCHES)
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-arch=x86_64-smp"))
    result.assert_outcomes(passed=2)
    assert all(boot["argv"][boot["argv"].index("-smp") + 1] == "2" for boot in fake_kernel.boots())
    assert all("quiet" in boot["params"] and "i8042.noaux" not in boot["params"] for boot in fake_kernel.boots())
    refused = project.runpytest(*fake_kernel.options("--kunit-arch=vax"))
    refused.stderr.fnmatch_lines(["*--kunit-arch: 'vax' is not one of: alpha, arm, arm64, *, um, x86_64, x86_64-smp*"])


def test_add_arches_hook_must_add_arch_records(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeconftest("def pytest_kunit_add_arches(arches):\n    arches['riscv'] = 'qemu-system-riscv64'\n")
    result = project.runpytest(*fake_kernel.options())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest_kunit_add_arches hook added 'riscv'*pytest_kunit.arch.Arch*"])
