"""The initramfs whose /init runs after KUnit: the cpio archive the kernel unpacks, and which kernels and guests get
kmemleak's final scan."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_kunit.errors import KunitWarning
from pytest_kunit.guest import initramfs

NEEDS = "CONFIG_DEBUG_FS=y\nCONFIG_BLK_DEV_INITRD=y\nCONFIG_BINFMT_ELF=y\nCONFIG_BINFMT_SCRIPT=y\n"


def test_the_initramfs_holds_init_busybox_and_a_console(tmp_path: Path) -> None:
    path = initramfs.initramfs(tmp_path, "--kunit-coverage")
    assert initramfs.initramfs(tmp_path, "--kunit-coverage") == path  # built once
    listing = subprocess.run(
        [str(initramfs.BUSYBOX), "cpio", "-tv"], input=path.read_bytes(), capture_output=True, check=True
    ).stdout.decode()
    assert "init" in listing and "bin/busybox" in listing
    assert any(line.startswith("crw") and "dev/console" in line for line in listing.splitlines())
    assert any(line.startswith("crw") and "dev/null" in line for line in listing.splitlines())  # for the heartbeat


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
