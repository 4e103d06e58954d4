"""membership: which suites a fragment's own kernel would hold, read from a union build. Kbuild's Makefiles are
evaluated by the real make on small fake trees, suite tables are read from objects gcc compiles here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pytest_kunit.kbuild.kbuildlists import MakeFailed, built_in, evaluate, write_autoconf
from pytest_kunit.kbuild.membership import (
    Unknown,
    before_build,
    differing,
    directories_naming,
    fixdep_symbols,
    suite_objects,
    suites_alone,
    unrepresentable,
)
from pytest_kunit.kbuild.suitenames import suite_names
from pytest_kunit.kbuild.suitetable import Opaque

CANDIDATES = ["lib/a.o", "lib/p1.o", "lib/p2.o", "lib/x.o", "foo/f.o", "foo/wrong.o", "foo/sub/s.o", "arch/x86/lib/y.o"]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Kbuild's shapes: conditional directories (and one inside one), a composite with conditional parts, an ifeq
    block, a Kbuild file read in preference to the Makefile beside it, an arch library the root lists through
    $(ARCH_LIB), and a recipe make must never run."""
    return write(
        tmp_path / "tree",
        {
            "Kbuild": "obj-y += lib/\nobj-$(CONFIG_FOO) += foo/\nobj-y += $(ARCH_LIB)\n",
            "lib/Makefile": (
                "ran:\n\ttouch $(srctree)/ran\n"
                "obj-y += a.o\nobj-$(CONFIG_BAR) += comp.o\ncomp-objs := p1.o\ncomp-$(CONFIG_BAZ) += p2.o\n"
                "ifeq ($(CONFIG_X),y)\nobj-y += x.o\nendif\n"
            ),
            "foo/Kbuild": "obj-y += f.o sub/\n",
            "foo/sub/Makefile": "obj-y += s.o\n",
            "foo/Makefile": "obj-y += wrong.o\n",
            "arch/x86/Makefile": "libs-y += arch/x86/lib/\n",
            "arch/x86/lib/Makefile": "obj-y += y.o\n",
            "include/kunit/test.h": "struct kunit_suite {\n\tchar name[256];\n\tvoid *cases;\n};\n",
        },
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, {"lib/a.o"}),
        (
            {"CONFIG_FOO": "y", "CONFIG_BAR": "y", "CONFIG_X": "y"},
            {"lib/a.o", "lib/p1.o", "lib/x.o", "foo/f.o", "foo/sub/s.o"},
        ),
        ({"CONFIG_BAR": "y", "CONFIG_BAZ": "y"}, {"lib/a.o", "lib/p1.o", "lib/p2.o"}),
        ({"CONFIG_FOO": "m", "CONFIG_BAR": "m", "CONFIG_X": "m"}, {"lib/a.o"}),
    ],
)
def test_built_in_follows_the_makefiles(tree: Path, tmp_path: Path, config: dict[str, str], expected: set[str]) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    got = built_in(tree, config, CANDIDATES, "x86", scratch, "config")
    assert got == expected | {"arch/x86/lib/y.o"}
    assert not (tree / "ran").exists()


def test_a_directory_listing_is_relative_to_the_root(tree: Path, tmp_path: Path) -> None:
    autoconf = write_autoconf({"CONFIG_BAR": "y", "CONFIG_N": "n"}, tmp_path / "c" / "auto.conf")
    assert autoconf.read_text() == "CONFIG_BAR=y\n"
    listing = evaluate(tree, "lib", autoconf, "x86", tmp_path)
    assert listing.objects == {"lib/a.o", "lib/comp.o", "lib/p1.o"}
    assert evaluate(tree, ".", autoconf, "x86", tmp_path).directories == {"lib"}
    assert evaluate(tree, "nowhere", autoconf, "x86", tmp_path).objects == set()


def test_a_makefile_make_cannot_read_is_an_error(tree: Path, tmp_path: Path) -> None:
    write(tree, {"lib/Makefile": "$(error no compiler here)\n"})
    autoconf = write_autoconf({}, tmp_path / "c" / "auto.conf")
    with pytest.raises(MakeFailed, match="no compiler here"):
        evaluate(tree, "lib", autoconf, "x86", tmp_path)


def test_a_makefile_that_would_remake_itself_fails_without_running_a_recipe(tree: Path, tmp_path: Path) -> None:
    """`make -n` still runs the recipes that remake an included makefile: none may run here."""
    rule = "$(srctree)/lib/extra.mk: FORCE\n\ttouch $(srctree)/ran\nFORCE:\n"
    write(tree, {"lib/Makefile": "include $(srctree)/lib/extra.mk\n" + rule, "lib/extra.mk": "obj-y += a.o\n"})
    autoconf = write_autoconf({}, tmp_path / "c" / "auto.conf")
    with pytest.raises(MakeFailed, match=r"extra\.mk"):
        evaluate(tree, "lib", autoconf, "x86", tmp_path)
    assert not (tree / "ran").exists()


