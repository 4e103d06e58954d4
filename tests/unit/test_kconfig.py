"""kunitconfig fragments: parsing, merging, and validation against a .config and a (fake) Kconfig tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit.errors import ConfigError
from pytest_kunit.kernel.kconfig import (
    Dropped,
    Entry,
    Fragment,
    check_fragment,
    dropped_symbols,
    kconfig_definitions,
    parse_fragment,
    read_dotconfig,
    read_fragment,
)


def definition(tree: Path, name: str) -> tuple[str, ...] | None:
    """The needs of symbol `name` in the tree's Kconfig files, or None if it is not defined."""
    return kconfig_definitions(tree, {name}).get(name)


def values(fragment: Fragment) -> list[tuple[str, str]]:
    return [(entry.symbol, entry.value) for entry in fragment.entries]


# --- parsing -------------------------------------------------------------------------------------------------------


def test_parse_values_of_every_kind() -> None:
    text = "\n".join(
        [
            "# The KUnit framework",
            "",
            "CONFIG_KUNIT=y",
            "CONFIG_MODULE_TEST=m",
            "CONFIG_OFF=n",
            "# CONFIG_DEBUG_STUFF is not set",
            "CONFIG_NUMBER=42",
            "CONFIG_NEGATIVE=-7",
            "CONFIG_HEX=0x1F",
            "CONFIG_HEX_UPPER=0XdeadBEEF",
            'CONFIG_CMDLINE="console=ttyS0 quiet"',
            'CONFIG_QUOTED="say \\"hi\\" \\\\ bye"',
            'CONFIG_EMPTY=""',
            "   CONFIG_INDENTED=y   ",
        ]
    )
    fragment = parse_fragment(text, "k.kunitconfig")
    assert values(fragment) == [
        ("CONFIG_KUNIT", "y"),
        ("CONFIG_MODULE_TEST", "m"),
        ("CONFIG_OFF", "n"),
        ("CONFIG_DEBUG_STUFF", "n"),
        ("CONFIG_NUMBER", "42"),
        ("CONFIG_NEGATIVE", "-7"),
        ("CONFIG_HEX", "0x1F"),
        ("CONFIG_HEX_UPPER", "0XdeadBEEF"),
        ("CONFIG_CMDLINE", '"console=ttyS0 quiet"'),
        ("CONFIG_QUOTED", '"say \\"hi\\" \\\\ bye"'),
        ("CONFIG_EMPTY", '""'),
        ("CONFIG_INDENTED", "y"),
    ]
    assert fragment.entries[0].origin == "k.kunitconfig:3"
    assert fragment.entries[3] == Entry("CONFIG_DEBUG_STUFF", "n", "k.kunitconfig:6")
    assert fragment.entries[-1].origin == "k.kunitconfig:14"


def test_not_set_and_n_are_written_back_as_not_set() -> None:
    fragment = parse_fragment('CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=n\nCONFIG_S="x y"\nCONFIG_N=3\n', "f")
    assert fragment.text() == 'CONFIG_A=y\n# CONFIG_B is not set\n# CONFIG_C is not set\nCONFIG_S="x y"\nCONFIG_N=3\n'


def test_later_line_wins_within_a_fragment() -> None:
    fragment = parse_fragment("CONFIG_A=y\nCONFIG_B=y\nCONFIG_A=m\n# CONFIG_B is not set\n", "f.kunitconfig")
    assert fragment.entries == (
        Entry("CONFIG_A", "m", "f.kunitconfig:3"),
        Entry("CONFIG_B", "n", "f.kunitconfig:4"),
    )


def test_comments_blank_lines_and_crlf() -> None:
    fragment = parse_fragment("# comment\r\n\r\n#CONFIG_NOSPACE is not set\r\nCONFIG_A=y\r\n", "f")
    # "#CONFIG_X is not set" (no space) is a comment, as in Kconfig's own reader.
    assert fragment.entries == (Entry("CONFIG_A", "y", "f:4"),)


