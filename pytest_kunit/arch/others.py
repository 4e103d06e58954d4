"""The other architectures Debian 12 has a cross compiler and a QEMU for: riscv64, s390 (s390x), m68k, alpha,
sparc64, sh4, 32-bit little-endian MIPS and 32-bit PA-RISC. Each as kunit.py's target where it has one
(tools/testing/kunit/qemu_configs/); every firmware named ships in qemu-system-data."""

from __future__ import annotations

from .shape import ICOUNT, SERIAL, Arch, CompilerCheck, MakeSettings, QemuSettings


def _cross(
    arch: str, source_arch: str, target: str, image: str, prefix: str, machine: int, check: CompilerCheck | None = None
) -> MakeSettings:
    """A cross build with Debian's gcc-PREFIX package (its binutils decode crash reports)."""
    return MakeSettings(
        arch=arch,
        source_arch=source_arch,
        target=target,
        image=image,
        cross_compile=f"{prefix}-",
        compiler_package=f"gcc-{prefix}",
        elf=image.endswith("vmlinux"),
        elf_machine=machine,
        compiler_check=check,
    )


_8250 = ("CONFIG_SERIAL_8250=y", "CONFIG_SERIAL_8250_CONSOLE=y")

# The virt machine's OpenSBI firmware (QEMU's default -bios) starts the uncompressed Image. The machine's 16550 is
# found through the device tree. kunit.py sets the SoC symbol instead (SOC_VIRT on 6.1, ARCH_VIRT later: no one line
# holds on both), which selects the interrupt controller named here. NONPORTABLE: otherwise PORTABLE selects EFI, and
# a fragment that leaves UEFI out (as the project's do, on every architecture) could not hold; it only allows.
RISCV64 = Arch(
    name="riscv64",
    make=_cross("riscv", "riscv", "Image", "arch/riscv/boot/Image", "riscv64-linux-gnu", 243),
    kconfig=("CONFIG_64BIT=y", *_8250, "CONFIG_SERIAL_OF_PLATFORM=y", "CONFIG_SIFIVE_PLIC=y", "CONFIG_NONPORTABLE=y"),
    qemu=QemuSettings(
        binary="qemu-system-riscv64",
        package="qemu-system-misc",
        args=("-machine", "virt", "-cpu", "rv64", "-m", "1024", *SERIAL),
        kernel_args=("console=ttyS0",),
        tcg_args=ICOUNT,
    ),
)

# kunit.py's lines: EXPERT reaches the tuning choice; its console is SCLP's line mode terminal, named ttyS0, which
# flushes in a reboot notifier: everything the kernel printed is shown but the reboot line that follows the notifiers.
S390 = Arch(
    name="s390",
    make=_cross("s390", "s390", "bzImage", "arch/s390/boot/bzImage", "s390x-linux-gnu", 22),
    kconfig=("CONFIG_EXPERT=y", "CONFIG_TUNE_ZEC12=y", "CONFIG_NUMA=y", "CONFIG_MODULES=y"),
    qemu=QemuSettings(
        binary="qemu-system-s390x",
        package="qemu-system-misc",
        args=("-machine", "s390-ccw-virtio", "-cpu", "qemu", "-m", "1024", *SERIAL),
        kernel_args=("console=ttyS0",),
        tcg_args=ICOUNT,
        shows_reboot_line=False,
    ),
)

# QEMU's virt machine (a 68040 with Goldfish devices); the console is the Goldfish TTY, which -serial gives it.
M68K = Arch(
    name="m68k",
    make=_cross("m68k", "m68k", "vmlinux", "vmlinux", "m68k-linux-gnu", 4),
    kconfig=("CONFIG_VIRT=y",),
    qemu=QemuSettings(
        binary="qemu-system-m68k",
        package="qemu-system-misc",
        args=("-machine", "virt", "-m", "1024", *SERIAL),
        kernel_args=("console=hvc0",),
        tcg_args=ICOUNT,
    ),
)

# The clipper machine's PALcode loads the stripped ELF kernel `make boot` leaves in arch/alpha/boot.
ALPHA = Arch(
    name="alpha",
    make=_cross("alpha", "alpha", "boot", "arch/alpha/boot/vmlinux", "alpha-linux-gnu", 0x9026),
    kconfig=_8250,
    qemu=QemuSettings(
        binary="qemu-system-alpha",
        package="qemu-system-misc",
        args=("-m", "1024", *SERIAL),
        kernel_args=("console=ttyS0",),
        tcg_args=ICOUNT,
    ),
)