def test_the_differing_symbols_count_unset_as_a_value() -> None:
    symbols = differing({"CONFIG_T": "y", "CONFIG_S": "y", "CONFIG_M": "m"}, {"CONFIG_S": "y", "CONFIG_M": "y"})
    assert symbols == {"CONFIG_T", "CONFIG_M"}


def test_a_fragment_asking_for_more_than_the_union_is_not_representable() -> None:
    union = {"CONFIG_A": "y", "CONFIG_B": "m", "CONFIG_C": "y", "CONFIG_N": "8"}
    assert unrepresentable(union, {"CONFIG_A": "y", "CONFIG_B": "m", "CONFIG_C": "m", "CONFIG_N": "8"}) == []
    assert unrepresentable(union, {"CONFIG_B": "y", "CONFIG_D": "m", "CONFIG_N": "16", "CONFIG_S": '""'}) == [
        "CONFIG_B=y (union: m)",
        "CONFIG_D=m (union: not set)",
        "CONFIG_N=16 (union: 8)",
        'CONFIG_S="" (union: not set)',
    ]


def suites_c(*names: str, conditional: str = "") -> str:
    """A test source laid out as KUnit's: suites whose first field is the name, a table of pointers to them; the
    suite `conditional` is registered only #ifdef CONFIG_T."""
    lines = ["#include <generated/autoconf.h>", "struct kunit_suite { char name[256]; void *cases; };"]
    lines += [f'static struct kunit_suite s_{n} = {{ .name = "{n}" }};' for n in (*names, conditional) if n]
    table = 'static struct kunit_suite *t_{0}[] __attribute__((used, section(".kunit_test_suites"))) = {{ {1} }};'
    lines.append(table.format("all", ", ".join(f"&s_{n}" for n in names)))
    if conditional:
        lines += ["#ifdef CONFIG_T", table.format("t", f"&s_{conditional}"), "#endif"]
    return "\n".join(lines) + "\n"


def autoconf_header(config: dict[str, str]) -> str:
    return "".join(f"#define {symbol} 1\n" for symbol, value in sorted(config.items()) if value == "y")


def fixdep(dependency_file: Path, build: Path) -> str:
    """The deps_ list Kbuild's fixdep writes from gcc's: each file, then each CONFIG_ symbol any of them names (but
    autoconf.h, which defines them all), as `$(wildcard include/config/X)`."""
    files = dependency_file.read_text().split(":", 1)[1].replace("\\\n", " ").split()
    symbols: dict[str, None] = {}
    for name in files:
        if not name.endswith("autoconf.h"):
            text = (build / name).read_text() if not Path(name).is_absolute() else Path(name).read_text()
            symbols.update((token.removesuffix("_MODULE"), None) for token in re.findall(r"CONFIG_(\w+)", text))
    lines = [*files, *(f"$(wildcard include/config/{symbol})" for symbol in symbols)]
    return " \\\n".join(f"  {line}" for line in lines) + " \\\n"


def kbuild_object(build: Path, tree: Path, path: str, source: str, union: dict[str, str]) -> None:
    """Compile `source` into build/`path` as Kbuild would, with the union's autoconf.h, and write its .cmd file with
    fixdep's dependency list."""
    directory, name = path.rsplit("/", 1)
    c_file = tree / path.replace(".o", ".c")
    write(tree, {str(c_file.relative_to(tree)): source})
    write(build, {"include/generated/autoconf.h": autoconf_header(union)})
    command = f"gcc -Wp,-MMD,{directory}/.{name}.d -I./include -I{tree}/include -c -o {path} {c_file}"
    (build / directory).mkdir(parents=True, exist_ok=True)
    subprocess.run(command, shell=True, cwd=build, check=True)
    deps = fixdep(build / directory / f".{name}.d", build)
    cmd = f"cmd_{path} := {command}\n\nsource_{path} := {c_file}\n\ndeps_{path} := \\\n{deps}\n{path}: $(deps_{path})\n"
    (build / directory / f".{name}.cmd").write_text(cmd)


@pytest.fixture
def build(tree: Path, tmp_path: Path) -> Path:
    """A union build (CONFIG_T and CONFIG_X set) whose thin vmlinux.a holds lib/a.o (two suites, a third one
    #ifdef CONFIG_T), lib/x.o (one suite, linked only with CONFIG_X) and lib/plain.o (no suite table)."""
    build = tmp_path / "build"
    (build / "arch/x86").mkdir(parents=True)
    union = {"CONFIG_T": "y", "CONFIG_X": "y"}
    kbuild_object(build, tree, "lib/a.o", suites_c("one", "two", conditional="three"), union)
    kbuild_object(build, tree, "lib/x.o", suites_c("ex"), union)
    kbuild_object(build, tree, "lib/plain.o", "int plain;\n", union)
    subprocess.run(["ar", "rcT", "vmlinux.a", "lib/a.o", "lib/x.o", "lib/plain.o"], cwd=build, check=True)
    return build


