"""The kernel tree helpers that need no kernel: patch series order, applying patches, feature detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_kunit.errors import TreeError
from pytest_kunit.host import processes
from pytest_kunit.kernel import tree as tree_module
from pytest_kunit.kernel.tree import (
    apply_patches,
    patch_changes,
    patch_files,
    patch_series,
)

COVER_LETTER = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Someone <someone@example.org>
Subject: [PATCH 0/2] kunit: a series

This series does things.  It mentions diff --stat but holds no diff.

 lib/kunit/executor.c | 2 +-
"""


def make_patch(old_path: str, body: str) -> str:
    return f"""\
From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: Someone <someone@example.org>
Subject: [PATCH] change {old_path}

---
diff --git a/{old_path} b/{old_path}
{body}"""


GOOD = make_patch(
    "lib/kunit/hello.c",
    """\
--- a/lib/kunit/hello.c
+++ b/lib/kunit/hello.c
@@ -1,3 +1,3 @@
 line one
-line two
+line 2
 line three
""",
)

# What `diff -u` or quilt writes: no git header, no mail header.
PLAIN = """\
--- a/lib/kunit/hello.c\t2024-01-01 00:00:00.000000000 +0000
+++ b/lib/kunit/hello.c\t2024-01-02 00:00:00.000000000 +0000
@@ -1,3 +1,3 @@
 line one
-line two
+line 2
 line three
"""

BAD = make_patch(
    "lib/kunit/hello.c",
    """\
--- a/lib/kunit/hello.c
+++ b/lib/kunit/hello.c
@@ -1,3 +1,3 @@
 line one
-this line is not in the file
+replacement
 line three
""",
)

NEW_FILE = """\
diff --git a/lib/kunit/added.c b/lib/kunit/added.c
new file mode 100644
--- /dev/null
+++ b/lib/kunit/added.c
@@ -0,0 +1 @@
+// new
"""


def test_what_a_patch_changes_leaves_out_its_message_and_notes() -> None:
    reworded = GOOD.replace("Subject: [PATCH] change", "Subject: [PATCH] reword").replace(
        "---\n", "---\nNotes:\n    why a checkpatch warning stays\n\n lib/kunit/hello.c | 2 +-\n\n", 1
    )
    assert reworded != GOOD
    assert patch_changes(reworded.encode()) == patch_changes(GOOD.encode())
    assert patch_changes(GOOD.encode()).startswith(b"diff --git ")
    # A hunk that changes is a patch that changes, and a plain `diff -u` is all diff.
    assert patch_changes(BAD.encode()) != patch_changes(GOOD.encode())
    assert patch_changes(PLAIN.encode()) == PLAIN.encode()


# --- patch_files ---------------------------------------------------------------------------------------------------


def test_patch_files_order_and_cover_letters(tmp_path: Path) -> None:
    first = tmp_path / "series-a"
    second = tmp_path / "series-b"
    first.mkdir()
    second.mkdir()
    (first / "0000-cover-letter.patch").write_text(COVER_LETTER)
    (first / "0002-second.patch").write_text(GOOD)
    (first / "0001-first.patch").write_text(GOOD)
    (first / "0010-tenth.patch").write_text(GOOD)
    (first / "README").write_text("diff --git but not a patch file")
    (first / "0003-notes.diff").write_text(GOOD)
    (first / "0004-plain.patch").write_text(PLAIN)
    (second / "0001-other-first.patch").write_text(GOOD)
    (second / "0000-cover-letter.patch").write_text(COVER_LETTER)

    assert patch_files((first, second)) == [
        first / "0001-first.patch",
        first / "0002-second.patch",
        first / "0003-notes.diff",
        first / "0004-plain.patch",
        first / "0010-tenth.patch",
        second / "0001-other-first.patch",
    ]
    # Directories are taken in the order given, not merged and re-sorted.
    assert patch_files((second, first))[:2] == [second / "0001-other-first.patch", first / "0001-first.patch"]
    assert patch_series((first, second)).without_diff == (
        first / "0000-cover-letter.patch",
        second / "0000-cover-letter.patch",
    )
    assert patch_files(()) == []


def test_patch_files_of_an_empty_directory(tmp_path: Path) -> None:
    assert patch_files((tmp_path,)) == []


# --- apply_patches -------------------------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "linux"
    (root / "lib" / "kunit").mkdir(parents=True)
    (root / "lib" / "kunit" / "hello.c").write_text("line one\nline two\nline three\n")
    return root


def test_a_good_patch_applies(tree: Path, tmp_path: Path) -> None:
    good = tmp_path / "0001-good.patch"
    good.write_text(GOOD)
    added = tmp_path / "0002-add.patch"
    added.write_text(NEW_FILE)
    apply_patches(tree, [good, added])
    assert (tree / "lib" / "kunit" / "hello.c").read_text() == "line one\nline 2\nline three\n"
    assert (tree / "lib" / "kunit" / "added.c").read_text() == "// new\n"
    apply_patches(tree, [])


def test_a_plain_unified_diff_applies(tree: Path, tmp_path: Path) -> None:
    plain = tmp_path / "fix.diff"
    plain.write_text(PLAIN)
    assert patch_files((tmp_path,)) == [plain]
    apply_patches(tree, [plain])
    assert (tree / "lib" / "kunit" / "hello.c").read_text() == "line one\nline 2\nline three\n"


