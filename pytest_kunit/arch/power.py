"""POWER: 64-bit little-endian on QEMU's pseries machine (kunit.py's powerpc target), and 32-bit big-endian on the
PowerMac G3 (g3beige) machine (upstream kunit.py's later powerpc32 target)."""

from __future__ import annotations

from .shape import ICOUNT, SERIAL, Arch, MakeSettings, QemuSettings

# QEMU's pseries machine loads the ELF vmlinux through its SLOF firmware; the console is the hypervisor's virtual
# terminal (spapr-vty, hvc0), which -serial gives the guest.
POWERPC64LE = Arch(
    name="powerpc64le",
    make=MakeSettings(
        arch="powerpc",
        source_arch="powerpc",
        target="vmlinux",
        image="vmlinux",
        cross_compile="powerpc64le-linux-gnu-",
        compiler_package="gcc-powerpc64le-linux-gnu",
        elf=True,
        elf_machine=21,
    ),
    kconfig=(
        "CONFIG_PPC64=y",
        "CONFIG_CPU_LITTLE_ENDIAN=y",
        "CONFIG_PPC_PSERIES=y",
        "CONFIG_HVC_CONSOLE=y",
        "CONFIG_SERIAL_8250=y",
        "CONFIG_SERIAL_8250_CONSOLE=y",
    ),
    qemu=QemuSettings(
        binary="qemu-system-ppc64",
        package="qemu-system-ppc",
        args=("-machine", "pseries", "-cpu", "power8", "-m", "1024", *SERIAL),
        kernel_args=("console=hvc0",),
        tcg_args=ICOUNT,
    ),
)

# An old-world PowerMac G3, as upstream kunit.py's powerpc32: OpenBIOS loads the ELF vmlinux; the console is the ESCC
# serial port (pmac_zilog, named ttyS0). The kernel restarts a PowerMac through its Cuda: without ADB_CUDA the
# restart KUnit asks for at the end spins for ever, and QEMU never exits.
POWERPC = Arch(
    name="powerpc",
    make=MakeSettings(
        arch="powerpc",
        source_arch="powerpc",
        target="vmlinux",
        image="vmlinux",
        cross_compile="powerpc-linux-gnu-",
        compiler_package="gcc-powerpc-linux-gnu",
        elf=True,
        elf_machine=20,
    ),
    kconfig=(
        "# CONFIG_PPC64 is not set",
        "CONFIG_PPC_PMAC=y",
        "CONFIG_ADB_CUDA=y",
        "CONFIG_SERIAL_PMACZILOG=y",
        "CONFIG_SERIAL_PMACZILOG_TTYS=y",
        "CONFIG_SERIAL_PMACZILOG_CONSOLE=y",
    ),
    qemu=QemuSettings(
        binary="qemu-system-ppc",
        package="qemu-system-ppc",
        args=("-machine", "g3beige", "-cpu", "max", "-m", "1024", *SERIAL),
        kernel_args=("console=ttyS0",),
        tcg_args=ICOUNT,
    ),
)

RECORDS = (POWERPC64LE, POWERPC)
