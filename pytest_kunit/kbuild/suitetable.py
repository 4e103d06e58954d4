"""What an image's case list is made of, read from its build's object files: a digest that changes whenever the list
a `kunit.action=list` boot prints can change, and stays when only code changed, so that boot can be skipped.

The kernel lists the suites its `.kunit*` sections point at, in link order: each suite's name, its case array, the
cases' names and attributes. So the digest covers, for every object linked into vmlinux, the data reachable from
those sections through relocations, with pointers into code reduced to "code" (moving or rewriting a function changes
no name), plus the link order and the KUnit framework's own objects (the executor prints the list) byte for byte.
Whatever cannot be followed for sure (a pointer to another object's data, an unfamiliar ELF) gives no digest: the
list boot then runs as before. `ObjectReader` follows an object's pointers; suitenames.py reads the suites' names
and cases with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from pathlib import Path

from ..host.cache import write_atomically
from ..versions import SUITE_NAME_BYTES
from .records import (
    ElfSection,
    ElfSymbol,
    NotARecord,
    elf_relocations,
    elf_section_names,
    elf_sections,
    elf_symbols,
    thin_members,
)

MEMO = ".pytest-kunit-suite-objects"  # per object: (mtime, size) -> its digest, so a rebuild rereads only what changed
FRAMEWORK = "lib/kunit/"  # the executor and the rest of KUnit: any change to them may change what a list boot prints
_SHT_RELA, _SHT_NOBITS, _SHT_SYMTAB = 4, 8, 2
_SHF_WRITE, _SHF_EXECINSTR, _SHF_STRINGS = 0x1, 0x4, 0x20
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS = 0, 0xFF00, 0xFFF1
_STT_SECTION = 3
_ABS64 = (1, 257)  # R_X86_64_64, R_AARCH64_ABS64: a plain 8-byte pointer


class Opaque(Exception):
    """Something the digest cannot vouch for: fall back to a list boot."""


def section_table(data: bytes) -> list[ElfSection]:
    try:
        return elf_sections(data)
    except NotARecord as error:
        raise Opaque(str(error)) from None


def _roots(sections: list[ElfSection]) -> list[int]:
    return [index for index, section in enumerate(sections) if section.name.startswith(".kunit") and section.size]


class ObjectReader:
    """One object's sections, symbols and relocations, to follow pointers from its suite tables."""

    def __init__(self, data: bytes, sections: list[ElfSection]) -> None:
        self.data, self.sections = data, sections
        symtab = next((s for s in sections if s.kind == _SHT_SYMTAB), None)
        if symtab is None:
            raise Opaque("no symbol table")
        self.symbols = elf_symbols(data, symtab)
        self.relocations = {
            section.info: elf_relocations(data, section) for section in sections if section.kind == _SHT_RELA
        }
        self._memo: dict[tuple[int, int], str] = {}

    def describe(self, index: int, start: int, end: int) -> str:
        """A digest of bytes [start, end) of a section, each pointer in it replaced by what it points at."""
        key = (index, start)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = "cycle"  # a structure that points back at itself
        section = self.sections[index]
        content = (
            bytes(end - start)
            if section.kind == _SHT_NOBITS
            else self.data[section.offset + start : section.offset + end]
        )
        digest = hashlib.sha256(content)
        for offset, symbol, kind, addend in self.relocations.get(index, ()):
            if start <= offset < end:
                digest.update(f"\0{offset - start}:{kind}:{self.target(symbol, addend)}".encode())
        self._memo[key] = digest.hexdigest()
        return self._memo[key]

    def target(self, index: int, addend: int) -> str:
        """A digest of what a pointer points at."""
        if index == 0:
            return f"absolute {addend}"
        symbol = self.symbols[index]
        if symbol.section == _SHN_ABS:
            return f"absolute {symbol.value + addend}"
        if symbol.section == _SHN_UNDEF or symbol.section >= _SHN_LORESERVE:
            raise Opaque("a suite table points into another object")
        section = self.sections[symbol.section]
        address = symbol.value + addend
        if section.flags & _SHF_EXECINSTR:
            return "code"
        if section.flags & _SHF_STRINGS:
            text = self.data[section.offset + address : self.data.index(b"\0", section.offset + address)]
            return "string " + text.hex()
        holder = self.holder(symbol.section, address)
        if holder is None:
            return (
                f"end of data {section.size - address}"
                if address >= section.size
                else f"rest {self.describe(symbol.section, address, section.size)}"
            )
        return (
            f"data {self.describe(symbol.section, holder.value, holder.value + holder.size)} +{address - holder.value}"
        )

    def name_at(self, index: int, kind: int, addend: int) -> str:
        """The NUL-terminated `char name[SUITE_NAME_BYTES]` a suite table entry points at."""
        symbol = self.symbols[index] if index else None
        if kind not in _ABS64 or symbol is None or not _SHN_UNDEF < symbol.section < _SHN_LORESERVE:
            raise Opaque("a suite table entry points outside its object")
        section = self.sections[symbol.section]
        address = symbol.value + addend
        if section.kind == _SHT_NOBITS or not 0 <= address <= section.size - SUITE_NAME_BYTES:
            raise Opaque("a suite table entry points at no initialised suite")
        field = self.data[section.offset + address : section.offset + address + SUITE_NAME_BYTES]
        if b"\0" not in field:
            raise Opaque("a suite name is not terminated")
        return field[: field.index(b"\0")].decode()

    def pointer(self, index: int, addend: int) -> tuple[int, int, str]:
        """Where a pointer points (section, address) and at what: "code", "text" (strings), "rodata" (other read-only
        data: a KASAN build's strings, between red zones) or "data" (writable)."""
        symbol = self.symbols[index] if index else None
        if symbol is None or not _SHN_UNDEF < symbol.section < _SHN_LORESERVE:
            raise Opaque("a suite points outside its object")
        flags = self.sections[symbol.section].flags
        what = (
            "code"
            if flags & _SHF_EXECINSTR
            else "text"
            if flags & _SHF_STRINGS
            else "data"
            if flags & _SHF_WRITE
            else "rodata"
        )
        return symbol.section, symbol.value + addend, what

    def text(self, section: int, address: int) -> str:
        start = self.sections[section].offset + address
        return self.data[start : self.data.index(b"\0", start)].decode(errors="replace")

    def holder(self, section: int, address: int) -> ElfSymbol | None:
        """The data object (variable) an address lies in."""
        for symbol in self.symbols:
            inside = symbol.value <= address < symbol.value + symbol.size
            if inside and symbol.section == section and symbol.kind != _STT_SECTION:
                return symbol
        return None


