"""What of a directory changed since a time: find(1) and the Python walk judge a tree alike."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from pytest_kunit.kernel.changed_since import changed_since


@pytest.mark.parametrize("with_find", [True, False])
def test_changed_since_names_each_newer_entry_outside_git_and_pytest_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_find: bool
) -> None:
    """find(1) and the Python walk that stands in where find is missing judge a tree alike."""
    if not with_find:
        monkeypatch.setattr(shutil, "which", lambda name: None)
    root = tmp_path / "tree"
    (root / "lib/kunit").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".pytest_cache/v/cache").mkdir(parents=True)
    source = root / "lib/kunit/test.c"
    source.write_text("int x;\n")
    past = time.time_ns() - 10_000_000_000
    for path in [root, *root.rglob("*")]:
        os.utime(path, ns=(past, past))
    since = past + 1_000_000_000
    assert changed_since(root, since) == {}
    (root / ".git/index").write_text("")  # git's own files are not the tree's
    (root / ".pytest_cache/v/cache/nodeids").write_text("[]")  # what every pytest run from the tree writes
    assert changed_since(root, since) == {}
    with source.open("a") as stream:  # an edit in place moves only the file's time
        stream.write("// edited\n")
    assert changed_since(root, since) == {str(source): source.stat().st_mtime_ns}
    (root / "lib/kunit/new.c").write_text("")  # a new file moves its directory's time too
    assert set(changed_since(root, since) or {}) == {
        str(source),
        str(root / "lib/kunit"),
        str(root / "lib/kunit/new.c"),
    }
    assert changed_since(root / "missing", since) is None
