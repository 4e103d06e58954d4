"""The records Kbuild leaves in a build directory, read in one place for every stage: each target's `.cmd` file (its
command line, its source, fixdep's dependency list and the CONFIG_ symbols in it), the list of Kconfig files
include/config/auto.conf.cmd names, thin archives (the objects vmlinux.a and lib.a name) and ELF files' headers
and sections (objects and the image). It reads; what a record means is for its callers.

A `.cmd` file, as Kbuild writes it for `lib/x.o` (6.1 names the command `cmd_`, 6.3 and later `savedcmd_`):

    savedcmd_lib/x.o := gcc -Wp,-MMD,lib/.x.o.d ... -c -o lib/x.o /src/lib/x.c
    source_lib/x.o := /src/lib/x.c
    deps_lib/x.o := \\
      /src/include/linux/kconfig.h \\
        $(wildcard include/config/FOO) \\
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple


class NotARecord(ValueError):
    """A file is not in the form Kbuild (or the tool it ran) writes. str() says what it is not."""


# --- .cmd files ---------------------------------------------------------------------------------------------------

_FIXDEP = re.compile(r"\$\(wildcard include/config/([A-Za-z0-9_]+)\)")


@dataclass(frozen=True)
class CmdRecord:
    """What Kbuild recorded of how it made one target."""

    target: str  # relative to the build directory, e.g. "lib/kunit/executor.o"
    command: str | None  # the shell command make ran (make's `$$` and `$(pound)` unescaped); None: not recorded
    source: str | None  # the source file, as Kbuild named it; None: not recorded
    deps: tuple[str, ...] | None  # fixdep's list, an entry a line: each file read, each `$(wildcard ...)`; None: none
    config_symbols: frozenset[str]  # CONFIG_X for each `$(wildcard include/config/X)` fixdep wrote


def cmd_path(target: str) -> str:
    """The `.cmd` file Kbuild writes beside a target, relative as the target is: lib/x.o -> lib/.x.o.cmd."""
    directory, name = os.path.split(target)
    return os.path.join(directory, f".{name}.cmd")


def parse_cmd(text: str, target: str) -> CmdRecord:
    """The record of `target` in the text of its `.cmd` file."""
    name = re.escape(target)
    command = re.search(rf"^(?:saved)?cmd_{name} := (.*)$", text, re.MULTILINE)
    source = re.search(rf"^source_{name} := (.*)$", text, re.MULTILINE)
    deps = re.search(rf"^deps_{name} :=(.*)$", text, re.MULTILINE)
    return CmdRecord(
        target,
        _unescaped(command[1]) if command else None,
        source[1].strip() if source else None,
        _dependency_list(deps[1], text[deps.end(1) + 1 :]) if deps else None,
        frozenset(f"CONFIG_{symbol}" for symbol in _FIXDEP.findall(text)),
    )


def read_cmd(build_dir: Path, target: str) -> CmdRecord:
    """The record of `target` (relative to `build_dir`) in the `.cmd` file beside it. Raises OSError."""
    return parse_cmd((build_dir / cmd_path(target)).read_text(), target)


def _unescaped(command: str) -> str:
    return re.sub(r"\$\$|\$\(pound\)", lambda match: "$" if match[0] == "$$" else "#", command)


def _dependency_list(first: str, rest: str) -> tuple[str, ...]:
    """The entries of a `deps_X := \\` assignment, one a line as fixdep writes them: what its own line holds after
    `:=` (`first`), then each continued line's."""
    entries: list[str] = []
    lines, line = iter(rest.splitlines()), first
    while True:
        stripped = line.rstrip()
        entry = stripped.removesuffix("\\").strip()
        if entry:
            entries.append(entry)
        if not stripped.endswith("\\"):
            return tuple(entries)
        line = next(lines, "")


def recorded_objects(build_dir: Path) -> Iterator[Path]:
    """Each object (relative to the build directory) a `.cmd` file records the making of: what the build compiled."""
    for command_file in build_dir.rglob(".*.o.cmd"):
        yield command_file.parent.relative_to(build_dir) / command_file.name[1 : -len(".cmd")]


def cmd_files(build_dir: Path, since_ns: int | None = None) -> Iterator[tuple[str, bytes | None]]:
    """Each `.cmd` file of the build (its path) with its bytes, None where it cannot be read; with `since_ns`, only
    those written after it. The build directory's own subdirectories are walked, not the tree it links to."""
    for directory, _, files in os.walk(build_dir):
        for name in files:
            if not (name.startswith(".") and name.endswith(".cmd")):
                continue
            path = os.path.join(directory, name)
            text: bytes | None
            try:
                if since_ns is not None and os.stat(path).st_mtime_ns < since_ns:
                    continue
                with open(path, "rb") as stream:
                    text = stream.read()
            except OSError:
                text = None
            yield path, text


