"""Which edits the link-only build takes (linkonly.plan), on a build directory laid out as Kbuild's: thin archives
naming objects, each object with its `.cmd` record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES
from pytest_kunit.kernel.linkonly import Plan, listing, plan, snapshot
from pytest_kunit.kernel.makerun import Make

EXAMPLE = "lib/kunit/kunit-example-test"


def thin_archive(path: Path, members: list[str]) -> None:
    """A GNU thin archive as `ar cDPrST` writes it: a long-name table, then one header per member (no contents)."""

    def header(name: str, size: int) -> bytes:
        return f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()

    table = b"".join(member.encode() + b"/\n" for member in members)
    entries, offset = [], 0
    for member in members:
        entries.append(header(f"/{offset}", 0))
        offset += len(member) + 2
    padding = b"\n" if len(table) % 2 else b""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"!<thin>\n" + header("//", len(table)) + table + padding + b"".join(entries))


class Tree:
    """A source tree and its build directory: each object compiled from its source, with the `.cmd` Kbuild writes."""

    def __init__(self, root: Path) -> None:
        self.src, self.build = root / "src", root / "build"
        self.src.mkdir()
        self.build.mkdir()
        self.linked: list[str] = []
        self.listed: dict[str, list[str]] = {}  # the source directories' entries the last build recorded

    def compiled(self, source: str, *reads: str, linked: bool = True) -> str:
        (self.src / source).parent.mkdir(parents=True, exist_ok=True)
        (self.src / source).write_text("int x;\n")
        obj = os.path.splitext(source)[0] + ".o"
        (self.build / obj).parent.mkdir(parents=True, exist_ok=True)
        (self.build / obj).write_bytes(b"\x7fELF")
        deps = "".join(f"  {path} \\\n" for path in (self.src / source, *reads))
        record = f"source_{obj} := {self.src / source}\n\ndeps_{obj} := \\\n{deps}\n{obj}: $(deps_{obj})\n"
        directory, name = os.path.split(obj)
        (self.build / directory / f".{name}.cmd").write_text(record)
        if linked:
            self.linked.append(obj)
        return str(self.src / source)

    def plan(self, *edits: str, linkable: bool = True) -> Plan:
        thin_archive(self.build / "vmlinux.a", self.linked)
        now = {"environment": "same", "listing": {}} if linkable else {}
        before = {"environment": "same", "listing": self.listed}
        return plan(self.src, self.build, [str(self.src / edit) for edit in edits], before, now)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    built = Tree(tmp_path)
    built.compiled(f"{EXAMPLE}.c")
    built.compiled("lib/kunit/test.c", str(built.src / "include/kunit/test.h"))
    built.compiled("arch/x86/kernel/head_64.S")
    built.compiled("drivers/foo/foo.c", linked=False)  # a module
    (built.src / "include/kunit").mkdir(parents=True)
    (built.src / "include/kunit/test.h").write_text("")
    return built


def test_edited_sources_of_vmlinux_objects_are_compiled_alone(tree: Tree) -> None:
    assert tree.plan(f"{EXAMPLE}.c") == Plan((f"{EXAMPLE}.o",))
    assert tree.plan("lib/kunit/test.c", f"{EXAMPLE}.c").objects == (f"{EXAMPLE}.o", "lib/kunit/test.o")
    assert tree.plan("arch/x86/kernel/head_64.S").objects == ("arch/x86/kernel/head_64.o",)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ("include/kunit/test.h", "include/kunit/test.h is not a C or assembler source"),
        ("lib/kunit", "files were added, removed or renamed in lib/kunit/"),
        ("drivers/foo/foo.c", "drivers/foo/foo.c is not compiled straight into vmlinux"),
        ("lib/kunit/gone.c", "lib/kunit/gone.c was removed"),
    ],
)
def test_anything_else_changed_gets_the_full_make(tree: Tree, edit: str, reason: str) -> None:
    # Beside an edit that alone would qualify: one change the link-only build cannot take is enough.
    assert tree.plan(f"{EXAMPLE}.c", edit) == Plan((), reason)


def test_an_object_in_a_library_archive_is_left_to_the_full_make(tree: Tree) -> None:
    """lib.a is linked for the symbols its index names: a recompiled member could need that index written again."""
    tree.compiled("lib/string.c")
    thin_archive(tree.build / "lib/lib.a", ["string.o"])
    assert tree.plan("lib/string.c") == Plan((), "lib/string.c is not compiled straight into vmlinux")


@pytest.mark.parametrize("missing", [f"{EXAMPLE}.o", "lib/kunit/.kunit-example-test.o.cmd"])
def test_an_object_or_its_record_missing_gets_the_full_make(tree: Tree, missing: str) -> None:
    (tree.build / missing).unlink()
    assert tree.plan(f"{EXAMPLE}.c") == Plan((), f"{EXAMPLE}.o or Kbuild's record of its command is missing")


def test_a_source_another_object_includes_gets_the_full_make(tree: Tree) -> None:
    """A .c file #included by another (ext4's mballoc.c includes its test): Kbuild compiles both again."""
    tree.compiled("lib/kunit/other.c", str(tree.src / "lib/kunit/sub/../kunit-example-test.c"))
    reason = f"{EXAMPLE}.c is also read for lib/kunit/.other.o.cmd"
    assert tree.plan(f"{EXAMPLE}.c") == Plan((), reason)


