"""Architecture records from TOML or JSON files: pytest-kunit's own (arch/records/, one file each) and a user's
(--kunit-arch-config), read alike: a table per architecture, named by its key, holding `kconfig` and the tables
`make` (with an optional `compiler_check`) and `qemu` (or `uml`), whose keys are the fields of MakeSettings,
CompilerCheck, QemuSettings and UmlSettings. Every mistake is named by its place: `[NAME].make.target`."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

from .shape import Arch, CompilerCheck, MakeSettings, QemuSettings, UmlSettings

EXAMPLE = """[x86_64-big]
kconfig = ["CONFIG_SERIAL_8250=y", "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_HYPERVISOR_GUEST=y", "CONFIG_PVH=y"]
[x86_64-big.make]
arch = "x86_64"
source_arch = "x86"
target = "vmlinux"
image = "vmlinux"
elf = true
[x86_64-big.qemu]
binary = "qemu-system-x86_64"
package = "qemu-system-x86"
args = ["-m", "2048", "-serial", "stdio"]
kernel_args = ["console=ttyS0"]"""

_KINDS = {"str": (str, "a string"), "bool": (bool, "true or false"), "int": (int, "a whole number")}


class ArchFileError(ValueError):
    """A record file that cannot be read as records; its text names the file and the bad field."""


def _value(place: str, annotation: str, value: Any) -> Any:
    if annotation == "CompilerCheck | None":
        return _record(place, CompilerCheck, value)
    if annotation == "tuple[str, ...]":
        if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
            raise ArchFileError(f"{place}: expected a list of strings, got {value!r}")
        return tuple(value)
    kind, said = _KINDS[annotation]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ArchFileError(f"{place}: expected {said}, got {value!r}")
    return value


def _record(place: str, shape: type[Any], table: Any) -> Any:
    """One of the settings dataclasses from its table: required fields present, no unknown key, each of its type."""
    if not isinstance(table, dict):
        raise ArchFileError(f"{place}: expected a table of {shape.__name__}'s fields, got {table!r}")
    fields = {field.name: field for field in dataclasses.fields(shape)}
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise ArchFileError(f"{place}.{unknown[0]}: no such field; {shape.__name__} has: {', '.join(fields)}")
    values = {}
    for name, field in fields.items():
        required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        if name not in table:
            if required:
                raise ArchFileError(f"{place}.{name}: missing (required)")
            continue
        values[name] = _value(f"{place}.{name}", str(field.type), table[name])
    return shape(**values)


def _arch(name: str, table: Any) -> Arch:
    place = f"[{name}]"
    if not isinstance(table, dict):
        raise ArchFileError(f"{place}: expected a table (kconfig, make, and qemu or uml), got {table!r}")
    unknown = sorted(set(table) - {"kconfig", "make", "qemu", "uml"})
    if unknown:
        raise ArchFileError(f"{place}.{unknown[0]}: no such field; a record has: kconfig, make, qemu, uml")
    if "make" not in table:
        raise ArchFileError(f"{place}.make: missing (required)")
    if ("qemu" in table) == ("uml" in table):
        raise ArchFileError(f"{place}: give exactly one of the tables qemu (a QEMU guest) and uml (User Mode Linux)")
    return Arch(
        name=name,
        make=_record(f"{place}.make", MakeSettings, table["make"]),
        kconfig=_value(f"{place}.kconfig", "tuple[str, ...]", table.get("kconfig", [])),
        qemu=_record(f"{place}.qemu", QemuSettings, table["qemu"]) if "qemu" in table else None,
        uml=_record(f"{place}.uml", UmlSettings, table["uml"]) if "uml" in table else None,
    )


def load(path: Path) -> dict[str, Arch]:
    """The records `path` holds (JSON if it ends in .json, else TOML), by name; ArchFileError names what is wrong."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ArchFileError(f"{path}: cannot be read: {error}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise ArchFileError(f"{path}: not {kind}: {error}") from None
    if not isinstance(data, dict) or not data:
        raise ArchFileError(f"{path}: holds no architecture table; write one as:\n{EXAMPLE}")
    try:
        return {str(name): _arch(str(name), table) for name, table in data.items()}
    except ArchFileError as error:
        raise ArchFileError(f"{path}: {error}") from None