def readers_of(build_dir: Path, sources: Iterable[str]) -> dict[str, set[str]]:
    """For each source (absolute path), the `.cmd` files (relative to the build directory) naming it in their command
    or dependency list: what Kbuild would make again when it changes (a .c file may #include another). Every `.cmd`
    file of the build is read, as bytes, and tokenised only when it holds a source's file name."""
    by_name: dict[bytes, list[str]] = {}
    for source in sources:
        by_name.setdefault(os.fsencode(os.path.basename(source)), []).append(os.path.realpath(source))
    found: dict[str, set[str]] = {}
    for path, text in cmd_files(build_dir):
        if text is None:
            continue
        for base, wanted in by_name.items():
            if base not in text:
                continue
            for token in text.replace(b"\\", b" ").replace(b":=", b" ").split():
                if token == base or token.endswith(b"/" + base):
                    named = os.path.realpath(os.path.join(build_dir, os.fsdecode(token)))
                    if named in wanted:
                        found.setdefault(named, set()).add(os.path.relpath(path, build_dir))
    # Report under the names the caller gave.
    return {source: found.get(os.path.realpath(source), set()) for source in sources}


def kconfig_inputs(build_dir: Path) -> list[str]:
    """The Kconfig files (relative to the tree) Kconfig read for the build's configuration, as its
    include/config/auto.conf.cmd lists them (`deps_config := \\`, one tab-indented file a line). Raises OSError."""
    listed = (build_dir / "include/config/auto.conf.cmd").read_text()
    return re.findall(r"^\t(\S+) \\$", listed, re.MULTILINE)


# --- thin archives ------------------------------------------------------------------------------------------------


def thin_members(archive: Path) -> list[str]:
    """The object paths (relative to the archive's directory) a thin archive names, in link order: vmlinux.a as
    Kbuild makes it on 6.1 and later (`ar cDPrST`), lib.a. Raises NotARecord for any other archive, OSError."""
    data = archive.read_bytes()
    if not data.startswith(b"!<thin>\n"):
        raise NotARecord(f"{archive} is not a thin archive")
    members: list[str] = []
    names = b""
    position = 8
    while position + 60 <= len(data):
        header = data[position : position + 60]
        name, size = header[:16].decode().rstrip(), int(header[48:58])
        position += 60
        if name in ("/", "/SYM64/"):  # the symbol index: stored in the archive
            position += size + size % 2
        elif name == "//":  # long names: stored in the archive
            names = data[position : position + size]
            position += size + size % 2
        elif name.startswith("/"):  # a member by long name; its contents stay in the file it names
            offset = int(name[1:].rstrip("/ "))
            members.append(names[offset : names.index(b"/\n", offset)].decode())
        else:
            members.append(name.rstrip("/"))
    return members


# --- ELF ------------------------------------------------------------------------------------------------------------

ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True)
class ElfSection:
    name: str
    kind: int  # sh_type
    flags: int
    offset: int
    size: int
    link: int
    info: int  # for a relocation section: the index of the section it relocates


@dataclass(frozen=True)
class ElfSymbol:
    kind: int  # STT_*
    section: int  # st_shndx
    value: int
    size: int


class Relocation(NamedTuple):
    offset: int  # within the section relocated
    symbol: int  # index in the symbol table; 0: none
    kind: int  # R_* type, by architecture
    addend: int


def _is_elf64_little(header: bytes) -> bool:
    return header[:4] == ELF_MAGIC and header[4:5] == b"\x02" and header[5:6] == b"\x01"


def elf_sections(data: bytes) -> list[ElfSection]:
    """An ELF64 little-endian relocatable object's sections, named. Raises NotARecord for any other file."""
    if not _is_elf64_little(data) or struct.unpack_from("<H", data, 16)[0] != 1:
        raise NotARecord("not a 64-bit little-endian relocatable ELF object")
    (shoff,) = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + index * shentsize) for index in range(shnum)]
    names = raw[shstrndx][4]

    def name(offset: int) -> str:
        end = data.index(b"\0", names + offset)
        return data[names + offset : end].decode(errors="replace")

    return [ElfSection(name(r[0]), r[1], r[2], r[4], r[5], r[6], r[7]) for r in raw]


def elf_section_names(path: Path) -> bytes:
    """An ELF64 little-endian file's section-name string table, read through its headers alone (not the whole file).
    Raises NotARecord for any other file."""
    with path.open("rb") as stream:
        header = stream.read(64)
        if not _is_elf64_little(header):
            raise NotARecord(f"{path} is not a 64-bit little-endian ELF object")
        (shoff,) = struct.unpack_from("<Q", header, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 58)
        stream.seek(shoff)
        table = stream.read(shentsize * shnum)
        names_offset, names_size = struct.unpack_from("<QQ", table, shstrndx * shentsize + 24)
        stream.seek(names_offset)
        return stream.read(names_size)


