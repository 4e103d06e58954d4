"""The shape of an architecture record: one frozen record each, split by who reads it (make, Kconfig, QEMU or the
host)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompilerCheck:
    """A miscompilation known in a packaged compiler, asked of the compiler before it builds a kernel: `source`
    compiled with -O2 -S must give assembly in which the regular expression `expect` is found; else the build is
    refused, naming `fault`."""

    source: str
    expect: str
    fault: str


@dataclass(frozen=True)
class MakeSettings:
    """What `make` needs to build a bootable image."""

    arch: str  # ARCH=
    source_arch: str  # the directory under arch/ (SRCARCH), where the arch's tiny.config and defconfigs live
    target: str
    image: str  # relative to the build directory
    cross_compile: str = ""  # CROSS_COMPILE= prefix, also of the binutils that decode crash reports; "" if native
    compiler_package: str = ""  # the Debian package of a cross compiler, named when it is missing
    # The ELF machine (e_machine) of the guest's programs: an initramfs's /init must be one (initramfs.py). 0: none
    # known, so no host program runs there.
    elf_machine: int = 0
    elf: bool = False  # the image is an ELF file (vmlinux), checked as one before it is booted
    # After an edit to sources of vmlinux alone, compile those and link the image again without Kbuild's tree walk
    # (linkonly.py): only where the image is vmlinux's own link (arm64's Image needs an objcopy after it, UML's
    # linux a link of its own).
    link_only: bool = False
    compiler_check: CompilerCheck | None = None

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
    # kunit_shutdown=: how KUnit ends the guest when its suites are done. QEMU (-no-reboot) exits on a reboot, but a
    # machine whose firmware cannot reboot (sparc64's OpenBIOS) powers off instead.
    shutdown: str = "reboot"
    # What the machine's firmware prints after the kernel's last line (its reboot): the start of each such line. A list
    # boot's end is proven by the kernel's reboot line being the last the kernel printed (listing.py).
    after_reboot: tuple[str, ...] = ()
    # Whether the console shows the kernel's reboot line at all. s390's SCLP console flushes its buffer in a reboot
    # notifier, which kernel_restart() runs before it prints the line: everything before it is shown, the line never.
    shows_reboot_line: bool = True
    # The most bytes of command line the machine's loader hands the kernel (r2d copies it into a 256-byte field), when
    # fewer than the kernel keeps; 0: as many as the kernel keeps.
    command_line_room: int = 0
    # A firmware file QEMU boots with (-bios) when its installation ships it, else the machine's default firmware:
    # x86_64's qboot, which hands over to the kernel in a tenth of the time SeaBIOS takes and clears no screen.
    firmware: str = ""


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
