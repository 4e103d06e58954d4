"""Architecture records from TOML or JSON files: pytest-kunit's own (arch/records/, one file each) and a user's
(--kunit-arch-config), read alike: a table per architecture, named by its key, holding `kconfig` and the tables
`make` (with an optional `compiler_check`) and `qemu` (or `uml`), whose keys are the fields of MakeSettings,
CompilerCheck, QemuSettings and UmlSettings. Every mistake is named by its place: `[NAME].make.target`.

A `qemu` table holds what is its machine's own; the loader adds what every guest has unless the table says otherwise
(QEMU_DEFAULTS): the console on stdio, `memory` MiB of memory, and the instruction count under TCG."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

from .shape import Arch, CompilerCheck, MakeSettings, QemuSettings, UmlSettings

# What every QEMU guest gets unless its table says otherwise: `-serial stdio` last in `args` (the console pytest-kunit
# reads; a machine whose console is not its first serial port says `-serial null` before), unless `args` already hold
# it; `-m MEMORY` before it, unless `args` hold a `-m` (`memory = 0`: none, for a machine of fixed memory); and under
# TCG (KVM refuses it), every guest clock on the instruction count, kept near real time (shift=auto) and jumping over
# idle time (sleep=off): no tick is lost when the host starves QEMU, so calibration and jiffies (which kunit.timeout
# counts) do not depend on the host's load (`tcg_args = []` where QEMU cannot).
CONSOLE = ("-serial", "stdio")
MEMORY = 1024  # MiB
TCG_ARGS = ("-icount", "shift=auto,sleep=off")
QEMU_DEFAULTS = f"console {' '.join(CONSOLE)}, memory = {MEMORY}, tcg_args = {list(TCG_ARGS)}"

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
memory = 2048
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


def _with_qemu_defaults(place: str, table: Any) -> Any:
    """A qemu table as QemuSettings takes it: the loader's defaults (QEMU_DEFAULTS) filled in, `memory` made `-m`."""
    if not isinstance(table, dict):
        return table  # _record names the mistake
    table = dict(table)
    args = list(_value(f"{place}.args", "tuple[str, ...]", table.get("args", [])))
    memory_said = "memory" in table
    memory = _value(f"{place}.memory", "int", table.pop("memory", MEMORY))
    if memory < 0:
        raise ArchFileError(f"{place}.memory: expected MiB of guest memory (0: QEMU's own), got {memory}")
    if "-m" in args:
        if memory_said:
            raise ArchFileError(f"{place}.memory: the args name -m already: give the guest's memory once")
    elif memory:
        args += ["-m", str(memory)]
    if not any(tuple(args[index : index + 2]) == CONSOLE for index in range(len(args))):
        args += CONSOLE
    table["args"] = args
    table.setdefault("tcg_args", list(TCG_ARGS))
    return table


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
        qemu=_record(f"{place}.qemu", QemuSettings, _with_qemu_defaults(f"{place}.qemu", table["qemu"]))
        if "qemu" in table
        else None,
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
