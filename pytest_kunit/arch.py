"""Per-architecture settings: one frozen record each, split by who reads it (make, Kconfig, QEMU or the host)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MakeSettings:
    """What `make` needs to build a bootable image."""

    arch: str  # ARCH=
    source_arch: str  # the directory under arch/ (SRCARCH), where the arch's tiny.config and defconfigs live
    target: str
    image: str  # relative to the build directory
    cross_compile: str = ""  # CROSS_COMPILE= prefix, also of the binutils that decode crash reports; "" if native
    compiler_package: str = ""  # the Debian package of a cross compiler, named when it is missing
    elf: bool = False  # the image is an ELF file (vmlinux), checked as one before it is booted
    # After an edit to sources of vmlinux alone, compile those and link the image again without Kbuild's tree walk
    # (linkonly.py): only where the image is vmlinux's own link (arm64's Image needs an objcopy after it, UML's
    # linux a link of its own).
    link_only: bool = False

    @property
    def compiler(self) -> str:
        """The C compiler Kbuild runs for the kernel itself: $(CROSS_COMPILE)gcc."""
        return f"{self.cross_compile}gcc"


@dataclass(frozen=True)
class QemuSettings:
    """What QEMU needs to boot that image with its console on stdio."""

    binary: str
    package: str  # the Debian package that provides `binary`
    args: tuple[str, ...]
    kernel_args: tuple[str, ...]
    tcg_args: tuple[str, ...] = ()  # only under TCG (KVM refuses them)


@dataclass(frozen=True)
class UmlSettings:
    """What running a User Mode Linux kernel needs: the built binary is run directly, as a host program, with its
    console on stdio."""

    kernel_args: tuple[str, ...]


@dataclass(frozen=True)
class Arch:
    """One architecture: its guests boot under QEMU (`qemu`) or run as host programs (`uml`), never both."""

    name: str
    make: MakeSettings
    kconfig: tuple[str, ...]  # symbols every guest of this architecture needs (serial console, boot entry)
    qemu: QemuSettings | None = None
    uml: UmlSettings | None = None

    def __post_init__(self) -> None:
        if (self.qemu is None) == (self.uml is None):
            raise TypeError(f"Arch {self.name!r}: give exactly one of qemu= (a QEMU guest) and uml= (User Mode Linux)")


ARCHES: dict[str, Arch] = {
    "x86_64": Arch(
        name="x86_64",
        # QEMU boots the ELF vmlinux straight through its PVH entry note: no bzImage, so no real-mode setup code, no
        # compressed copy and no decompression at boot (about 5% of a cold build).
        make=MakeSettings(
            arch="x86_64", source_arch="x86", target="vmlinux", image="vmlinux", elf=True, link_only=True
        ),
        kconfig=(
            "CONFIG_64BIT=y",
            "CONFIG_SERIAL_8250=y",
            "CONFIG_SERIAL_8250_CONSOLE=y",
            "CONFIG_HYPERVISOR_GUEST=y",
            "CONFIG_PVH=y",
        ),
        qemu=QemuSettings(
            binary="qemu-system-x86_64",
            package="qemu-system-x86",
            args=("-m", "1024", "-serial", "stdio"),
            # Should a fragment enable the input layer: probing the PS/2 controller's mouse port costs ~0.8 s of a
            # ~1.4 s boot under TCG, and no test needs it. The TSC is never marked unstable: under TCG it follows
            # the host's TSC, or with -icount the guest's one clock, so the clocksource watchdog's verdict could
            # only reflect host preemption between its reads (docs/performance.md, "Guest time under host load").
            kernel_args=("console=ttyS0", "i8042.noaux", "i8042.nokbd", "tsc=reliable"),
            # Every guest clock (TSC, PIT, HPET, ACPI PM timer, local APIC timer) runs on the instruction count,
            # kept near real time (shift=auto) and jumping over idle time (sleep=off): no tick is lost when the host
            # starves QEMU, so calibration and jiffies (which kunit.timeout counts) do not depend on the host's load.
            tcg_args=("-icount", "shift=auto,sleep=off"),
        ),
    ),
    # User Mode Linux, kunit.py's default: the kernel is built as an ordinary x86_64 host program (SUBARCH is the
    # host's) and run natively, with no emulator. kunit.py's UML configuration and arguments, so both run the same.
    "um": Arch(
        name="um",
        # `linux` is a hard link to vmlinux (with the symbols crash reports are decoded against); an ELF file, checked
        # whole as any image that starts like one.
        make=MakeSettings(arch="um", source_arch="um", target="linux", image="linux"),
        # kunit.py's arch_uml.config: virtio and PCI over virtio, which many suites need on UML.
        kconfig=("CONFIG_VIRTIO_UML=y", "CONFIG_UML_PCI_OVER_VIRTIO=y"),
        # 1 GiB of guest memory (a sparse file in $TMPDIR) and the console on the first terminal channel, which
        # defaults to stdin and stdout (CON_ZERO_CHAN "fd:0,fd:1").
        uml=UmlSettings(kernel_args=("mem=1G", "console=tty")),
    ),
    "arm64": Arch(
        name="arm64",
        # The uncompressed Image: QEMU boots it directly (as the boot protocol's firmware), with no decompression.
        make=MakeSettings(
            arch="arm64",
            source_arch="arm64",
            target="Image",
            image="arch/arm64/boot/Image",
            cross_compile="aarch64-linux-gnu-",
            compiler_package="gcc-aarch64-linux-gnu",
        ),
        kconfig=(
            "CONFIG_SERIAL_AMBA_PL011=y",
            "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y",
            # A fixed kernel base: crash report addresses then match the vmlinux they are decoded against (QEMU's
            # device tree hands the guest a KASLR seed).
            "# CONFIG_RANDOMIZE_BASE is not set",
        ),
        qemu=QemuSettings(
            binary="qemu-system-aarch64",
            package="qemu-system-arm",
            # kunit.py's CPU, so both see the same features. `max` emulates pointer authentication's QARMA cipher on
            # every call and return: a 3.5x slower boot under TCG (docs/performance.md, "arm64 guests").
            args=("-machine", "virt", "-cpu", "cortex-a57", "-m", "1024", "-serial", "stdio"),
            kernel_args=("console=ttyAMA0",),
            # The generic timer runs on the instruction count, as x86_64's clocks do: jiffies, which kunit.timeout
            # counts, then do not jump when the host starves QEMU.
            tcg_args=("-icount", "shift=auto,sleep=off"),
        ),
    ),
}
