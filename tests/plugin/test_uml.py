"""--kunit-arch um: the built `linux` binary is the guest, run directly as a host program (the fake tree's `linux`
runs tests/fake/qemu --uml, which ends as a UML kernel does: a panic aborts it, SIGTERM makes it exit 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES
from pytest_kunit.guest import boot as guest

from .conftest import FakeKernel

# A UML kernel as far as its initramfs goes (arch/um/kernel/initrd.c, um_arch.c): its own `initrd=` takes the rest of
# that argument as the file's name, quotes and all; then the arguments, joined by spaces, are the command line that
# the kernel's parser splits at whitespace, handing init each word without an `=`.
_FAKE_UML = """#!{python}
import sys
name = next(arg for arg in sys.argv[1:] if arg.startswith("initrd="))[len("initrd="):]
try:
    with open(name) as stream:
        print("initrd holds:", stream.read())
except OSError as error:
    print("initrd not read:", error)
print("init's arguments:", [word for word in " ".join(sys.argv[1:]).split() if "=" not in word])
"""


def test_the_linux_binary_runs_directly_with_umls_arguments(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.uml_options("-k", "other"))
    # No warning either: pexpect's pipe reader (UML's console) is made with the deprecated Thread.setDaemon().
    result.assert_outcomes(passed=2, warnings=0)
    boots = fake_kernel.boots()
    assert [boot["params"].get("kunit.action") for boot in boots] == ["list", None]
    for boot in boots:
        assert boot["argv"][0] == "--uml"
        binary = Path(boot["argv"][1])
        assert binary.name == "linux" and binary.parent.parent.name == "build"
        words = boot["argv"][2:]
        # kunit.py's UML arguments; a reboot would execute the binary again, so KUnit halts it, as /init would.
        assert words[:4] == ["mem=1G", "console=tty", "kunit_shutdown=halt", "pytest_kunit.halt"]
        assert not any(word.startswith(("console=ttyS", "panic=", "-")) for word in words)
        assert boot["accel"] is None
    assert "arch um" in result.stdout.str()


def test_qemu_options_are_said_not_to_apply(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_qemu = qemu-system-x86_64\n")
    result = project.runpytest(*fake_kernel.uml_options("-k", "other", "--kunit-accel=kvm"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*pytest-kunit: --kunit-accel does not apply to arch um, and is ignored: a UML kernel is a host program, "
            "run natively: there is no QEMU, and no accelerator (KVM, TCG)*",
            "*pytest-kunit: ini key 'kunit_qemu' in *tox.ini does not apply to arch um*",
        ]
    )
    assert all(boot["accel"] is None for boot in fake_kernel.boots())


def test_a_panic_that_aborts_uml_crashes_only_the_case_in_flight(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    fake_kernel.set_case("other", "first", outcome="panic")
    result = project.runpytest(*fake_kernel.uml_options("-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.first CRASHED*", "*Kernel panic - not syncing: fake panic in test case*"])
    # SIGABRT is how UML's own panic ends it: a dead guest, not a signal from outside, and no fresh guest for it.
    assert "from outside" not in result.stdout.str() and "fresh guest" not in result.stdout.str()
    assert fake_kernel.filters() == ["other", "other.second"]


def test_an_oops_that_kills_uml_is_a_crash_with_its_report(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="crash", kills_guest=True)
    result = project.runpytest(*fake_kernel.uml_options("-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.first CRASHED*", "*BUG: kernel NULL pointer dereference*"])


def test_sigkill_from_outside_is_rerun_and_named(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="signal", signal="SIGKILL", times=1)
    result = project.runpytest(*fake_kernel.uml_options("-k", "other", "-rA"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*guest 1: UML was killed by signal 9 (SIGKILL) from outside (pytest-kunit did not send it)*"]
    )


def test_a_silent_uml_kernel_is_killed_by_the_watchdog(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="hang")
    result = project.runpytest(*fake_kernel.uml_options("-k", "other", "--kunit-timeout=1"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.first TIMED OUT*", "*printed nothing for 1.25 s and was killed*"])


def test_selection_and_xdist_run_several_uml_kernels(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.uml_options("-n", "2", "-k", "simple or other or skip", "-p", "xdist"))
    result.assert_outcomes(passed=3, skipped=1)
    workers = {boot["worker"] for boot in fake_kernel.test_boots()}
    assert workers == {"gw0", "gw1"}
    assert all(Path(boot["argv"][1]).name == "linux" for boot in fake_kernel.boots())


def test_a_burst_that_uml_drops_on_a_full_terminal_loses_no_result(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """UML's console writes never block and drop what the terminal will not take (its channels are non-blocking):
    half a megabyte printed at boot (a sanitizer report, say) before KTAP lost the KTAP lines behind it from a pty
    read line by line. The console is a pipe drained by a thread into a 1 MiB buffer: every result arrives."""
    spec = fake_kernel.spec()
    spec["uml_console_drops"] = True
    spec["printk_boot"] = [f"boot noise {number:05d} " + "x" * 100 for number in range(5000)]
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.uml_options("-k", "other"))
    result.assert_outcomes(passed=2)


def test_an_initramfs_whose_path_holds_a_space_is_read_whole(tmp_path: Path) -> None:
    uml = tmp_path / "linux"
    uml.write_text(_FAKE_UML.format(python=sys.executable))
    uml.chmod(0o755)
    initrd = tmp_path / "Jane Doe" / "cache" / "init.cpio"
    initrd.parent.mkdir(parents=True)
    initrd.write_text("the /init")
    record, _ = guest.boot(guest.BootRequest(uml, ARCHES["um"], ("kunit.timeout=10",), "none", 30.0, initrd=initrd))
    # Before, UML read the whole name but init was handed `Doe/cache/init.cpio`; a quoted name, UML could not open.
    assert record.console == ["initrd holds: the /init", "init's arguments: []"]
