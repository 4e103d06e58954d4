"""Arm: arm64 and 32-bit arm, both on QEMU's virt machine with the PL011 console."""

from __future__ import annotations

from .shape import ICOUNT, SERIAL, Arch, MakeSettings, QemuSettings

ARM64 = Arch(
    name="arm64",
    # The uncompressed Image: QEMU boots it directly (as the boot protocol's firmware), with no decompression.
    make=MakeSettings(
        arch="arm64",
        source_arch="arm64",
        target="Image",
        image="arch/arm64/boot/Image",
        cross_compile="aarch64-linux-gnu-",
        compiler_package="gcc-aarch64-linux-gnu",
        elf_machine=183,
    ),
    kconfig=(
        "CONFIG_SERIAL_AMBA_PL011=y",
        "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y",
        # A fixed kernel base: crash report addresses then match the vmlinux they are decoded against (QEMU's device
        # tree hands the guest a KASLR seed).
        "# CONFIG_RANDOMIZE_BASE is not set",
    ),
    qemu=QemuSettings(
        binary="qemu-system-aarch64",
        package="qemu-system-arm",
        # kunit.py's CPU, so both see the same features. `max` emulates pointer authentication's QARMA cipher on every
        # call and return: a 3.5x slower boot under TCG (docs/performance.md, "arm64 guests").
        args=("-machine", "virt", "-cpu", "cortex-a57", "-m", "1024", *SERIAL),
        kernel_args=("console=ttyAMA0",),
        tcg_args=ICOUNT,
    ),
)

# ARMv7 (Debian's armhf compiler), kunit.py's arm target: the self-decompressing zImage on the virt machine.
ARM = Arch(
    name="arm",
    make=MakeSettings(
        arch="arm",
        source_arch="arm",
        target="zImage",
        image="arch/arm/boot/zImage",
        cross_compile="arm-linux-gnueabihf-",
        compiler_package="gcc-arm-linux-gnueabihf",
        elf_machine=40,
    ),
    kconfig=("CONFIG_ARCH_VIRT=y", "CONFIG_SERIAL_AMBA_PL011=y", "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y"),
    qemu=QemuSettings(
        binary="qemu-system-arm",
        package="qemu-system-arm",
        args=("-machine", "virt", "-m", "1024", *SERIAL),
        kernel_args=("console=ttyAMA0",),
        tcg_args=ICOUNT,
    ),
)

RECORDS = (ARM64, ARM)
