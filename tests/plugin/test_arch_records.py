"""Every architecture record against the fake kernel: built with its make target, ARCH and cross compiler, booted by
its own qemu-system-* with its machine, image and console; several architectures in one run (the matrix); a user's
own record from --kunit-arch-config."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from xml.etree import ElementTree

import pytest

from pytest_kunit.arch import ARCHES, Arch

from .conftest import FAKE, FakeKernel, no_traceback

QEMU_ARCHES = sorted(name for name, arch in ARCHES.items() if arch.qemu is not None)
SOUND_COMPILER = '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && printf "\\ttst\\tr1,r1\\n" > "$2"; shift; done\n'


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every record's QEMU (the fake qemu under each qemu-system-* name) and cross compiler (a stub the fake make
    never calls, but the build checks is there, and asks sh4's about a probe: it writes a sound compiler's `tst`) on
    PATH."""
    bin_dir = tmp_path / "arch-bin"
    bin_dir.mkdir()
    for arch in ARCHES.values():
        if arch.qemu is not None and not (bin_dir / arch.qemu.binary).exists():
            (bin_dir / arch.qemu.binary).symlink_to(FAKE / "qemu")
        if arch.make.cross_compile:
            compiler = bin_dir / arch.make.compiler
            compiler.write_text(SOUND_COMPILER)
            compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def own_qemu(fake_kernel: FakeKernel, *extra: str) -> list[str]:
    """The fake kernel's options with no --kunit-qemu: each architecture boots its record's own binary."""
    return [option for option in fake_kernel.options(*extra) if not option.startswith("--kunit-qemu")]


def assert_booted_as(arch: Arch, boot: dict[str, object]) -> None:
    assert arch.qemu is not None
    argv, append = boot["argv"], str(boot["append"]).split()
    assert isinstance(argv, list)
    assert boot["program"] == arch.qemu.binary
    start = argv.index(arch.qemu.args[0])
    assert tuple(argv[start : start + len(arch.qemu.args)]) == arch.qemu.args
    assert argv[argv.index("-kernel") + 1].endswith("/" + arch.make.image)
    assert tuple(append[: len(arch.qemu.kernel_args)]) == arch.qemu.kernel_args
    assert ("-icount" in argv) == ("-icount" in arch.qemu.tcg_args)  # parisc's QEMU cannot run on the count
    if "-icount" in argv:
        assert argv[argv.index("-icount") + 1] == "shift=auto,sleep=off"