def test_suite_names_are_read_from_the_table_in_order(build: Path) -> None:
    assert suite_names(build / "lib/a.o") == ("one", "two", "three")
    assert suite_names(build / "lib/plain.o") == ()
    assert [(item.path, item.suites) for item in suite_objects(build)] == [
        ("lib/a.o", ("one", "two", "three")),
        ("lib/x.o", ("ex",)),
    ]


def test_init_suites_have_a_table_of_their_own(build: Path, tree: Path) -> None:
    """6.12 registers suites that run during boot in .kunit_init_test_suites: they are suites too."""
    init_table = suites_c("early").replace(".kunit_test_suites", ".kunit_init_test_suites").replace("t_all", "t_init")
    source = suites_c("late") + "\n".join(init_table.splitlines()[2:]) + "\n"
    kbuild_object(build, tree, "lib/a.o", source, {})
    assert suite_names(build / "lib/a.o") == ("late", "early")


def test_a_table_entry_that_is_no_pointer_is_opaque(build: Path, tree: Path) -> None:
    source = suites_c("one").replace("{ &s_one }", "{ &s_one, 0 }")
    kbuild_object(build, tree, "lib/a.o", source, {})
    with pytest.raises(Opaque, match="not an array of relocated pointers"):
        suite_names(build / "lib/a.o")
    with pytest.raises(Unknown, match=r"lib/a\.o"):
        suite_objects(build)


UNION = {"CONFIG_T": "y", "CONFIG_X": "y"}


def test_alone_equal_to_union_holds_every_suite(tree: Path, build: Path, tmp_path: Path) -> None:
    assert suites_alone(tree, build, UNION, UNION, tmp_path / "s") == {"one", "two", "three", "ex"}


def test_fixdep_s_record_is_what_an_object_tests(build: Path) -> None:
    assert fixdep_symbols(build, "lib/a.o") == {"CONFIG_T"}
    assert fixdep_symbols(build, "lib/x.o") == set()


def test_a_suite_compiled_from_a_source_testing_a_differing_symbol_is_unknown(
    tree: Path, build: Path, tmp_path: Path
) -> None:
    """lib/a.o registers a third suite only with CONFIG_T: a kernel without it would run another set of suites
    (here; in general, another code)."""
    with pytest.raises(
        Unknown, match=r"lib/a\.o \(suite one, two, three\) is compiled from sources that test CONFIG_T"
    ):
        suites_alone(tree, build, UNION, {"CONFIG_X": "y"}, tmp_path / "s")


def test_an_object_that_registers_a_suite_only_in_the_union_is_not_the_fragment_s(
    tree: Path, build: Path, tmp_path: Path
) -> None:
    """KUnit's executor includes its own tests only with CONFIG_KUNIT_TEST: compiled under a fragment without it, the
    object registers nothing, so none of the fragment's suites comes from it, whatever else it tests."""
    executor = "#include <generated/autoconf.h>\nint executor;\n#ifdef CONFIG_T\n" + suites_c("etest") + "#endif\n"
    kbuild_object(build, tree, "lib/x.o", executor, UNION)
    lib = tree / "lib/Makefile"
    lib.write_text(lib.read_text().replace("ifeq ($(CONFIG_X),y)\nobj-y += x.o\nendif\n", "obj-y += x.o\n"))
    assert suites_alone(tree, build, UNION, UNION, tmp_path / "s1") == {"one", "two", "three", "etest"}
    assert (tmp_path / "s1/objects").exists() is False  # nothing differs: nothing compiled again
    with pytest.raises(Unknown, match=r"lib/a\.o"):  # a.o still registers one and two without T
        suites_alone(tree, build, UNION, {"CONFIG_X": "y"}, tmp_path / "s2")
    kbuild_object(build, tree, "lib/a.o", suites_c("one", "two"), UNION)  # now a.o tests nothing
    assert suites_alone(tree, build, UNION, {"CONFIG_X": "y"}, tmp_path / "s3") == {"one", "two"}
    assert (tmp_path / "s3/objects/lib/x.o").exists()


