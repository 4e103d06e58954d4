"""x86: x86_64 and i386 under QEMU's PC machine, and User Mode Linux on an x86_64 host."""

from __future__ import annotations

from .shape import ICOUNT, SERIAL, Arch, MakeSettings, QemuSettings, UmlSettings

# The PVH entry point lets QEMU boot the ELF vmlinux straight through its note: no bzImage, so no real-mode setup
# code, no compressed copy and no decompression at boot (about 5% of a cold build).
_PVH = ("CONFIG_SERIAL_8250=y", "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_HYPERVISOR_GUEST=y", "CONFIG_PVH=y")
# Should a fragment enable the input layer: probing the PS/2 controller's mouse port costs ~0.8 s of a ~1.4 s boot
# under TCG, and no test needs it. The TSC is never marked unstable: under TCG it follows the host's TSC, or with
# -icount the guest's one clock, so the clocksource watchdog's verdict could only reflect host preemption between its
# reads (docs/performance.md, "Guest time under host load"). No local APIC timer: calibrating it spins for a tenth of
# a second of guest time against the PIT, 0.6-0.8 s of every boot under TCG with -icount; the HPET (or the PIT) gives
# the clock events instead, which no KUnit test tells apart (docs/performance.md, "Warm runs").
_PC_KERNEL_ARGS = ("console=ttyS0", "i8042.noaux", "i8042.nokbd", "tsc=reliable", "noapictimer")

X86_64 = Arch(
    name="x86_64",
    make=MakeSettings(
        arch="x86_64", source_arch="x86", target="vmlinux", image="vmlinux", elf=True, link_only=True, elf_machine=62
    ),
    kconfig=("CONFIG_64BIT=y", *_PVH),
    qemu=QemuSettings(
        binary="qemu-system-x86_64",
        package="qemu-system-x86",
        args=("-m", "1024", *SERIAL),
        kernel_args=_PC_KERNEL_ARGS,
        tcg_args=ICOUNT,
    ),
)

# The host's gcc builds it (Kbuild passes -m32): no cross compiler, as kunit.py's i386 target.
I386 = Arch(
    name="i386",
    make=MakeSettings(arch="i386", source_arch="x86", target="vmlinux", image="vmlinux", elf=True, elf_machine=3),
    kconfig=("# CONFIG_64BIT is not set", *_PVH),
    qemu=QemuSettings(
        binary="qemu-system-i386",
        package="qemu-system-x86",
        args=("-m", "1024", *SERIAL),
        kernel_args=_PC_KERNEL_ARGS,
        tcg_args=ICOUNT,
    ),
)

# User Mode Linux, kunit.py's default: the kernel is built as an ordinary x86_64 host program (SUBARCH is the host's)
# and run natively, with no emulator. kunit.py's UML configuration and arguments, so both run the same.
UM = Arch(
    name="um",
    # `linux` is a hard link to vmlinux (with the symbols crash reports are decoded against); an ELF file, checked
    # whole as any image that starts like one. Its /init is a host program.
    make=MakeSettings(arch="um", source_arch="um", target="linux", image="linux", elf_machine=62),
    # kunit.py's arch_uml.config: virtio and PCI over virtio, which many suites need on UML.
    kconfig=("CONFIG_VIRTIO_UML=y", "CONFIG_UML_PCI_OVER_VIRTIO=y"),
    # 1 GiB of guest memory (a sparse file in $TMPDIR) and the console on the first terminal channel, which defaults
    # to stdin and stdout (CON_ZERO_CHAN "fd:0,fd:1").
    uml=UmlSettings(kernel_args=("mem=1G", "console=tty")),
)

RECORDS = (X86_64, I386, UM)