def object_digest(data: bytes) -> str:
    """The digest of what one object adds to the case list: "" if it has no suite table. Raises Opaque."""
    sections = section_table(data)
    roots = _roots(sections)
    if not roots:
        return ""
    reader = ObjectReader(data, sections)
    return hashlib.sha256(
        "".join(f"{sections[i].name}:{reader.describe(i, 0, sections[i].size)}\n" for i in roots).encode()
    ).hexdigest()


def has_roots(path: Path) -> bool:
    """Whether an object has a suite table, from its section headers alone (most objects have none)."""
    try:
        names = elf_section_names(path)
    except NotARecord as error:
        raise Opaque(str(error)) from None
    return b".kunit" in names  # also inside ".rela.kunit_test_suites": the string table shares tails


def _member_digest(path: Path, relative: str) -> str:
    # KUnit's own code (the executor prints the list) counts byte for byte; its tests count as any suite does.
    if relative.startswith(FRAMEWORK) and not re.search(r"[-_]test$", path.stem):
        return "framework " + hashlib.sha256(path.read_bytes()).hexdigest()
    return object_digest(path.read_bytes()) if has_roots(path) else ""


def case_list_digest(build_dir: Path) -> str | None:
    """The digest of everything the image's case list depends on, or None where it cannot be told (no thin
    vmlinux.a: kernels before 6.1; a suite table the reader cannot follow)."""
    archives = [build_dir / "vmlinux.a", build_dir / "lib/lib.a", *sorted(build_dir.glob("arch/*/lib/lib.a"))]
    memo_file = build_dir / MEMO
    try:
        memo: dict[str, list[object]] = json.loads(memo_file.read_text()) if memo_file.exists() else {}
    except ValueError:
        memo = {}
    digest = hashlib.sha256()
    fresh: dict[str, list[object]] = {}
    try:
        for archive in archives:
            if not archive.exists():
                if archive.name == "vmlinux.a":
                    return None
                continue
            for member in thin_members(archive):
                path = archive.parent / member
                stat = path.stat()
                seen = [stat.st_mtime_ns, stat.st_size]
                key = os.path.relpath(path, build_dir)
                known = memo.get(key)
                value = known[2] if known is not None and known[:2] == seen else _member_digest(path, key)
                fresh[key] = [*seen, value]
                digest.update(f"{key}\0{value}\n".encode())
    except (Opaque, OSError, ValueError, struct.error):
        return None
    if fresh != memo:
        write_atomically(memo_file, json.dumps(fresh))
    return digest.hexdigest()