@pytest.mark.parametrize(
    "line",
    [
        "CONFIG_FOO",
        "FOO=y",
        "CONFIG_FOO=yes",
        "CONFIG_FOO=Y",
        "CONFIG_FOO = y",
        "CONFIG_FOO=",
        'CONFIG_FOO="unterminated',
        'CONFIG_FOO="a"b"',
        "CONFIG_FOO=0x",
        "CONFIG_FOO=1.5",
        "CONFIG_FOO=y # trailing comment",
        "CONFIG-FOO=y",
        "config FOO",
    ],
)
def test_malformed_line_names_file_and_line(line: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_fragment(f"CONFIG_OK=y\n# fine\n{line}\nCONFIG_ALSO_OK=m\n", "suites/net.kunitconfig")
    error = raised.value
    assert f"suites/net.kunitconfig:3: {line.strip()!r} is not" in error.what
    assert error.what.count("suites/net.kunitconfig:") == 1
    assert "CONFIG_NAME=value" in error.remedy
    assert error.render().startswith("Malformed kunitconfig line(s):")


def test_every_malformed_line_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_fragment("bad one\nCONFIG_OK=y\nCONFIG_X=maybe\n", "f.kunitconfig")
    assert raised.value.what == (
        "Malformed kunitconfig line(s):\n"
        "  f.kunitconfig:1: 'bad one' is not CONFIG_NAME=y|m|n|number|\"string\"\n"
        "  f.kunitconfig:3: 'CONFIG_X=maybe' is not CONFIG_NAME=y|m|n|number|\"string\""
    )


def test_read_fragment_uses_the_path_as_origin(tmp_path: Path) -> None:
    path = tmp_path / "a.kunitconfig"
    path.write_text("CONFIG_KUNIT=y\nnonsense\n")
    with pytest.raises(ConfigError) as raised:
        read_fragment(path)
    assert f"{path}:2: 'nonsense'" in raised.value.what
    path.write_text("CONFIG_KUNIT=y\n")
    assert read_fragment(path).entries == (Entry("CONFIG_KUNIT", "y", f"{path}:1"),)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# pytest-kunit: manual\n"])
def test_fragment_that_sets_nothing_is_refused_by_name(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.kunitconfig"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        read_fragment(path)
    assert raised.value.what == f"{path} sets no CONFIG_ option: its kernel would hold no test."


def test_binary_fragment_is_refused_without_echoing_it(tmp_path: Path) -> None:
    path = tmp_path / "x.kunitconfig"
    path.write_bytes(bytes(range(256)) * 2000)
    with pytest.raises(ConfigError) as raised:
        read_fragment(path)
    assert raised.value.render().startswith(f"{path} is not a kunitconfig: it holds binary data.")
    assert len(raised.value.render()) < 400


def test_many_malformed_lines_are_echoed_only_in_part() -> None:
    text = "".join(f"line {number} " + "x" * 1000 + "\n" for number in range(1, 501))
    with pytest.raises(ConfigError) as raised:
        parse_fragment(text, "big.kunitconfig")
    lines = raised.value.what.splitlines()
    assert len(lines) == 7  # the headline, five bad lines, the count
    assert lines[1].startswith("  big.kunitconfig:1: 'line 1 xxx") and "x..." in lines[1] and len(lines[1]) < 160
    assert lines[-1] == "  ... and 495 more malformed lines"


# --- merging -------------------------------------------------------------------------------------------------------


def test_merge_right_hand_side_wins_and_keeps_first_position() -> None:
    base = parse_fragment("CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=1\n", "base")
    extra = parse_fragment("# CONFIG_B is not set\nCONFIG_D=m\nCONFIG_C=2\n", "extra")
    merged = base + extra
    assert merged.entries == (
        Entry("CONFIG_A", "y", "base:1"),
        Entry("CONFIG_B", "n", "extra:1"),
        Entry("CONFIG_C", "2", "extra:3"),
        Entry("CONFIG_D", "m", "extra:2"),
    )
    reverse = extra + base
    assert values(reverse) == [("CONFIG_B", "y"), ("CONFIG_D", "m"), ("CONFIG_C", "1"), ("CONFIG_A", "y")]
    assert (base + Fragment(())).entries == base.entries


# --- validation ----------------------------------------------------------------------------------------------------

KCONFIG = """\
menu "Fake test options"

config KUNIT
    tristate "KUnit"
    help
      The test framework.

config KUNIT_TEST
    tristate "KUnit tests"
    depends on KUNIT
    select STACKTRACE

config NEEDS_PCI
    bool "Needs PCI"
    depends on PCI && !UML
    depends on KUNIT=y
    default y

menuconfig NET_TESTS
    bool "network tests"
    depends on NET

if NET_TESTS
config NET_INNER
    bool "inner"
    imply KUNIT
endif

config STRINGY
    string "a string"
    default "abc"

config PCI
    bool

endmenu
""".replace("    ", "\t")  # Kconfig files indent with tabs


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "Kconfig").write_text('source "lib/Kconfig.debug"\n')
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "Kconfig.debug").write_text(KCONFIG)
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers" / "Kconfig").write_text("config OTHER\n\tbool\n\tdepends on KUNIT\n\tdepends on KUNIT\n")
    # Kconfig files inside .git are never read.
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "Kconfig").write_text("config GHOST\n\tdepends on NOTHING\n")
    return tmp_path