@pytest.mark.parametrize("name", QEMU_ARCHES)
def test_each_record_builds_and_boots_as_its_architecture(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path, name: str
) -> None:
    arch = ARCHES[name]
    result = project.runpytest(*own_qemu(fake_kernel, f"--kunit-arch={name}"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines([f"*arch {name}*"])
    for boot in fake_kernel.boots():
        assert_booted_as(arch, boot)
    [build_dir] = (fake_kernel.cache / "build").iterdir()
    assert (build_dir / "make-runs").read_text().split() == ["olddefconfig", "syncconfig", arch.make.target]
    assert (build_dir / arch.make.image).is_file()
    config = (build_dir / ".config").read_text().splitlines()
    for line in arch.kconfig:
        assert line in config if not line.startswith("#") else line.split()[1] + "=y" not in config


def long_named_suites(fake_kernel: FakeKernel, count: int) -> list[str]:
    """`count` suites of two cases each, named long enough that their names together run past 256 bytes."""
    suites = [f"a_suite_with_a_long_name_{number:02d}" for number in range(count)]
    cases = [{"name": "kept"}, {"name": "left_out"}]
    fake_kernel.write_spec({"suites": [{"name": suite, "cases": cases} for suite in suites]})
    return suites


@pytest.mark.parametrize("name", ["m68k", "sh4"])
def test_a_filter_too_long_for_the_kernel_s_command_line_is_split_over_boots(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path, name: str
) -> None:
    # m68k keeps 256 bytes of command line (its boot_command_line), sh4's r2d passes no more (its kernel would keep
    # 512), and the rest is lost unsaid: one boot naming all twelve suites would leave the last ones without a result.
    suites = long_named_suites(fake_kernel, 12)
    result = project.runpytest(*own_qemu(fake_kernel, f"--kunit-arch={name}", "-k", "kept"))
    result.assert_outcomes(passed=12)
    boots = fake_kernel.test_boots()
    assert len(boots) == 2
    for boot in boots:
        argv = boot["argv"]
        assert len(argv[argv.index("-append") + 1]) < 256
    assert ",".join(str(glob) for glob in fake_kernel.filters()) == ",".join(suites)


def test_a_command_line_the_kernel_would_cut_is_refused(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    long_named_suites(fake_kernel, 1)
    label = "fake.label=" + "x" * 250
    result = project.runpytest(*own_qemu(fake_kernel, "--kunit-arch=m68k", f"--kunit-kernel-args={label}"))
    result.assert_outcomes(errors=1)  # the list boot's, as the fragment is collected
    result.stdout.fnmatch_lines(
        ["*command line of a boot of kunit.kunitconfig is 323 bytes, but its kernel keeps 255 *"]
    )
    no_traceback(result)
    assert fake_kernel.boots() == []


MATRIX = "--kunit-arch=x86_64,arm64"


def test_a_matrix_collects_each_case_once_per_architecture(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    result = project.runpytest(*own_qemu(fake_kernel, MATRIX, "--collect-only", "-q"))
    ids = [line for line in result.stdout.lines if line.startswith("kunit.kunitconfig::")]
    assert "kunit.kunitconfig::x86_64::example::example_simple_test" in ids
    assert "kunit.kunitconfig::arm64::example::example_simple_test" in ids
    assert len(ids) == 12
    assert len(list((fake_kernel.cache / "build").iterdir())) == 2  # each architecture's kernel, built once


def test_a_single_architecture_keeps_its_node_ids(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    result = project.runpytest(*own_qemu(fake_kernel, "--kunit-arch=arm64", "--collect-only", "-q"))
    result.stdout.fnmatch_lines(["kunit.kunitconfig::example::example_simple_test"])


def test_k_selects_one_architecture_of_a_matrix(project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path) -> None:
    result = project.runpytest(*own_qemu(fake_kernel, MATRIX, "-k", "arm64 and example_simple_test"))
    result.assert_outcomes(passed=1)
    [boot] = fake_kernel.test_boots()
    assert_booted_as(ARCHES["arm64"], boot)
    assert boot["params"]["kunit.filter_glob"] == "example.example_simple_test"


def test_a_matrix_node_id_naming_a_missing_case_is_refused_with_the_suites_cases(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    result = project.runpytest(*own_qemu(fake_kernel, MATRIX, "kunit.kunitconfig::arm64::other::frist"))
    result.stdout.fnmatch_lines(
        [
            "suite kunit.kunitconfig::arm64::other has no case 'frist' (nearest: first).",
            "What to do: name one of its 2 cases, as the kernel lists them: first, second; or select with -k.",
        ]
    )
    assert fake_kernel.test_boots() == []


# Marker expressions with keyword arguments are pytest 8.3's (the floors' pytest 7.4 refuses them as it parses -m).
@pytest.mark.skipif(
    tuple(int(part) for part in pytest.__version__.split(".")[:2]) < (8, 3), reason="-m with arguments: pytest 8.3+"
)
def test_m_selects_one_architecture_by_its_marker(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    result = project.runpytest(*own_qemu(fake_kernel, MATRIX, "-m", "kunit_arch(name='x86_64')", "-k", "other"))
    result.assert_outcomes(passed=2)
    assert {boot["program"] for boot in fake_kernel.test_boots()} == {"qemu-system-x86_64"}


def test_a_case_failing_on_one_architecture_is_called_out(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    fake_kernel.set_case("other", "second", outcome_on={"qemu-system-aarch64": "fail"})
    junit = project.path / "junit.xml"
    result = project.runpytest(*own_qemu(fake_kernel, MATRIX, "-n", "2", f"--junitxml={junit}"))
    result.assert_outcomes(passed=5, failed=5, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*kunit: cases failing on some architectures only*",
            "kunit.kunitconfig::other::second: failed on arm64; passed on x86_64",
        ]
    )
    assert "example_failing_test: failed on" not in result.stdout.str()  # it fails everywhere
    [case] = [
        case
        for case in ElementTree.parse(junit).iter("testcase")
        if case.get("name") == "second" and case.find("failure") is not None
    ]
    properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
    assert properties["kunit_arch"] == "arm64"
    assert "arm64" in str(case.get("classname"))


def test_lf_reruns_the_failure_on_its_architecture_only(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    fake_kernel.set_case("example", "example_failing_test", outcome="pass", outcome_on={"qemu-system-aarch64": "fail"})
    project.runpytest(*own_qemu(fake_kernel, MATRIX, "--lf")).assert_outcomes(passed=7, failed=3, skipped=2)
    result = project.runpytest(*own_qemu(fake_kernel, MATRIX, "--lf", "-v"))
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*kunit.kunitconfig::arm64::example::example_failing_test FAILED*"])
    assert "x86_64::example::example_failing_test" not in result.stdout.str()


def test_qemu_option_cannot_serve_two_architectures(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options(MATRIX))
    result.stderr.fnmatch_lines(["*--kunit-qemu names one QEMU binary, which cannot boot x86_64 and arm64*"])
    no_traceback(result)


RECORD = """[x86_64-big]
kconfig = ["CONFIG_SERIAL_8250=y", "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_HYPERVISOR_GUEST=y", "CONFIG_PVH=y"]
[x86_64-big.make]
arch = "x86_64"
source_arch = "x86"
target = "vmlinux"
image = "vmlinux"
elf = true
[x86_64-big.qemu]
binary = "qemu-system-x86_64"
package = "qemu-system-x86"
args = ["-m", "2048", "-serial", "stdio"]
kernel_args = ["console=ttyS0", "pytest_kunit_big=1"]
"""


def test_a_record_from_a_file_is_an_architecture(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    (project.path / "arches.toml").write_text(RECORD)
    project.makeini("[pytest]\nkunit_arch_config = arches.toml\n")
    result = project.runpytest(*own_qemu(fake_kernel, "--kunit-arch=x86_64-big"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    for boot in fake_kernel.boots():
        assert boot["program"] == "qemu-system-x86_64"
        assert boot["argv"][boot["argv"].index("-m") + 1] == "2048"
        assert str(boot["append"]).split()[:2] == ["console=ttyS0", "pytest_kunit_big=1"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (RECORD.replace('target = "vmlinux"\n', ""), "[x86_64-big].make.target: missing (required)"),
        (RECORD.replace("elf = true", 'elf = "yes"'), "[x86_64-big].make.elf: expected true or false, got 'yes'"),
        (RECORD.replace('args = ["-m"', 'args = [2048, "-m"'), "[x86_64-big].qemu.args: expected a list of strings"),
        (
            RECORD.replace("[x86_64-big.qemu]", "[x86_64-big.qemu]\nmachine = 'pc'"),
            "[x86_64-big].qemu.machine: no such",
        ),
        (RECORD + "[x86_64-big.uml]\nkernel_args = []\n", "[x86_64-big]: give exactly one of the tables qemu"),
        ("[x86_64-big\n", "not TOML"),
    ],
)
def test_a_bad_record_file_names_the_field(
    project: pytest.Pytester, fake_kernel: FakeKernel, text: str, said: str
) -> None:
    (project.path / "arches.toml").write_text(text)
    result = project.runpytest(*fake_kernel.options("--kunit-arch-config=arches.toml", "--kunit-arch=x86_64-big"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--kunit-arch-config: *arches.toml: *{said}*"])
    no_traceback(result)


def test_a_compiler_that_fails_its_records_check_builds_nothing(
    project: pytest.Pytester, fake_kernel: FakeKernel, tools: Path
) -> None:
    # Debian 12's sh4 compiler drops the test of `if (!flag)` (its kernels never print a line): refused at once,
    # before any configuration or make, with what to do.
    (tools / "sh4-linux-gnu-gcc").write_text(
        '#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\necho "probe: bt .L9" > "$2"\n'
    )
    result = project.runpytest(*own_qemu(fake_kernel, "--kunit-arch=sh4"))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*sh4-linux-gnu-gcc miscompiles sh4 kernels: it drops the test of `if (!flag)` before the branch*",
            "*What to do: build sh4 with another toolchain: name its prefix with --kunit-cross-compile*",
            "probe: bt .L9",
        ]
    )
    assert not list(fake_kernel.cache.glob("build/*/.config"))
    no_traceback(result)
