"""The initramfs whose /init runs after KUnit: the cpio archive the kernel unpacks, the script busybox runs, the boot
arguments that tell it what to do, and which kernels get kmemleak's final scan."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_kunit.errors import KunitWarning
from pytest_kunit.findings import initramfs
from pytest_kunit.findings.initramfs import AfterKunit

needs_busybox = pytest.mark.skipif(not initramfs.BUSYBOX.is_file(), reason="busybox-static is not installed")
NEEDS = "CONFIG_DEBUG_FS=y\nCONFIG_BLK_DEV_INITRD=y\nCONFIG_BINFMT_ELF=y\nCONFIG_BINFMT_SCRIPT=y\n"


@needs_busybox
def test_the_initramfs_holds_init_busybox_and_a_console(tmp_path: Path) -> None:
    path = initramfs.initramfs(tmp_path, "--kunit-coverage")
    assert initramfs.initramfs(tmp_path, "--kunit-coverage") == path  # built once
    listing = subprocess.run(
        [str(initramfs.BUSYBOX), "cpio", "-tv"], input=path.read_bytes(), capture_output=True, check=True
    ).stdout.decode()
    assert "init" in listing and "bin/busybox" in listing
    assert any(line.startswith("crw") and "dev/console" in line for line in listing.splitlines())
    assert any(line.startswith("crw") and "dev/null" in line for line in listing.splitlines())  # for the heartbeat


@needs_busybox
def test_the_init_script_parses() -> None:
    subprocess.run([str(initramfs.BUSYBOX), "sh", "-n", "-c", initramfs.INIT], check=True)


@needs_busybox
@pytest.mark.parametrize(
    ("dirs", "copied"),
    [
        ("lib/kunit,drivers/of", {"lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda", "drivers/of/base.gcda"}),
        ("lib/kunit", {"lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda"}),
        (initramfs.ALL, {"lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda", "drivers/of/base.gcda", "fs/inode.gcda"}),
    ],
)
def test_init_copies_the_counters_of_the_tested_directories_alone(tmp_path: Path, dirs: str, copied: set[str]) -> None:
    # debugfs names each counter file by the build directory's absolute path.
    build = tmp_path / "gcov" / "root" / "build"
    for name in ("lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda", "drivers/of/base.gcda", "fs/inode.gcda"):
        (build / name).parent.mkdir(parents=True, exist_ok=True)
        (build / name).write_bytes(name.encode())
    (build / "lib/kunit/notes.txt").write_text("")
    script = (
        f"B={initramfs.BUSYBOX}\n{initramfs.COPY_COUNTERS}\ncopy_counters {tmp_path / 'gcov'} {tmp_path / 'out'} {dirs}"
    )
    subprocess.run([str(initramfs.BUSYBOX), "sh", "-c", script], check=True)
    out = tmp_path / "out" / "root" / "build"
    found = {str(path.relative_to(out)) for path in out.rglob("*") if path.is_file()}
    assert found == copied
    assert all((out / name).read_bytes() == name.encode() for name in found)


def test_what_init_is_told_on_the_command_line() -> None:
    assert AfterKunit().kernel_args() == ()
    assert not AfterKunit().wanted
    assert AfterKunit(kmemleak=True).kernel_args() == ("kunit_shutdown=none", "pytest_kunit.kmemleak=scan")
    both = AfterKunit(kmemleak=True, gcov=()).kernel_args()
    assert both == ("kunit_shutdown=none", "pytest_kunit.kmemleak=scan", "pytest_kunit.gcov=all")
    narrowed = initramfs.with_gcov_dirs(("kasan_multi_shot", *both), ("lib/kunit", "pytest-kunit/sanitize"))
    assert narrowed[-1] == "pytest_kunit.gcov=lib/kunit,pytest-kunit/sanitize"
    assert narrowed[:-1] == ("kasan_multi_shot", *both[:-1])
    assert initramfs.with_gcov_dirs(("kunit_shutdown=none",), ("lib",)) == ("kunit_shutdown=none",)


def test_a_kmemleak_kernel_gets_the_final_scan(tmp_path: Path) -> None:
    dotconfig = tmp_path / ".config"
    dotconfig.write_text("CONFIG_DEBUG_KMEMLEAK=y\n" + NEEDS)
    assert initramfs.kmemleak_scan(dotconfig)
    dotconfig.write_text("# CONFIG_DEBUG_KMEMLEAK is not set\n" + NEEDS)
    assert not initramfs.kmemleak_scan(dotconfig)
    assert not initramfs.kmemleak_scan(tmp_path / "missing")


def test_a_kmemleak_kernel_without_initramfs_support_is_warned_of(tmp_path: Path) -> None:
    dotconfig = tmp_path / ".config"
    dotconfig.write_text("CONFIG_DEBUG_KMEMLEAK=y\n" + NEEDS.replace("CONFIG_BLK_DEV_INITRD=y", ""))
    with pytest.warns(KunitWarning, match=r"has kmemleak but not CONFIG_BLK_DEV_INITRD, which its final scan"):
        assert not initramfs.kmemleak_scan(dotconfig)


def test_a_boot_whose_final_scan_never_ended_is_an_error_of_the_run() -> None:
    """Every case ran but the guest was killed during the scan: green would claim no leak that nobody looked for."""
    args = ("kunit_shutdown=none", initramfs.KMEMLEAK_ARG)
    console = ["ok 1 other", initramfs.SCAN_BEGIN, initramfs.SCAN_BUSY]
    killed = "the guest printed nothing for 135 s and was killed"
    report = initramfs.unfinished_scan("k.kunitconfig", args, console, killed, Path("/c.log"))
    assert report is not None
    rendered = report.render()
    assert rendered.startswith("kmemleak's final scan did not finish: leaks found by it, if any, went unreported.")
    assert f"The boot ran every case, then {killed}." in rendered
    assert f"Its console's last line: {initramfs.SCAN_BUSY}" in rendered and rendered.endswith("console: /c.log")
    done = [*console, "unreferenced object 0xffff888003b4c400 (size 123):", initramfs.SCAN_END]
    assert initramfs.unfinished_scan("k.kunitconfig", args, done, "", Path("/c.log")) is None
    assert initramfs.unfinished_scan("k.kunitconfig", args[:1], console, "", Path("/c.log")) is None  # no scan asked
    ended = initramfs.unfinished_scan("k.kunitconfig", args, console[:2], "", Path("/c.log"))
    assert ended is not None and "then the guest's console ended there." in ended.render()


def _elf(path: Path, machine: int) -> Path:
    path.write_bytes(
        b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + (2).to_bytes(2, "little") + machine.to_bytes(2, "little")
    )
    return path


def test_init_runs_only_on_a_guest_of_the_busybox_s_own_machine(tmp_path: Path) -> None:
    from pytest_kunit.arch import ARCHES

    busybox = _elf(tmp_path / "busybox", 62)  # x86-64
    assert initramfs.unavailable(ARCHES["x86_64"], busybox) == ""
    assert initramfs.unavailable(ARCHES["um"], busybox) == ""  # a host program
    for name in ("arm64", "i386", "riscv64"):
        assert "a program of another architecture" in initramfs.unavailable(ARCHES[name], busybox)
    assert initramfs.unavailable(ARCHES["arm64"], _elf(tmp_path / "arm-busybox", 183)) == ""