def test_a_header_s_conditional_counts_as_the_object_s_own(tree: Path, build: Path, tmp_path: Path) -> None:
    """The rule's blind spot before: a symbol tested only in a header the suite's source includes (and a negative
    condition at that)."""
    write(tree, {"include/quirk.h": "#ifndef CONFIG_Q\nstatic const int quirk = 1;\n#endif\n"})
    kbuild_object(build, tree, "lib/x.o", '#include "quirk.h"\n' + suites_c("ex"), UNION)
    union = UNION | {"CONFIG_Q": "y"}
    assert suites_alone(tree, build, union, union, tmp_path / "s1") == {"one", "two", "three", "ex"}
    with pytest.raises(Unknown, match=r"lib/x\.o \(suite ex\) is compiled from sources that test CONFIG_Q"):
        suites_alone(tree, build, union, UNION, tmp_path / "s2")


def test_an_object_the_fragment_does_not_link_is_left_out_whatever_it_tests(
    tree: Path, build: Path, tmp_path: Path
) -> None:
    plain = tree / "lib/Makefile"
    plain.write_text(
        plain.read_text().replace("ifeq ($(CONFIG_X),y)\nobj-y += x.o\nendif\n", "obj-$(CONFIG_X) += x.o\n")
    )
    assert suites_alone(tree, build, UNION, {"CONFIG_T": "y"}, tmp_path / "s") == {"one", "two", "three"}


def test_a_positive_makefile_conditional_is_evaluated_not_refused(tree: Path, build: Path, tmp_path: Path) -> None:
    """lib/Makefile's `ifeq ($(CONFIG_X),y)` lists x.o only with X: the fragment without X lists less, not more."""
    assert directories_naming(tree, {"CONFIG_X"}) == ["lib"]
    assert suites_alone(tree, build, UNION, {"CONFIG_T": "y"}, tmp_path / "s") == {"one", "two", "three"}


def test_an_object_only_the_fragment_s_kernel_links_is_unknown(tree: Path, build: Path, tmp_path: Path) -> None:
    """An `else` (or ifneq) links a suite only without the symbol: the union's objects cannot show it."""
    makefile = tree / "lib/Makefile"
    makefile.write_text(
        makefile.read_text().replace("obj-y += x.o\nendif", "obj-y += x.o\nelse\nobj-y += only.o\nendif")
    )
    with pytest.raises(Unknown, match=r"would link what the union's does not: lib/only\.o"):
        suites_alone(tree, build, UNION, {"CONFIG_T": "y"}, tmp_path / "s")


def test_an_object_the_makefiles_do_not_link_in_the_union_is_unknown(tree: Path, build: Path, tmp_path: Path) -> None:
    kbuild_object(build, tree, "lib/hidden.o", suites_c("hidden"), UNION)
    subprocess.run(["ar", "rcT", "vmlinux.a", "lib/hidden.o"], cwd=build, check=True)
    with pytest.raises(Unknown, match=r"do not link lib/hidden\.o into the union kernel"):
        suites_alone(tree, build, UNION, UNION, tmp_path / "s")


def test_a_tree_whose_suites_do_not_start_with_their_name_is_unknown(tree: Path, build: Path, tmp_path: Path) -> None:
    """The suite tables' names are read as struct kunit_suite's first member: a tree defining it otherwise is not
    read by position."""
    (tree / "include/kunit/test.h").write_text("struct kunit_suite {\n\tconst char *name;\n};\n")
    with pytest.raises(Unknown, match=r"does not define struct kunit_suite as starting with char name\[256\]"):
        suites_alone(tree, build, UNION, UNION, tmp_path / "s")


def test_a_fragment_the_union_cannot_stand_for_is_unknown(tree: Path, build: Path, tmp_path: Path) -> None:
    with pytest.raises(Unknown, match="CONFIG_FOO=y"):
        suites_alone(tree, build, UNION, {"CONFIG_FOO": "y"}, tmp_path / "s")


def test_before_a_build_a_setting_the_union_lacks_or_other_flags_for_every_object_rule_the_union_out() -> None:
    kunit = {"CONFIG_KUNIT": "y", "CONFIG_INLINE_SPIN_UNLOCK_IRQ": "y"}
    flags = {"KBUILD_CFLAGS": "-O2", "CFLAGS_UBSAN": ""}
    assert before_build(kunit | {"CONFIG_DRM": "y"}, kunit, flags, flags) == ""  # asks for less, compiled alike
    lockdep = before_build({"CONFIG_KUNIT": "y", "CONFIG_LOCKDEP": "y"}, kunit, flags, flags)
    assert lockdep.endswith("cannot stand for this configuration: CONFIG_INLINE_SPIN_UNLOCK_IRQ=y (union: not set)")
    ubsan = flags | {"CFLAGS_UBSAN": "-fsanitize=shift"}
    assert "other flags (CFLAGS_UBSAN as make" in before_build(kunit | {"CONFIG_UBSAN": "y"}, kunit, ubsan, flags)
