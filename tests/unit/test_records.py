"""records: Kbuild's `.cmd` files, Kconfig's list of its inputs, thin archives and ELF headers, read from small files
written here as Kbuild, `ar` and gcc write them."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from pytest_kunit.kbuild.records import (
    CmdRecord,
    NotARecord,
    cmd_path,
    elf_extent,
    elf_relocations,
    elf_section_names,
    elf_sections,
    elf_symbol_size,
    elf_symbols,
    kconfig_inputs,
    parse_cmd,
    read_cmd,
    readers_of,
    recorded_objects,
    thin_members,
)

# lib/kunit/.executor.o.cmd as 6.12 writes it (6.1: `cmd_` for `savedcmd_`), cut short.
EXECUTOR_CMD = """\
savedcmd_lib/kunit/executor.o := gcc -Wp,-MMD,lib/kunit/.executor.o.d -DKBUILD_MODNAME='"kunit"' \
-D__KBUILD_MODFILE='"lib/kunit/executor"' -c -o lib/kunit/executor.o /src/lib/kunit/executor.c ; \
./tools/objtool/objtool --hacks=jump_label lib/kunit/executor.o ; echo $$PATH $(pound)

source_lib/kunit/executor.o := /src/lib/kunit/executor.c

deps_lib/kunit/executor.o := \\
    $(wildcard include/config/KUNIT) \\
  /src/include/linux/kconfig.h \\
    $(wildcard include/config/CPU_BIG_ENDIAN) \\
  include/generated/autoconf.h \\

lib/kunit/executor.o: $(deps_lib/kunit/executor.o)

