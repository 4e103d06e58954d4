"""A boot's kernel command line: how long it may be (the kernel keeps COMMAND_LINE_SIZE bytes of it, its
`boot_command_line` array, whose size the symbol table of vmlinux records, and on most architectures cuts the rest
without a word: m68k and alpha keep 256 bytes, and sh4's r2d passes no more: a filter naming a dozen suites already
runs past them), and a host path as one word of it."""

from __future__ import annotations

import atexit
import functools
import hashlib
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import KunitError
from ..kbuild.records import elf_symbol_size
from ..model import Kernel

# The smallest COMMAND_LINE_SIZE an architecture has (m68k, sh, alpha, sparc32): a shorter line fits every kernel, so
# no symbol table is read for it.
SMALLEST_COMMAND_LINE = 256
_ARRAY = "boot_command_line"


@functools.cache
def _recorded_size(path: Path, mtime_ns: int) -> int | None:
    return elf_symbol_size(path, _ARRAY)


def command_line_size(kernel: Kernel) -> int:
    """The bytes of command line a boot of the kernel keeps, its NUL included: COMMAND_LINE_SIZE of the image, from
    its vmlinux (or its image, an ELF file, where no build directory is at hand; the smallest any architecture has
    when neither records it), or fewer where the machine's loader passes fewer (its record's command_line_room)."""
    size = SMALLEST_COMMAND_LINE
    for path in (kernel.build.build_dir / "vmlinux", kernel.build.image):
        try:
            mtime_ns = path.stat().st_mtime_ns
        except OSError:
            continue
        recorded = _recorded_size(path, mtime_ns)
        if recorded:
            size = recorded
            break
    room = kernel.arch.qemu.command_line_room if kernel.arch.qemu is not None else 0
    return min(size, room) if room else size


def line_length(args: Sequence[str]) -> int:
    """The bytes of the command line these arguments make, its terminating NUL included."""
    return len(" ".join(args).encode()) + 1


def check_fits(kernel: Kernel, args: Sequence[str]) -> None:
    """Refuse a command line the kernel would cut: the arguments past its end (a filter's last globs, a sanitizer's
    or the user's own) would be lost, and with them cases or settings, without a word from the guest."""
    length = line_length(args)
    if length <= SMALLEST_COMMAND_LINE:
        return
    size = command_line_size(kernel)
    if length > size:
        raise KunitError(
            f"The kernel command line of a boot of {kernel.key} is {length - 1} bytes, but its kernel keeps "
            f"{size - 1} (COMMAND_LINE_SIZE, the size of {_ARRAY} in its vmlinux, or what its machine's loader "
            "passes) and would cut the rest.",
            "shorten what --kunit-kernel-args, the pytest_kunit_kernel_args hooks or an architecture record of your "
            "own add to every boot; pytest-kunit splits its own filter into as many boots as the kernel needs.",
            detail=f"Command line:\n{' '.join(args)}",
        )


# What ends a word of the kernel's command line (lib/cmdline.c next_arg: whitespace) or quotes it.
_SPLITS = re.compile(r'[\s"]')


def one_word(path: Path) -> Path:
    """`path` as one word of a kernel command line: itself, or, if it holds a space or a quote, a link to it from a
    private directory whose path holds neither. Quoting cannot do it: UML's own `initrd=` takes the rest of its
    argument as it is, quotes and all, while the kernel's parser splits that argument at the space and hands init the
    rest as a stray word."""
    if not _SPLITS.search(str(path)):
        return path
    link = _links() / hashlib.sha256(str(path).encode()).hexdigest()[:16]
    if not link.is_symlink():
        link.symlink_to(path)
    return link


@functools.cache
def _links() -> Path:
    """This process's directory of links (mode 0700, made by mkdtemp: no one else can replace a link in it)."""
    directory = Path(tempfile.mkdtemp(prefix="pytest-kunit-"))
    atexit.register(shutil.rmtree, directory, True)
    if _SPLITS.search(str(directory)):
        raise KunitError(
            f"A path the kernel reads from its command line holds a space, and so does the temporary directory "
            f"{directory} where pytest-kunit would link it from.",
            "set TMPDIR to a directory whose path has no spaces (or use --kunit-cache-dir without spaces).",
        )
    return directory