def test_kconfig_definition(tree: Path) -> None:
    assert definition(tree, "KUNIT") == ()
    assert definition(tree, "KUNIT_TEST") == ("depends on KUNIT",)
    assert definition(tree, "NEEDS_PCI") == ("depends on PCI && !UML", "depends on KUNIT=y")
    assert definition(tree, "NET_TESTS") == ("depends on NET",)
    assert definition(tree, "NET_INNER") == ("if NET_TESTS (lib/Kconfig.debug:23)",)
    assert definition(tree, "OTHER") == ("depends on KUNIT",)
    assert definition(tree, "GHOST") is None
    assert definition(tree, "NO_SUCH_SYMBOL") is None
    assert definition(tree, "KUNIT_TES") is None


DOTCONFIG = """\
#
# Automatically generated file; DO NOT EDIT.
#
CONFIG_KUNIT=y
CONFIG_KUNIT_TEST=m
# CONFIG_NEEDS_PCI is not set
CONFIG_STRINGY="abc"
CONFIG_NR_CPUS=8
"""


def test_read_dotconfig() -> None:
    assert read_dotconfig(DOTCONFIG) == {
        "CONFIG_KUNIT": "y",
        "CONFIG_KUNIT_TEST": "m",
        "CONFIG_STRINGY": '"abc"',
        "CONFIG_NR_CPUS": "8",
    }


def test_check_fragment_passes_when_everything_holds(tree: Path) -> None:
    fragment = parse_fragment(
        'CONFIG_KUNIT=y\nCONFIG_KUNIT_TEST=m\n# CONFIG_NEEDS_PCI is not set\nCONFIG_STRINGY="abc"\n'
        "CONFIG_NR_CPUS=8\n# CONFIG_NEVER_MENTIONED is not set\n",
        "ok.kunitconfig",
    )
    check_fragment(fragment, DOTCONFIG, tree)
    assert dropped_symbols(fragment, read_dotconfig(DOTCONFIG), tree) == []


def test_check_fragment_reports_dropped_and_unknown_symbols(tree: Path) -> None:
    fragment = parse_fragment(
        "CONFIG_KUNIT=y\n"
        "CONFIG_KUNIT_TEST=y\n"
        "CONFIG_NEEDS_PCI=y\n"
        "CONFIG_NOT_A_SYMBOL=y\n"
        'CONFIG_STRINGY="xyz"\n'
        "# CONFIG_KUNIT is not set\n",
        "suites/pci.kunitconfig",
    )
    dropped = dropped_symbols(fragment, read_dotconfig(DOTCONFIG), tree)
    assert dropped == [
        Dropped(Entry("CONFIG_KUNIT", "n", "suites/pci.kunitconfig:6"), "y", True, ()),
        Dropped(Entry("CONFIG_KUNIT_TEST", "y", "suites/pci.kunitconfig:2"), "m", True, ("depends on KUNIT",)),
        Dropped(
            Entry("CONFIG_NEEDS_PCI", "y", "suites/pci.kunitconfig:3"),
            "n",
            True,
            ("depends on PCI && !UML", "depends on KUNIT=y"),
            ("PCI",),
        ),
        Dropped(Entry("CONFIG_NOT_A_SYMBOL", "y", "suites/pci.kunitconfig:4"), "n", False, ()),
        Dropped(Entry("CONFIG_STRINGY", '"xyz"', "suites/pci.kunitconfig:5"), '"abc"', True, ()),
    ]
    with pytest.raises(ConfigError) as raised:
        check_fragment(fragment, DOTCONFIG, tree)
    assert raised.value.what.splitlines() == [
        "The kernel configuration does not hold what the kunitconfig asks for:",
        "  CONFIG_KUNIT=n (suites/pci.kunitconfig:6): is y after olddefconfig",
        "  CONFIG_KUNIT_TEST=y (suites/pci.kunitconfig:2): is m after olddefconfig; Kconfig: depends on KUNIT",
        "  CONFIG_NEEDS_PCI=y (suites/pci.kunitconfig:3): is not set after olddefconfig; "
        "Kconfig: depends on PCI && !UML; depends on KUNIT=y; not set: CONFIG_PCI",
        "  CONFIG_NOT_A_SYMBOL=y (suites/pci.kunitconfig:4): no such symbol in this kernel tree",
        '  CONFIG_STRINGY="xyz" (suites/pci.kunitconfig:5): is "abc" after olddefconfig',
    ]
    assert "depend on" in raised.value.remedy


