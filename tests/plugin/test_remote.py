"""Guests on hosts that share no cache with the controller (`-d --tx popen//env:XDG_CACHE_HOME=...` here, as an ssh
host would be, and one `--tx socket=` worker): the controller builds each kernel once, the image travels over xdist's
execnet gateway by its hash into the workers' own cache (once for the workers that share it), they boot it, and crash
reports are decoded where the kernel was built; workers that share the controller's cache (`-n 2`) build for
themselves and fetch nothing."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_kunit.host.cache import cache_id
from pytest_kunit.kernel.image import file_digest

from .conftest import KUNITCONFIG, FakeKernel


def remote_options(fake_kernel: FakeKernel, workers: Path, *extra: str) -> list[str]:
    """The fake kernel's options with no cache directory of their own: each process's XDG_CACHE_HOME decides."""
    options = [option for option in fake_kernel.options(*extra) if not option.startswith("--kunit-cache-dir")]
    return [*options, "-d", "--tx", f"2*popen//env:XDG_CACHE_HOME={workers}"]


def test_the_controller_builds_once_and_workers_boot_its_image(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller, workers = tmp_path / "controller", tmp_path / "workers"
    monkeypatch.setenv("XDG_CACHE_HOME", str(controller))
    result = project.runpytest_subprocess(*remote_options(fake_kernel, workers))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "kernel builds: 1 (*",
            "kernel images fetched from the controller by hosts that share no cache with it: 1 (*",
        ]
    )
    # Built in the controller's cache only: the workers never prepared a tree or ran make.
    (build,) = (controller / "pytest-kunit" / "build").iterdir()
    assert not any((workers / "pytest-kunit" / "build").iterdir())
    assert not any((workers / "pytest-kunit" / "src").iterdir())
    # The same bytes, by hash, in the workers' cache; and that copy is what every test boot booted.
    (image,) = (workers / "pytest-kunit" / "images").glob("*/vmlinux")
    assert file_digest(image) == file_digest(build / "vmlinux") == image.parent.name
    assert not image.stat().st_mode & stat.S_IXUSR  # as it was built
    boots = fake_kernel.test_boots()
    assert {boot["worker"] for boot in boots} == {"gw0", "gw1"}
    assert all(boot["argv"][boot["argv"].index("-kernel") + 1] == str(image) for boot in boots)

    # A second run fetches nothing: the image is in the workers' cache already, and checked.
    again = project.runpytest_subprocess(*remote_options(fake_kernel, workers))
    again.assert_outcomes(passed=3, failed=2, skipped=1)
    again.stdout.fnmatch_lines(["kernel builds: 0 (*"])
    assert "fetched from the controller" not in again.stdout.str()

    # Another host fetches it for itself; an executable image (UML's, which is run) stays executable.
    (build / "vmlinux").chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    project.runpytest_subprocess(*remote_options(fake_kernel, elsewhere)).assert_outcomes(passed=3, failed=2, skipped=1)
    (copy,) = (elsewhere / "pytest-kunit" / "images").glob("*/vmlinux")
    assert copy.stat().st_mode & stat.S_IXUSR


def test_a_worker_reads_the_command_line_s_size_from_the_image_it_fetched(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Twenty-four long-named suites dealt into two batches by the durations the first run measured: the larger batch
    # holds twelve or more, a list past 256 bytes and well within x86's 2048, so it is one boot a worker, the size read
    # from the image a worker fetches (it has no build directory), never a guess of the smallest size. (A suite that
    # ran slow under load can be a batch alone: only the larger list is sure to run long.) The controller ran the
    # fragment before: the workers are given its case list, and so their first boot is a test boot.
    suites = [f"a_suite_with_a_long_name_{number:02d}" for number in range(24)]
    cases = [{"name": "kept"}, {"name": "out"}]
    fake_kernel.write_spec({"suites": [{"name": suite, "cases": cases} for suite in suites]})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "controller"))
    alone = [option for option in fake_kernel.options("-k", "kept") if not option.startswith("--kunit-cache-dir")]
    project.runpytest_subprocess(*alone).assert_outcomes(passed=24)
    fake_kernel.qemu_log.unlink()
    result = project.runpytest_subprocess(*remote_options(fake_kernel, tmp_path / "workers", "-k", "kept"))
    result.assert_outcomes(passed=24)
    assert [boot["params"].get("kunit.action") for boot in fake_kernel.boots()] == [None, None]  # one boot a worker
    assert max(len(str(glob)) for glob in fake_kernel.filters()) > 256


def test_a_host_fetches_only_the_images_it_boots(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A selection that leaves a fragment no case (-k): its kernel's image does not travel, as the controller already
    has its case list (a run before this one listed it)."""
    project.makefile(".kunitconfig", leaky=KUNITCONFIG + "CONFIG_DEBUG_KERNEL=y\nCONFIG_DEBUG_KMEMLEAK=y\n")
    controller, workers = tmp_path / "controller", tmp_path / "workers"
    monkeypatch.setenv("XDG_CACHE_HOME", str(controller))
    listed = [option for option in fake_kernel.options("--collect-only") if not option.startswith("--kunit-cache-dir")]
    project.runpytest_subprocess(*listed).assert_outcomes()
    result = project.runpytest_subprocess(*remote_options(fake_kernel, workers, "-k", "not leaky"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["kernel images fetched from the controller by hosts * no cache with it: 1 (*"])
    builds = {
        "leaky" if "KMEMLEAK=y" in (build / ".config").read_text() else "kunit": file_digest(build / "vmlinux")
        for build in (controller / "pytest-kunit" / "build").iterdir()
    }
    assert len(set(builds.values())) == 2  # two images: had they been one, one fetch would prove nothing
    (image,) = (workers / "pytest-kunit" / "images").glob("*/vmlinux")
    assert image.parent.name == builds["kunit"]


def test_with_plugin_autoloading_off(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """xdist named by its module (`-p xdist.plugin`), as the bench runs: the workers still fetch, never build."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "controller"))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    workers = tmp_path / "workers"
    plugins = ["-p", "pytest_kunit.plugin", "-p", "xdist.plugin"]
    result = project.runpytest_subprocess(*plugins, *remote_options(fake_kernel, workers))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["kernel builds: 1 (*", "kernel images fetched from the controller*: 1 (*"])
    assert not any((workers / "pytest-kunit" / "build").iterdir())


def test_crash_reports_are_decoded_where_the_kernel_was_built(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tree's decoder names the vmlinux it read: the controller's build, not the workers' copy of the image.
    script = fake_kernel.tree / "scripts" / "decode_stacktrace.sh"
    script.write_text('#!/bin/bash\nsed "s|^RIP: .*|& (decoded with $1)|"\n')
    fake_kernel.set_case("other", "second", outcome="crash")
    controller, workers = tmp_path / "controller", tmp_path / "workers"
    monkeypatch.setenv("XDG_CACHE_HOME", str(controller))
    result = project.runpytest_subprocess(*remote_options(fake_kernel, workers, "-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    (build,) = (controller / "pytest-kunit" / "build").iterdir()
    result.stdout.fnmatch_lines([f"RIP: 0010:fake_crashing_case+0x5/0x10 (decoded with {build / 'vmlinux'})"])


def test_a_build_failure_on_the_controller_reaches_every_worker_as_its_paragraph(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makefile(".kunitconfig", kunit="CONFIG_KUNIT=y\nCONFIG_NO_SUCH_OPTION=y\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "controller"))
    result = project.runpytest_subprocess(*remote_options(fake_kernel, tmp_path / "workers"))
    result.stdout.fnmatch_lines(
        ["*The kernel configuration does not hold what the kunitconfig asks for:*", "ERROR kunit.kunitconfig*"]
    )
    text = result.stdout.str()
    assert "CONFIG_NO_SUCH_OPTION" in text and "What to do:" in text
    assert "Traceback" not in text


@pytest.fixture
def socket_host(tmp_path: Path, fake_kernel: FakeKernel) -> Iterator[tuple[str, Path]]:
    """execnet's socket server on 127.0.0.1, as docs/features.md starts one on a host, with a cache of its own (and the
    fake QEMU's log, set by fake_kernel); yields its address and that cache's XDG_CACHE_HOME."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    cache, log = tmp_path / "socket-host", tmp_path / "socket-server.log"
    # Unbuffered: its "Entering Accept loop" reaches the log at once, not after the wait below has run out.
    command = [sys.executable, "-u", "-m", "execnet.script.socketserver", address]
    with log.open("w") as stream:
        server = subprocess.Popen(
            command, stdout=stream, stderr=subprocess.STDOUT, env=os.environ | {"XDG_CACHE_HOME": str(cache)}
        )
    try:
        deadline = time.monotonic() + 30
        while "Entering Accept loop" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        yield address, cache
    finally:
        server.kill()
        server.wait(timeout=10)


def test_a_socket_worker_boots_the_controllers_image(
    project: pytest.Pytester,
    fake_kernel: FakeKernel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    socket_host: tuple[str, Path],
) -> None:
    """`--tx socket=HOST:PORT//chdir=DIR` (docs/features.md, *Guests on other hosts*): a worker that is not a popen
    child, to which xdist copies pytest's own package and nothing else, gets the image over the socket."""
    address, host_cache = socket_host
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "controller"))
    options = [option for option in fake_kernel.options() if not option.startswith("--kunit-cache-dir")]
    result = project.runpytest_subprocess(*options, "-d", "--tx", f"socket={address}//chdir={project.path}")
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["kernel builds: 1 (*", "kernel images fetched from the controller by hosts * 1 (*"])
    (image,) = (host_cache / "pytest-kunit" / "images").glob("*/vmlinux")
    assert not any((host_cache / "pytest-kunit" / "build").iterdir())
    assert {boot["argv"][boot["argv"].index("-kernel") + 1] for boot in fake_kernel.test_boots()} == {str(image)}
    assert (project.path / "_pytest").is_dir()  # what xdist copied: the controller's pytest


def test_workers_sharing_the_controllers_cache_fetch_nothing(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest_subprocess(*fake_kernel.options("-n", "2"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    assert "fetched from the controller" not in result.stdout.str()
    assert not any((fake_kernel.cache / "images").iterdir())


def test_one_cache_has_one_identity(tmp_path: Path) -> None:
    first = cache_id(tmp_path / "cache")
    assert first == cache_id(tmp_path / "cache") != cache_id(tmp_path / "other")
    assert [path.name for path in (tmp_path / "cache").iterdir()] == ["cache-id"]  # no scratch file left
