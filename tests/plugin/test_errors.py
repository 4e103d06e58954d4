"""Every bad input gets one clear paragraph saying what to do, no traceback; and no QEMU is ever left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from pytest_kunit import versions

from .conftest import KUNITCONFIG, FakeKernel, no_traceback, signals_as


def test_qemu_missing(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-qemu=qemu-system-nowhere"))
    result.stdout.fnmatch_lines(
        ["*QEMU is not installed: 'qemu-system-nowhere' is not on PATH.*", "*apt-get install qemu-system-x86*"]
    )
    no_traceback(result)


def test_default_tarball_missing(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(versions, "DEFAULT_TARBALL", tmp_path / "linux-source-6.1.tar.xz")
    arguments = [arg for arg in fake_kernel.options() if not arg.startswith("--kunit-kernel-src")]
    result = project.runpytest(*arguments)
    result.stdout.fnmatch_lines(["*linux-source-6.1.tar.xz does not exist.*", "*apt-get install linux-source-6.1*"])
    no_traceback(result)


def test_kernel_source_option_missing(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-kernel-src=/no/such/linux"))
    result.stderr.fnmatch_lines(["*--kunit-kernel-src: '/no/such/linux' is not an existing kernel tarball*"])


def test_patch_that_does_not_apply(project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path) -> None:
    series = tmp_path / "series"
    series.mkdir()
    (series / "0001-bad.patch").write_text(
        "From: x\nSubject: bad\n\ndiff --git a/Kconfig b/Kconfig\n--- a/Kconfig\n+++ b/Kconfig\n"
        "@@ -1,2 +1,2 @@\n-config NOT_THERE\n+config STILL_NOT_THERE\n \tbool\n"
    )
    arguments = [arg for arg in fake_kernel.options() if arg != "--kunit-patches=none"]
    result = project.runpytest(*arguments, f"--kunit-patches={series}")
    result.stdout.fnmatch_lines(["*Patch 0001-bad.patch (from *series) does not apply*", "*Kconfig*"])
    no_traceback(result)


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ("CONFIG_KUNIT=y\nCONFIG_FOO\n", ["*Malformed kunitconfig line(s):*", "*bad.kunitconfig:2: 'CONFIG_FOO'*"]),
        ("CONFIG_KUNIT=y\nCONFIG_FOO=maybe\n", ["*bad.kunitconfig:2: 'CONFIG_FOO=maybe' is not*"]),
        (
            "CONFIG_KUNIT=y\nCONFIG_DOES_NOT_EXIST=y\n",
            ["*CONFIG_DOES_NOT_EXIST=y (*bad.kunitconfig:2): no such symbol in this kernel tree*"],
        ),
        (
            "CONFIG_KUNIT=y\nCONFIG_FAKE_NEEDS_NET=y\n",
            [
                "*CONFIG_FAKE_NEEDS_NET=y (*bad.kunitconfig:2): is not set after olddefconfig; "
                "Kconfig: depends on NET && KUNIT*"
            ],
        ),
    ],
)
def test_bad_kunitconfig(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, fragment: str, expected: list[str]
) -> None:
    pytester.makefile(".kunitconfig", bad=fragment)
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines([*expected, "*What to do:*"])
    no_traceback(result)


def test_a_configuration_refused_once_is_completed_again_next_run(
    pytester: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    pytester.makefile(".kunitconfig", net="CONFIG_KUNIT=y\nCONFIG_FAKE_NEEDS_NET=y\n")
    refused = pytester.runpytest(*fake_kernel.options())
    refused.stdout.fnmatch_lines(["*CONFIG_FAKE_NEEDS_NET=y (*net.kunitconfig:2): is not set after olddefconfig*"])
    # What completes the fragment changes where Kbuild's records cannot see it (Kconfig's mtime kept, as when a new
    # pytest-kunit completes a configuration otherwise): the build directory's refused .config is not trusted.
    kconfig = fake_kernel.tree / "Kconfig"
    before = kconfig.stat()
    kconfig.write_text(kconfig.read_text() + '\nconfig NET\n\tbool "net"\n\tdefault y\n')
    os.utime(kconfig, ns=(before.st_atime_ns, before.st_mtime_ns))
    result = pytester.runpytest(*fake_kernel.options())
    result.assert_outcomes(passed=3, failed=2, skipped=1)


def test_build_failure_shows_the_compiler_errors(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    pytester.makefile(".kunitconfig", broken="CONFIG_KUNIT=y\nCONFIG_FAKE_BUILD_ERROR=y\n")
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(
        [
            "*The kernel build failed (make exited 2).*",
            "*the whole log is */build.log*",
            "*lib/kunit/test.c:42:7: error: 'boom' undeclared*",
        ]
    )
    no_traceback(result)


def fake_qemus(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
            # The fake QEMU runs as `python3 .../fake/qemu ...`; pytest's own command line names it too
            # (--kunit-qemu=), and a SIGINT sent to pytest before Python's handler is set would kill it outright.
            if len(argv) > 1 and argv[1].endswith("fake/qemu") and marker in " ".join(argv):
                found.append(int(entry.name))
    return found


def start_hanging_run(
    project: pytest.Pytester, fake_kernel: FakeKernel, output: int, signals: signal.Handlers
) -> subprocess.Popen[bytes]:
    """A pytest run whose guest hangs, started with SIGINT and SIGHUP at `signals`; returns once that guest runs."""
    fake_kernel.set_case("other", "first", outcome="hang")
    command = [sys.executable, "-m", "pytest", *fake_kernel.options("-k", "other")]
    process = subprocess.Popen(
        command, cwd=project.path, stdout=output, stderr=subprocess.STDOUT, preexec_fn=signals_as(signals)
    )
    deadline = time.monotonic() + 30
    while not fake_qemus(str(fake_kernel.cache)) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # past the list boot: the hanging guest is the one running now
    assert fake_qemus(str(fake_kernel.cache)), "the guest never started"
    return process


def test_ctrl_c_leaves_no_qemu_behind(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    process = start_hanging_run(project, fake_kernel, subprocess.PIPE, signal.SIG_DFL)  # as a terminal's Ctrl-C
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)  # what is checked is what is left behind, not how fast
    assert b"KeyboardInterrupt" in output
    time.sleep(0.5)
    assert fake_qemus(str(fake_kernel.cache)) == []


def test_killed_pytest_leaves_no_qemu_behind(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """SIGKILL (as pytest-timeout's thread method ends a run) runs no cleanup: the guest must die on its own."""
    # Started as under nohup: the guest must not inherit an ignored SIGHUP, or it outlives the pty's hang-up.
    process = start_hanging_run(project, fake_kernel, subprocess.DEVNULL, signal.SIG_IGN)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    # The guest leads its own session on the pty: closing the pty's master hangs it up. How soon it then exits is
    # the host's business (a loaded host took over 10 s): what counts is that it does, unhelped.
    deadline = time.monotonic() + 60
    while fake_qemus(str(fake_kernel.cache)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fake_qemus(str(fake_kernel.cache)) == []


def test_two_sessions_share_one_build(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    pytester.makefile(".kunitconfig", kunit=KUNITCONFIG)
    tarball = pytester.path / "linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(fake_kernel.tree, arcname="linux-fake")
    command = [sys.executable, "-m", "pytest", *fake_kernel.options(f"--kunit-kernel-src={tarball}")]
    sessions = [subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.PIPE) for _ in range(2)]
    for session in sessions:
        output, _ = session.communicate(timeout=120)
        assert b"2 failed, 3 passed, 1 skipped" in output, output.decode()
    runs = [path.read_text() for path in fake_kernel.cache.glob("build/*/make-runs")]
    assert len(runs) == 1 and runs[0].splitlines().count("vmlinux") == 1
    assert len(list(fake_kernel.cache.glob("src/*"))) == 1


def test_a_cache_others_can_write_is_refused_before_anything_runs(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    arguments = [arg for arg in fake_kernel.options() if not arg.startswith("--kunit-cache-dir")]
    result = project.runpytest(*arguments, f"--kunit-cache-dir={shared}")
    result.stderr.fnmatch_lines([f"*The pytest-kunit cache {shared} can be written by its group or by anyone*"])
    assert not list(shared.iterdir())  # nothing built, nothing written