$(deps_lib/kunit/executor.o):
"""


def test_a_cmd_file_gives_command_source_dependencies_and_the_symbols_fixdep_wrote() -> None:
    record = parse_cmd(EXECUTOR_CMD, "lib/kunit/executor.o")
    assert record == CmdRecord(
        "lib/kunit/executor.o",
        "gcc -Wp,-MMD,lib/kunit/.executor.o.d -DKBUILD_MODNAME='\"kunit\"' "
        "-D__KBUILD_MODFILE='\"lib/kunit/executor\"' -c -o lib/kunit/executor.o /src/lib/kunit/executor.c ; "
        "./tools/objtool/objtool --hacks=jump_label lib/kunit/executor.o ; echo $PATH #",
        "/src/lib/kunit/executor.c",
        (
            "$(wildcard include/config/KUNIT)",
            "/src/include/linux/kconfig.h",
            "$(wildcard include/config/CPU_BIG_ENDIAN)",
            "include/generated/autoconf.h",
        ),
        frozenset({"CONFIG_KUNIT", "CONFIG_CPU_BIG_ENDIAN"}),
    )


def test_6_1_names_the_command_cmd_() -> None:
    text = EXECUTOR_CMD.replace("savedcmd_", "cmd_")
    assert parse_cmd(text, "lib/kunit/executor.o").command == parse_cmd(EXECUTOR_CMD, "lib/kunit/executor.o").command


def test_what_a_cmd_file_does_not_record_is_none_and_another_target_s_lines_are_not_read() -> None:
    record = parse_cmd(EXECUTOR_CMD, "lib/kunit/test.o")
    assert (record.command, record.source, record.deps) == (None, None, None)
    bare = parse_cmd("savedcmd_vmlinux.a := ar cDPrST vmlinux.a init/main.o\n", "vmlinux.a")
    assert bare.command == "ar cDPrST vmlinux.a init/main.o" and bare.deps is None and not bare.config_symbols


def test_a_cmd_file_is_found_beside_its_target(tmp_path: Path) -> None:
    assert cmd_path("lib/kunit/executor.o") == "lib/kunit/.executor.o.cmd"
    assert cmd_path("vmlinux.o") == ".vmlinux.o.cmd"
    (tmp_path / "lib/kunit").mkdir(parents=True)
    (tmp_path / "lib/kunit/.executor.o.cmd").write_text(EXECUTOR_CMD)
    assert read_cmd(tmp_path, "lib/kunit/executor.o").source == "/src/lib/kunit/executor.c"
    with pytest.raises(OSError):
        read_cmd(tmp_path, "lib/kunit/test.o")


def test_the_recorded_objects_are_those_of_o_cmd_files(tmp_path: Path) -> None:
    for name in ("lib/kunit/.executor.o.cmd", ".init.o.cmd", "lib/.lib.a.cmd", ".vmlinux.cmd", "lib/.x.mod.cmd"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert sorted(map(str, recorded_objects(tmp_path))) == ["init.o", "lib/kunit/executor.o"]


def test_the_readers_of_a_source_are_the_cmd_files_naming_it(tmp_path: Path) -> None:
    source, build = tmp_path / "src", tmp_path / "build"
    (source / "lib").mkdir(parents=True)
    (source / "other").mkdir()
    for name in ("lib/a.c", "lib/a.h", "other/a.h"):
        (source / name).write_text("")
    (build / "lib").mkdir(parents=True)
    (build / "lib/.a.o.cmd").write_text(f"deps_lib/a.o := \\\n  {source}/lib/a.c \\\n  {source}/lib/a.h \\\n")
    (build / "lib/.b.o.cmd").write_text(f"deps_lib/b.o := \\\n  {source}/lib/a.h \\\n")
    (build / "lib/.c.o.cmd").write_text(f"deps_lib/c.o := \\\n  {source}/other/a.h \\\n")  # a namesake
    wanted = [str(source / "lib/a.c"), str(source / "lib/a.h")]
    assert readers_of(build, wanted) == {wanted[0]: {"lib/.a.o.cmd"}, wanted[1]: {"lib/.a.o.cmd", "lib/.b.o.cmd"}}


def test_kconfig_s_inputs_are_the_files_auto_conf_cmd_lists(tmp_path: Path) -> None:
    """As Kconfig writes the list: a tab, the file, a backslash; then an empty line and what else `make` checks."""
    (tmp_path / "include/config").mkdir(parents=True)
    (tmp_path / "include/config/auto.conf.cmd").write_text(
        "deps_config := \\\n\tlib/kunit/Kconfig \\\n\tKconfig \\\n\ninclude/config/auto.conf: $(deps_config)\n\n"
        'ifneq "$(CC)" "gcc"\ninclude/config/auto.conf: FORCE\nendif\n'
    )
    assert kconfig_inputs(tmp_path) == ["lib/kunit/Kconfig", "Kconfig"]


def test_a_thin_archive_names_its_members_in_link_order(tmp_path: Path) -> None:
    """As Kbuild makes vmlinux.a: `ar cDPrST`, members by path, short names and long ones, a symbol index."""
    for name in ("init/main.o", "lib/kunit/kunit-example-test.o", "a.o"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-c", "-x", "c", "-", "-o", tmp_path / name], input=b"int x_%d;" % len(name), check=True)
    members = ["init/main.o", "lib/kunit/kunit-example-test.o", "a.o"]
    subprocess.run(["ar", "cDPrsT", "vmlinux.a", *members], cwd=tmp_path, check=True)
    assert thin_members(tmp_path / "vmlinux.a") == members


def test_an_archive_that_is_not_thin_is_no_record(tmp_path: Path) -> None:
    (tmp_path / "lib.a").write_bytes(b"!<arch>\n")
    with pytest.raises(NotARecord, match="is not a thin archive"):
        thin_members(tmp_path / "lib.a")


SUITE_C = """\
struct kunit_suite { char name[256]; void (*run)(void); };
static void run(void) {}
static struct kunit_suite suite = { .name = "records", .run = run };
static struct kunit_suite *table[] __attribute__((used, section(".kunit_test_suites"))) = { &suite };
"""


@pytest.fixture
def object_file(tmp_path: Path) -> Path:
    path = tmp_path / "suite.o"
    subprocess.run(["gcc", "-O1", "-c", "-x", "c", "-", "-o", path], input=SUITE_C.encode(), check=True)
    return path


def test_an_object_s_sections_symbols_and_relocations(object_file: Path) -> None:
    data = object_file.read_bytes()
    sections = elf_sections(data)
    by_name = {section.name: index for index, section in enumerate(sections)}
    table = sections[by_name[".kunit_test_suites"]]
    assert table.size == 8 and b".kunit_test_suites" in elf_section_names(object_file)
    rela = next(section for section in sections if section.kind == 4 and section.info == by_name[".kunit_test_suites"])
    (pointer,) = elf_relocations(data, rela)
    symbols = elf_symbols(data, sections[rela.link])
    target = symbols[pointer.symbol]
    suite = sections[target.section]
    start = suite.offset + target.value + pointer.addend
    assert pointer.offset == 0 and data[start : start + 8] == b"records\0"


def test_a_file_that_is_no_64_bit_little_endian_elf_object_is_no_record(tmp_path: Path) -> None:
    path = tmp_path / "not.o"
    for data in (b"!<thin>\n" + bytes(64), b"\x7fELF\x01\x01" + bytes(58), b"\x7fELF\x02\x02" + bytes(58)):
        path.write_bytes(data)
        with pytest.raises(NotARecord):
            elf_section_names(path)
        with pytest.raises(NotARecord):
            elf_sections(data)


def test_an_elf_file_s_extent_is_what_its_headers_describe(tmp_path: Path) -> None:
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 64, 200, 0, 64, 56, 1, 64, 1, 0)
    program = struct.pack("<IIQQQQQQ", 1, 5, 120, 0, 0, 300, 300, 0x1000)  # a segment of 300 bytes at 120
    path = tmp_path / "vmlinux"
    path.write_bytes(header + program + bytes(400))
    assert elf_extent(path, 520) == 420
    assert elf_extent(path, 100) == 264  # past its end already: the segments are not read
    path.write_bytes(header[:60])
    with pytest.raises(NotARecord, match="it ends inside its ELF header"):
        elf_extent(path, 60)
    path.write_bytes(b"MZ" + bytes(100))
    with pytest.raises(NotARecord, match="it is not an ELF file"):
        elf_extent(path, 102)


def elf_with_symbols(wide: bool, order: str, symbols: dict[str, int]) -> bytes:
    """An ELF file of either class and byte order whose symbol table holds `symbols` (name -> st_size), their names
    sharing tails in the string table as the linker's do."""
    strings = b"\0" + b"".join(
        name.encode() + b"\0"
        for name in symbols
        if not any(other != name and other.endswith(name) for other in symbols)
    )
    entries = [bytes(24 if wide else 16)]
    for name, size in symbols.items():
        at = strings.index(name.encode() + b"\0")
        entry = "IBBHQQ" if wide else "IIIBBH"
        fields = (at, 0x11, 0, 1, 0, size) if wide else (at, 0, size, 0x11, 0, 1)
        entries.append(struct.pack(order + entry, *fields))
    table = b"".join(entries)
    header_size, section_size = (64, 64) if wide else (52, 40)
    data = header_size + 3 * section_size
    layout = "IIQQQQIIQQ" if wide else "IIIIIIIIII"
    sections = (
        bytes(section_size)
        + struct.pack(order + layout, 0, 2, 0, 0, data + len(strings), len(table), 2, 1, 8, len(entries[0]))
        + struct.pack(order + layout, 0, 3, 0, 0, data, len(strings), 0, 0, 1, 0)
    )
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if order == "<" else 2, 1]) + bytes(9)
    if wide:
        header = struct.pack(order + "HHIQQQIHHHHHH", 2, 62, 1, 0, 0, header_size, 0, 64, 56, 0, 64, 3, 0)
    else:
        header = struct.pack(order + "HHIIIIIHHHHHH", 2, 4, 1, 0, 0, header_size, 0, 52, 32, 0, 40, 3, 0)
    return ident + header + sections + strings + table


@pytest.mark.parametrize(("wide", "order"), [(True, "<"), (False, ">"), (False, "<"), (True, ">")])
def test_a_symbol_s_size_is_read_from_the_symbol_table(tmp_path: Path, wide: bool, order: str) -> None:
    # m68k's and sh's boot_command_line: 256 bytes; a longer name ending in it shares its bytes.
    path = tmp_path / "vmlinux"
    path.write_bytes(elf_with_symbols(wide, order, {"saved_boot_command_line": 8, "boot_command_line": 256}))
    assert elf_symbol_size(path, "boot_command_line") == 256
    assert elf_symbol_size(path, "saved_boot_command_line") == 8
    assert elf_symbol_size(path, "command_line") is None  # a tail of both names, but no symbol's own


def test_a_symbol_size_of_what_is_no_elf_file_or_no_symbol_table_is_none(tmp_path: Path, object_file: Path) -> None:
    assert elf_symbol_size(object_file, "suite") == 264  # a real object: the C struct's size
    path = tmp_path / "image"
    path.write_bytes(b"MZ" + bytes(100))
    assert elf_symbol_size(path, "boot_command_line") is None
    assert elf_symbol_size(tmp_path / "missing", "boot_command_line") is None