def test_symbol_defined_in_several_files_collects_every_dependency(tree: Path) -> None:
    (tree / "Kconfig").write_text('source "lib/Kconfig.debug"\nsource "arch/Kconfig"\n')
    (tree / "arch").mkdir()
    (tree / "arch" / "Kconfig").write_text("config NEEDS_PCI\n\tdepends on X86\n")
    assert sorted(definition(tree, "NEEDS_PCI") or ()) == [
        "depends on KUNIT=y",
        "depends on PCI && !UML",
        "depends on X86",
    ]


def test_another_architectures_definition_is_not_this_builds(tmp_path: Path) -> None:
    """riscv's EFI and arm64's: a riscv build reads only arch/riscv/Kconfig, so only its definition explains."""
    (tmp_path / "Kconfig").write_text('source "arch/$(SRCARCH)/Kconfig"\n')
    for arch, needs, more in (("riscv", "OF && !XIP_KERNEL", ""), ("arm64", "ACPI", "config ONLY_ARM64\n")):
        (tmp_path / "arch" / arch).mkdir(parents=True)
        (tmp_path / "arch" / arch / "Kconfig").write_text(f"config EFI\n{more}\tbool\n\tdepends on {needs}\n")
    walked = kconfig_definitions(tmp_path, {"EFI", "ONLY_ARM64"}, "riscv")
    assert walked["EFI"] == ("depends on OF && !XIP_KERNEL",)
    # A symbol the build's own files never define still says what its definitions elsewhere need.
    assert walked["ONLY_ARM64"] == ("depends on ACPI",)


def test_a_symbol_asked_off_but_selected_names_what_selects_it(tmp_path: Path) -> None:
    (tmp_path / "Kconfig").write_text(
        'config EFI\n\tbool "UEFI"\n\tdepends on OF\n\tdefault y\n\n'
        "config PORTABLE\n\tbool\n\tdefault !NONPORTABLE\n\tselect EFI\n\tselect OF if MMU\n"
    )
    fragment = parse_fragment("# CONFIG_EFI is not set\nCONFIG_OF=n\n", "uefi.kunitconfig")
    efi, of = dropped_symbols(fragment, {"CONFIG_EFI": "y", "CONFIG_OF": "y", "CONFIG_PORTABLE": "y"}, tmp_path)
    assert efi.describe() == (
        "CONFIG_EFI=n (uefi.kunitconfig:1): is y after olddefconfig; Kconfig: selected by PORTABLE (Kconfig:6); "
        "depends on OF"
    )
    assert of.depends == ("selected by PORTABLE (Kconfig:6) if MMU",)


def test_enclosing_if_and_menu_blocks_of_the_sourcing_file_are_needs(tmp_path: Path) -> None:
    """fs/Kconfig sources fs/ext4/Kconfig inside `if BLOCK`: EXT4_FS needs BLOCK though its own file never says so."""
    (tmp_path / "Kconfig").write_text('source "fs/Kconfig"\nsource "arch/$(SRCARCH)/Kconfig"\n')
    (tmp_path / "fs" / "ext4").mkdir(parents=True)
    (tmp_path / "fs" / "Kconfig").write_text(
        'menu "File systems"\n\tdepends on MULTIUSER\n\nif BLOCK\nsource "fs/ext4/Kconfig"\nendif # BLOCK\n'
        "config AFTER\n\tbool\nendmenu\n"
    )
    (tmp_path / "fs" / "ext4" / "Kconfig").write_text(
        'config EXT4_FS\n\ttristate "ext4"\n\tselect CRC16\n\thelp\n\t  The ext4 file system.\n\n'
        '\t  if you say Y here, a help line starts with a keyword\n\t    menu "and this one" too.\n'
    )
    (tmp_path / "arch" / "x86").mkdir(parents=True)
    (tmp_path / "arch" / "x86" / "Kconfig").write_text("config X86_ONLY\n\tbool\n\tdepends on PCI\n")
    assert definition(tmp_path, "EXT4_FS") == (
        "menu depends on MULTIUSER (fs/Kconfig:1)",
        "if BLOCK (fs/Kconfig:4)",
    )
    assert definition(tmp_path, "AFTER") == ("menu depends on MULTIUSER (fs/Kconfig:1)",)
    assert definition(tmp_path, "X86_ONLY") == ("depends on PCI",)
    fragment = parse_fragment("CONFIG_EXT4_FS=y\n", "ext4.kunitconfig")
    (dropped,) = dropped_symbols(fragment, {"CONFIG_MULTIUSER": "y"}, tmp_path)
    assert dropped.unmet == ("BLOCK",)
    assert dropped.describe() == (
        "CONFIG_EXT4_FS=y (ext4.kunitconfig:1): is not set after olddefconfig; Kconfig: menu depends on MULTIUSER "
        "(fs/Kconfig:1); if BLOCK (fs/Kconfig:4); not set: CONFIG_BLOCK"
    )


