"""The initramfs whose /init runs after KUnit: the cpio archive the kernel unpacks, the script busybox runs, the boot
arguments that tell it what to do, and which kernels get kmemleak's final scan."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_kunit import initramfs
from pytest_kunit.errors import KunitWarning
from pytest_kunit.initramfs import AfterKunit

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


@needs_busybox
def test_the_init_script_parses() -> None:
    subprocess.run([str(initramfs.BUSYBOX), "sh", "-n", "-c", initramfs.INIT], check=True)


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