def test_a_namesake_elsewhere_is_not_a_reader(tree: Tree) -> None:
    tree.compiled("drivers/bar/kunit-example-test.c")
    assert tree.plan(f"{EXAMPLE}.c") == Plan((f"{EXAMPLE}.o",))


def test_a_directory_holding_what_it_held_at_the_last_build_is_an_editors_save(tree: Tree) -> None:
    """vim and emacs save by writing a new file and renaming it over the old, beside swap and backup files."""
    thin_archive(tree.build / "vmlinux.a", tree.linked)
    tree.listed = listing(tree.src, tree.build) or {}
    (tree.src / "lib/kunit/.kunit-example-test.c.swp").write_text("")
    (tree.src / "lib/kunit/kunit-example-test.c~").write_text("")
    swap = "lib/kunit/.kunit-example-test.c.swp"
    assert tree.plan("lib/kunit", f"{EXAMPLE}.c", swap) == Plan((f"{EXAMPLE}.o",))
    (tree.src / "lib/kunit/test.c").rename(tree.src / "lib/kunit/moved.c")  # keeps its time: no edit of its own
    assert tree.plan("lib/kunit", f"{EXAMPLE}.c") == Plan((), "lib/kunit/test.c was removed or renamed")
    (tree.src / "lib/kunit/moved.c").rename(tree.src / "lib/kunit/test.c")
    (tree.build / "elsewhere.c").write_text("")
    (tree.build / "elsewhere.c").rename(tree.src / "lib/kunit/old.c")
    assert tree.plan("lib/kunit", f"{EXAMPLE}.c") == Plan((), "lib/kunit/old.c was added")
    tree.listed = {}  # a build that had no objects to list: nothing to compare with
    assert tree.plan("lib/kunit", f"{EXAMPLE}.c") == Plan((), "files were added, removed or renamed in lib/kunit/")


def test_without_a_thin_vmlinux_a_or_a_record_of_the_edits_nothing_is_linked_alone(tree: Tree) -> None:
    assert tree.plan(f"{EXAMPLE}.c", linkable=False) == Plan((), "no link-only build for this architecture")
    same = {"environment": "same", "listing": {}}
    assert plan(tree.src, tree.build, None, same, same) == Plan((), "what changed since the last build is not known")
    (tree.build / "vmlinux.a").write_bytes(b"!<arch>\n")  # a kernel before 6.1 has none; an ordinary one is no use
    edit = [str(tree.src / f"{EXAMPLE}.c")]
    assert plan(tree.src, tree.build, edit, same, same) == Plan(
        (), "no thin vmlinux.a to link from (kernels before 6.1)"
    )
    assert plan(tree.src, tree.build, edit, {}, same).reason.startswith("the last build recorded nothing")


def test_a_change_to_the_environment_kbuild_reads_gets_the_full_make(tree: Tree) -> None:
    """KCFLAGS or the build's identity change objects the walk would compile again (init/version.o's banner)."""
    environ = {"PATH": "/usr/bin", "TERM": "xterm", "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 1970"}
    before = snapshot(tree.src, tree.build, environ)
    assert snapshot(tree.src, tree.build, environ | {"TERM": "dumb", "PYTEST_XDIST_WORKER": "gw1"}) == before
    edit = [str(tree.src / f"{EXAMPLE}.c")]
    thin_archive(tree.build / "vmlinux.a", tree.linked)
    assert plan(tree.src, tree.build, edit, before, before) == Plan((f"{EXAMPLE}.o",))
    for changed in ({"KCFLAGS": "-O1"}, {"KBUILD_BUILD_TIMESTAMP": "now"}, {"PATH": "/opt/gcc/bin:/usr/bin"}):
        now = snapshot(tree.src, tree.build, environ | changed)
        assert plan(tree.src, tree.build, edit, before, now).reason.startswith("the environment Kbuild reads changed")


def test_only_an_image_linked_as_vmlinux_is_built_link_only() -> None:
    assert {name for name, arch in ARCHES.items() if arch.make.link_only} == {"x86_64"}


def test_the_link_runs_in_the_build_directory_so_its_options_reach_the_targets(tmp_path: Path) -> None:
    """Kbuild's O= make starts a second make in the build directory, and `-o` is not passed down to it."""
    make = Make(tmp_path / "src", tmp_path / "build", ARCHES["x86_64"], 2, tmp_path / "log", {})
    command = make.in_build_dir("-o", ".", "vmlinux")
    assert command[:6] == [
        "make",
        "-C",
        str(tmp_path / "build"),
        "-f",
        str(tmp_path / "src/Makefile"),
        "O=" + str(tmp_path / "build"),
    ]
    assert command[-4:] == ["ARCH=x86_64", "-o", ".", "vmlinux"] and "--no-print-directory" in command
    assert make.command("lib/kunit/test.o") == [
        "make",
        "-C",
        str(tmp_path / "src"),
        f"O={tmp_path / 'build'}",
        "ARCH=x86_64",
        "lib/kunit/test.o",
    ]