# An UltraSPARC IIi (sun4u) under OpenBIOS; its console the 16550 on the EBus ("su"). Other CPUs hang QEMU at reboot.
SPARC64 = Arch(
    name="sparc64",
    make=_cross("sparc64", "sparc", "image", "arch/sparc/boot/image", "sparc64-linux-gnu", 43),
    kconfig=("CONFIG_64BIT=y", "CONFIG_PCI=y", "CONFIG_SERIAL_SUNSU=y", "CONFIG_SERIAL_SUNSU_CONSOLE=y"),
    qemu=QemuSettings(
        binary="qemu-system-sparc64",
        package="qemu-system-sparc",
        args=("-machine", "sun4u", "-cpu", "TI UltraSparc IIi", "-m", "512", *SERIAL),
        kernel_args=("console=ttyS0",),
        tcg_args=ICOUNT,
        # OpenBIOS cannot reboot: the kernel panics "Reboot failed!" again and again. Its power-off ends QEMU.
        shutdown="poweroff",
    ),
)

# Debian 12's sh4 compiler (gcc 12.2.0) drops the test before a conditional branch on a value just loaded: its SH pass
# sh_treg_combine declares negt_reg_operand(), which returns bool, as returning int, and reads stray upper bits as
# true. `if (!flag)` becomes a branch on whatever the T bit last held, and the kernel's decompressor takes its error
# path before it inflates a byte: the guest spins without printing a line. (The same kernel built by that compiler
# with the declaration's fault mended boots and passes every suite.)
_SH_TREG_COMBINE = CompilerCheck(
    source="extern int flag;\nvoid stop(void);\nint probe(void)\n{\n\tif (!flag)\n\t\tstop();\n\treturn 3;\n}\n",
    expect=r"\btst\b",
    fault="it drops the test of `if (!flag)` before the branch (GCC 12's sh_treg_combine pass, in Debian 12's "
    "gcc-sh4-linux-gnu 12.2.0), so the kernel it builds spins in its decompressor and never prints a line",
)

# kunit.py's board: the Renesas R2D-PLUS (SH7751R), 64 MiB of RAM (fixed: no -m), console on the second SCIF port.
SH4 = Arch(
    name="sh4",
    make=_cross("sh", "sh", "zImage", "arch/sh/boot/zImage", "sh4-linux-gnu", 42, _SH_TREG_COMBINE),
    kconfig=(
        "CONFIG_CPU_SUBTYPE_SH7751R=y",
        "CONFIG_MEMORY_START=0x0c000000",
        "CONFIG_SH_RTS7751R2D=y",
        "CONFIG_RTS7751R2D_PLUS=y",
        "CONFIG_SERIAL_SH_SCI=y",
        "CONFIG_CMDLINE_EXTEND=y",
    ),
    qemu=QemuSettings(
        binary="qemu-system-sh4",
        package="qemu-system-misc",
        args=("-machine", "r2d", "-serial", "null", *SERIAL),
        kernel_args=("console=ttySC1",),
        tcg_args=ICOUNT,
        command_line_room=256,  # r2d's boot parameters hold 256 bytes of it; the kernel would keep 512
    ),
)

# A 24Kf on the Malta board, little-endian: QEMU loads the ELF vmlinux; the console is the board's 16550. Malta
# restarts through the syscon-reboot driver its device tree names: without it "Reboot failed -- System halted" and
# QEMU never exits (upstream kunit.py's later mipsel target has the same two lines).
MIPSEL = Arch(
    name="mipsel",
    make=_cross("mips", "mips", "vmlinux", "vmlinux", "mipsel-linux-gnu", 8),
    kconfig=(
        "CONFIG_MIPS_MALTA=y",
        "CONFIG_CPU_LITTLE_ENDIAN=y",
        "CONFIG_CPU_MIPS32_R2=y",
        *_8250,
        "CONFIG_POWER_RESET=y",
        "CONFIG_POWER_RESET_SYSCON=y",
    ),
    qemu=QemuSettings(
        binary="qemu-system-mipsel",
        package="qemu-system-mips",
        args=("-machine", "malta", "-cpu", "24Kf", "-m", "256", *SERIAL),
        kernel_args=("console=ttyS0",),
        tcg_args=ICOUNT,
    ),
)

# The B160L workstation under QEMU's SeaBIOS-hppa, which loads the ELF vmlinux; console on its 16550. QEMU 7.2's hppa
# stops with "Bad icount read" under -icount, so its clock is the host's; SeaBIOS speaks after the kernel's reboot.
PARISC = Arch(
    name="parisc",
    make=_cross("parisc", "parisc", "vmlinux", "vmlinux", "hppa-linux-gnu", 15),
    kconfig=_8250,
    qemu=QemuSettings(
        binary="qemu-system-hppa",
        package="qemu-system-misc",
        args=("-m", "512", *SERIAL),
        kernel_args=("console=ttyS0",),
        after_reboot=("SeaBIOS wants SYSTEM RESET.", "*" * 27),  # the line of stars under it
    ),
)

RECORDS = (RISCV64, S390, M68K, ALPHA, SPARC64, SH4, MIPSEL, PARISC)