def test_a_bad_patch_raises_naming_the_patch_and_the_file(tree: Path, tmp_path: Path) -> None:
    patches = tmp_path / "patches"
    patches.mkdir()
    bad = patches / "0007-bad.patch"
    bad.write_text(BAD)
    with pytest.raises(TreeError) as raised:
        apply_patches(tree, [bad])
    error = raised.value
    assert error.what == f"Patch 0007-bad.patch (from {patches}) does not apply to the kernel tree."
    assert "lib/kunit/hello.c" in error.detail
    assert "--kunit-patches" in error.remedy
    rendered = error.render()
    assert "0007-bad.patch" in rendered
    assert "lib/kunit/hello.c" in rendered
    # git apply is all or nothing: the tree is untouched.
    assert (tree / "lib" / "kunit" / "hello.c").read_text() == "line one\nline two\nline three\n"


def test_the_first_failing_patch_of_a_series_is_named(tree: Path, tmp_path: Path) -> None:
    good = tmp_path / "0001-good.patch"
    good.write_text(GOOD)
    again = tmp_path / "0002-good-again.patch"
    again.write_text(GOOD)  # applies once only: the context changed
    with pytest.raises(TreeError) as raised:
        apply_patches(tree, [good, again])
    assert raised.value.what.startswith("Patch 0002-good-again.patch ")
    assert (tree / "lib" / "kunit" / "hello.c").read_text() == "line one\nline 2\nline three\n"


def test_patch_for_a_missing_file_names_the_file(tree: Path, tmp_path: Path) -> None:
    missing = tmp_path / "0001-missing.patch"
    missing.write_text(GOOD.replace("lib/kunit/hello.c", "lib/kunit/absent.c"))
    with pytest.raises(TreeError) as raised:
        apply_patches(tree, [missing])
    assert "0001-missing.patch" in raised.value.what
    assert "lib/kunit/absent.c" in raised.value.detail


# --- a directory source with patches, prepared while another process may be compiling it ---------------------------


def test_a_tree_built_in_place_is_named_by_its_real_path(tmp_path: Path) -> None:
    """A user's tree reached through a link: make compiles it by its real path, so the build and what reads its
    output (crash decoding, coverage) get that path."""
    real = tmp_path / "real-linux"
    real.mkdir()
    (real / "Makefile").write_text("all:\n")
    (real / "Kconfig").write_text("config KUNIT\n")
    (tmp_path / "linux").symlink_to(real)
    assert tree_module.prepare(tmp_path / "linux", (), tmp_path / "cache").path == real


def test_a_patched_copy_never_shows_a_file_unpatched_or_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every process prepares the shared copy (each xdist worker, each session). Before the fix each one rsynced the
    source over it (patched files back to unpatched, files patches add deleted) and then ran `git apply` again: a
    compile in between read them so, and every file the series touches got a new mtime (a rebuild)."""
    source = tmp_path / "linux"
    (source / "lib" / "kunit").mkdir(parents=True)
    (source / "Makefile").write_text("all:\n")
    (source / "Kconfig").write_text("config KUNIT\n")
    (source / "lib" / "kunit" / "hello.c").write_text("line one\nline two\nline three\n")
    (source / "lib" / "other.c").write_text("// other\n")
    series = tmp_path / "series"
    series.mkdir()
    (series / "0001-good.patch").write_text(GOOD)
    (series / "0002-add.patch").write_text(NEW_FILE)
    cache = tmp_path / "cache"
    copy = tree_module.prepare(source, (series,), cache).path
    hello, added = copy / "lib/kunit/hello.c", copy / "lib/kunit/added.c"
    patched = "line one\nline 2\nline three\n"
    assert hello.read_text() == patched and added.read_text() == "// new\n"
    before = (hello.stat().st_ino, hello.stat().st_mtime_ns, added.stat().st_mtime_ns)

    seen: list[tuple[str, bool]] = []
    run = processes.run_bounded

    def watching(command: list[str], *args: Any, **kwargs: Any) -> Any:
        result = run(command, *args, **kwargs)
        seen.append((hello.read_text() if hello.exists() else "missing", added.exists()))
        return result

    monkeypatch.setattr(tree_module, "run_bounded", watching)
    assert tree_module.prepare(source, (series,), cache).path == copy  # nothing changed: nothing rewritten
    assert (hello.stat().st_ino, hello.stat().st_mtime_ns, added.stat().st_mtime_ns) == before
    assert seen and set(seen) == {(patched, True)}, seen
    seen.clear()
    (source / "lib" / "other.c").write_text("// other, edited\n")  # an edit elsewhere, and one to a patched file
    (source / "lib" / "kunit" / "hello.c").write_text("line one\nline two\nline three\nline four\n")
    tree_module.prepare(source, (series,), cache)
    assert seen and all(text.startswith("line one\nline 2\n") and present for text, present in seen), seen
    assert (copy / "lib/other.c").read_text() == "// other, edited\n"
    assert hello.read_text() == "line one\nline 2\nline three\nline four\n"
    assert added.stat().st_mtime_ns == before[2]  # unchanged by the patch series: left alone
    assert sorted(path.name for path in (cache / "src").iterdir()) == [copy.name]  # no staging left