def elf_symbols(data: bytes, table: ElfSection) -> list[ElfSymbol]:
    """The entries of an ELF64 little-endian symbol table section."""
    entries = struct.iter_unpack("<IBBHQQ", data[table.offset : table.offset + table.size])
    return [ElfSymbol(info & 0xF, shndx, value, size) for _, info, _, shndx, value, size in entries]


def elf_relocations(data: bytes, table: ElfSection) -> list[Relocation]:
    """The entries of an ELF64 little-endian SHT_RELA section, by offset."""
    entries = struct.iter_unpack("<QQq", data[table.offset : table.offset + table.size])
    return sorted(Relocation(offset, info >> 32, info & 0xFFFFFFFF, addend) for offset, info, addend in entries)


def elf_machine(path: Path) -> int | None:
    """An ELF file's e_machine (any class, in the file's own byte order); None for anything else or no file."""
    try:
        with path.open("rb") as stream:
            header = stream.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[:4] != ELF_MAGIC or header[5] not in (1, 2):
        return None
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")


def elf_symbol_size(path: Path, name: str) -> int | None:
    """The size (st_size) of the symbol `name` in an ELF file's symbol table, any class and byte order, reading its
    headers, symbol table and string table alone; None when the file is no ELF file, has no symbol table or no such
    symbol."""
    try:
        with path.open("rb") as stream:
            header = stream.read(64)
            if len(header) < 52 or header[:4] != ELF_MAGIC or header[4] not in (1, 2) or header[5] not in (1, 2):
                return None
            wide = header[4] == 2
            order = "<" if header[5] == 1 else ">"
            (shoff,) = struct.unpack_from(order + ("Q" if wide else "I"), header, 40 if wide else 32)
            shentsize, shnum = struct.unpack_from(order + "HH", header, 58 if wide else 46)
            stream.seek(shoff)
            table = stream.read(shentsize * shnum)
            # sh_type, then sh_offset, sh_size, sh_link: where each section's bytes lie, and its string table.
            layout = order + ("4xI16xQQI" if wide else "4xI8xIII")
            sections = [struct.unpack_from(layout, table, index * shentsize) for index in range(shnum)]
            symtab = next((section for section in sections if section[0] == 2), None)  # SHT_SYMTAB
            if symtab is None or symtab[3] >= shnum:
                return None

            def read(offset: int, size: int) -> bytes:
                stream.seek(offset)
                return stream.read(size)

            strings = read(*sections[symtab[3]][1:3])
            symbols = read(*symtab[1:3])
    except OSError:
        return None
    # Every place the name ends the string table: the linker shares a name's bytes with the tail of a longer one.
    wanted = name.encode() + b"\0"
    offsets: set[int] = set()
    found = strings.find(wanted)
    while found >= 0:
        offsets.add(found)
        found = strings.find(wanted, found + 1)
    # st_name, then st_size: an entry's first field and, by class, its fourth or third.
    entry = order + ("I12xQ" if wide else "I4xI4x")
    return next((int(size) for at, size in struct.iter_unpack(entry, symbols) if at in offsets), None)


def elf_extent(path: Path, size: int) -> int:
    """How many bytes an ELF file of `size` bytes must hold, by its headers: its program and section header tables
    and, when those lie within it, each segment's bytes. Any class and byte order. Raises NotARecord, saying what
    is wrong of the file as "it ..."."""
    with path.open("rb") as stream:
        header = stream.read(64)
        if len(header) < 52 or header[:4] != ELF_MAGIC or header[4] not in (1, 2) or header[5] not in (1, 2):
            raise NotARecord("it is not an ELF file")
        wide = header[4] == 2
        order = "<" if header[5] == 1 else ">"
        if wide and len(header) < 64:
            raise NotARecord("it ends inside its ELF header")
        phoff, shoff = struct.unpack_from(order + ("QQ" if wide else "II"), header, 32 if wide else 28)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", header, 54 if wide else 42)
        end: int = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
        if end <= size:
            stream.seek(phoff)
            table = stream.read(phentsize * phnum)
            for index in range(phnum):
                # p_offset and p_filesz: where each loaded segment's bytes lie in the file.
                if wide:
                    offset, _, _, filesz = struct.unpack_from(order + "QQQQ", table, index * phentsize + 8)
                else:
                    offset, _, _, filesz = struct.unpack_from(order + "IIII", table, index * phentsize + 4)
                end = max(end, offset + filesz)
    return end
