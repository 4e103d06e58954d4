"""The suites an object registers, by the names they run under and with their cases' names, read from its suite
tables as a list boot would print them (module mode lists a module's suites before loading it; membership tells which
object holds which suite). A `module_test()` suite (the series' compat API: tests written as the 2019 KUnit RFC
documents them) takes its name and cases from the `struct kunit_module` it points at, as KUnit copies them when it
first sees the suite."""

from __future__ import annotations

from pathlib import Path

from ..versions import SUITE_NAME_BYTES, SUITE_TABLES
from .records import Relocation
from .suitetable import ObjectReader, Opaque, has_roots, section_table


def _case_names(reader: ObjectReader, section: int, suite: int) -> tuple[str, ...]:
    """The names of the cases of the suite at `suite` in `section`."""
    fields = [
        (offset, reader.pointer(symbol, addend))
        for offset, symbol, _, addend in reader.relocations.get(section, ())
        if suite + SUITE_NAME_BYTES <= offset < suite + SUITE_NAME_BYTES + 64
    ]
    array = next((target for _, target in sorted(fields) if target[2] == "data"), None)
    if array is None:
        raise Opaque("a suite has no case array")
    return _array_case_names(reader, array[0], array[1])


def _module_suite(reader: ObjectReader, section: int, suite: int) -> tuple[str | None, tuple[str, ...]] | None:
    """A suite module_test() defines (the series' compat API, tests written as the 2019 KUnit RFC documents them):
    KUnit copies its name and cases from the `struct kunit_module` it points at past its own case fields, when
    it first sees the suite. That module's name (None: the suite keeps its own) and its cases' names; None for
    any other suite."""
    holder = reader.holder(section, suite)
    if holder is None:
        return None
    past_cases = [
        reader.pointer(symbol, addend)
        for offset, symbol, _, addend in reader.relocations.get(section, ())
        if suite + SUITE_NAME_BYTES + 64 <= offset < holder.value + holder.size
    ]
    module = next((target for target in past_cases if target[2] == "data"), None)
    if module is None:
        return None
    variable = reader.holder(module[0], module[1])
    if variable is None:
        raise Opaque("a suite's kunit_module is no variable of its object")
    fields = sorted(
        (offset - module[1], reader.pointer(symbol, addend))
        for offset, symbol, _, addend in reader.relocations.get(module[0], ())
        if module[1] <= offset < variable.value + variable.size
    )
    name = next(
        (reader.text(at, where) for offset, (at, where, what) in fields if offset == 0 and what != "code"), None
    )
    array = next(((at, where) for offset, (at, where, what) in fields if offset and what == "data"), None)
    if array is None:
        raise Opaque("a suite's kunit_module has no case array")
    return name, _array_case_names(reader, *array)


def _array_case_names(reader: ObjectReader, section: int, start: int) -> tuple[str, ...]:
    """The names of the cases in the case array at `start`: each case a pointer to its function followed by one
    to its name."""
    holder = reader.holder(section, start)
    if holder is None:
        raise Opaque("a suite's case array is no variable of its object")
    end = holder.value + holder.size
    pointers = {
        offset: reader.pointer(symbol, addend)
        for offset, symbol, _, addend in reader.relocations.get(section, ())
        if start <= offset < end
    }
    names = []
    for offset, (section_of, address, what) in sorted(pointers.items()):
        before = pointers.get(offset - 8)
        if what in ("text", "rodata") and before is not None and before[2] == "code":
            names.append(reader.text(section_of, address))
    return tuple(names)


def _suite_pointers(path: Path) -> tuple[ObjectReader | None, list[Relocation]]:
    """The entries of an object's suite tables, in table order: each must be a relocated pointer (to a suite)."""
    if not has_roots(path):
        return None, []
    data = path.read_bytes()
    sections = section_table(data)
    reader = ObjectReader(data, sections)
    entries: list[Relocation] = []
    for index, section in enumerate(sections):
        if section.name not in SUITE_TABLES or not section.size:
            continue
        table = reader.relocations.get(index, [])
        if [entry[0] for entry in table] != list(range(0, section.size, 8)):
            raise Opaque(f"{path}: {section.name} is not an array of relocated pointers")
        entries += table
    return reader, entries


def kunit_module_suite_name(name: bytes) -> str:
    """The suite name KUnit gives a module_test() suite from its kunit_module's name (kunit_module_suite_name() in
    the series' lib/kunit/kunit-module.c): each byte but an ASCII letter, digit, '_' or '-' becomes '_'."""
    kept = b"".join(
        bytes([byte]) if chr(byte).isascii() and (chr(byte).isalnum() or byte in b"_-") else b"_"
        for byte in name[: SUITE_NAME_BYTES - 1]
    )
    return kept.decode()


def _registered_name(reader: ObjectReader, symbol: int, kind: int, addend: int) -> tuple[str, tuple[str, ...] | None]:
    """The name a suite table entry's suite runs under, and its cases when it is a module_test() suite."""
    name = reader.name_at(symbol, kind, addend)
    target = reader.symbols[symbol]
    module = _module_suite(reader, target.section, target.value + addend)
    if module is None:
        return name, None
    module_name, cases = module
    return (name if module_name is None else kunit_module_suite_name(module_name.encode())), cases


def suite_names(path: Path) -> tuple[str, ...]:
    """The names of the suites an object's suite tables register, in table order; () if it has none. Each table
    entry is a relocated pointer to a `struct kunit_suite`, whose first field is `char name[SUITE_NAME_BYTES]` (see
    versions.suite_name_bytes): the name is read
    at the pointer's target, or, for a module_test() suite, from its kunit_module. Anything that is not exactly that
    is Opaque."""
    reader, entries = _suite_pointers(path)
    return (
        tuple(_registered_name(reader, symbol, kind, addend)[0] for _, symbol, kind, addend in entries)
        if reader
        else ()
    )


def suite_cases(path: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each suite an object's suite tables register, with its cases' names, in table order: what a list boot would
    print of them. A suite's case array is the one pointer past its name into data that is neither code nor text;
    each case there is a pointer to its function followed by one to its name (`struct kunit_case` in every kernel
    5.5..6.12), the array ending with an entry holding neither. A module_test() suite's name and cases are its
    kunit_module's (the series' compat API). Anything else is Opaque (a name computed at run time)."""
    reader, entries = _suite_pointers(path)
    if reader is None:
        return ()
    suites = []
    for _, symbol, kind, addend in entries:
        name, cases = _registered_name(reader, symbol, kind, addend)
        if not name:
            raise Opaque(f"{path}: a suite's name is set at run time")
        if cases is None:
            cases = _case_names(reader, reader.symbols[symbol].section, reader.symbols[symbol].value + addend)
        suites.append((name, cases))
    return tuple(suites)


__all__ = ["kunit_module_suite_name", "suite_cases", "suite_names"]