def test_help_text_is_not_a_dependency(tmp_path: Path) -> None:
    (tmp_path / "Kconfig").write_text(
        'config CHATTY\n\tbool "chatty"\n\tdepends on REAL\n\thelp\n\t  Whether this works\n'
        "\t  depends on your hardware.\n"
    )
    assert definition(tmp_path, "CHATTY") == ("depends on REAL",)


# --- hints: a misspelt name, another architecture's symbol ----------------------------------------------------------


def test_a_misspelt_symbol_names_the_nearest_defined_ones(tree: Path) -> None:
    fragment = parse_fragment('CONFIG_KUNIT_TESTS=y\nCONFIG_stringy="x"\nCONFIG_ZZZZ=y\n', "x.kunitconfig")
    tests, stringy, nothing = dropped_symbols(fragment, read_dotconfig(DOTCONFIG), tree)
    assert tests.describe() == (
        "CONFIG_KUNIT_TESTS=y (x.kunitconfig:1): no such symbol in this kernel tree; did you mean CONFIG_KUNIT_TEST "
        "or CONFIG_NET_TESTS?"
    )
    assert stringy.hint == "did you mean CONFIG_STRINGY?"
    assert nothing.hint == ""


@pytest.fixture
def arches(tmp_path: Path) -> Path:
    """A tree whose top Kconfig sources the build's own arch/$(SRCARCH)/Kconfig, as a kernel's does."""
    (tmp_path / "Kconfig").write_text('source "arch/$(SRCARCH)/Kconfig"\nsource "lib/Kconfig"\n')
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "Kconfig").write_text("config NEEDS_ARM64\n\tbool\n\tdepends on ARM64\n")
    for arch, own in (("x86", "X86"), ("arm64", "ARM64"), ("riscv", "RISCV")):
        (tmp_path / "arch" / arch).mkdir(parents=True)
        (tmp_path / "arch" / arch / "Kconfig").write_text(f"config {own}\n\tdef_bool y\n\nconfig {own}_ONLY\n\tbool\n")
    return tmp_path


def test_a_symbol_only_another_architecture_defines_names_it(arches: Path) -> None:
    fragment = parse_fragment("CONFIG_ARM64_ONLY=y\nCONFIG_RISCV_ONLY=y\n", "x.kunitconfig")
    arm64, riscv = dropped_symbols(fragment, {"CONFIG_X86": "y"}, arches, "x86")
    assert arm64.hint == (
        "CONFIG_ARM64_ONLY is defined only for arm64 (arch/arm64/Kconfig:4), not arch/x86: --kunit-arch=arm64"
    )
    assert riscv.describe().endswith(
        "defined only for riscv (arch/riscv/Kconfig:4), not arch/x86: --kunit-arch=riscv64"
    )


def test_a_symbol_depending_on_another_architecture_names_it(arches: Path) -> None:
    (dropped,) = dropped_symbols(parse_fragment("CONFIG_NEEDS_ARM64=y\n", "x"), {"CONFIG_X86": "y"}, arches, "x86")
    assert dropped.unmet == ("ARM64",)
    assert (
        dropped.hint
        == "CONFIG_ARM64 is defined only for arm64 (arch/arm64/Kconfig:1), not arch/x86: --kunit-arch=arm64"
    )
    # Built for arm64, the same symbol is the build's own: no architecture to name.
    (own,) = dropped_symbols(parse_fragment("CONFIG_NEEDS_ARM64=y\n", "x"), {}, arches, "arm64")
    assert own.hint == ""
