"""Placing out-of-tree suites into a prepared tree: Kconfig and Kbuild are replaced, never written into."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from pytest_kunit.kernel.out_of_tree import SuiteDir, install


def suite(root: Path, name: str) -> SuiteDir:
    folder = root / "suites" / name
    folder.mkdir(parents=True)
    (folder / "Kconfig").write_text(f"config {name.upper()}_TEST\n\ttristate\n")
    (folder / "Makefile").write_text(f"obj-$(CONFIG_{name.upper()}_TEST) += {name}-test.o\n")
    return SuiteDir(name, folder)


def test_a_hard_linked_copy_keeps_its_own_kconfig_when_a_suite_is_placed_later(tmp_path: Path) -> None:
    """The real tier links a tree's files into a second cache; a suite placed in the first afterwards must not change
    the second's Kconfig under it (it would name a folder the copy never got)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "Kconfig").write_text('mainmenu "fake"\n')
    (tree / "Kbuild").write_text("obj-y += init/\n")
    install(tree, suite(tmp_path, "first"))
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-al", str(tree), str(copy)], check=True)
    install(tree, suite(tmp_path, "second"))
    assert 'source "pytest-kunit/second/Kconfig"' in (tree / "pytest-kunit" / "Kconfig").read_text()
    assert "second" not in (copy / "pytest-kunit" / "Kconfig").read_text()
    assert not (copy / "pytest-kunit" / "second").exists()
    assert (tree / "pytest-kunit" / "Kconfig").stat().st_mode & 0o777 == 0o644


def test_a_suite_placed_for_another_kernel_leaves_a_configured_build_configured(tmp_path: Path) -> None:
    """A build configured before (its Kconfig inputs as auto.conf.cmd lists them, no newer than its auto.conf) stays
    configured when the first suite is placed into its tree, and when another follows: neither Kbuild nor the
    no-make check may see its configuration as stale, or its next run makes the whole kernel."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "Kconfig").write_text('mainmenu "fake"\n')
    (tree / "Kbuild").write_text("obj-y += init/\n")
    before_any = tree / "Kconfig", tree / "Kbuild"
    configured = time.time_ns()
    install(tree, suite(tmp_path, "first"))
    assert all(path.stat().st_mtime_ns <= configured for path in before_any)
    read = [*before_any, tree / "pytest-kunit" / "Kconfig", tree / "pytest-kunit" / "Makefile"]
    configured = time.time_ns()
    install(tree, suite(tmp_path, "second"))
    assert all(path.stat().st_mtime_ns <= configured for path in read), [path.stat().st_mtime_ns for path in read]
    assert 'source "pytest-kunit/second/Kconfig"' in (tree / "pytest-kunit" / "Kconfig").read_text()
    assert "obj-y += second/" in (tree / "pytest-kunit" / "Makefile").read_text()
    assert 'source "pytest-kunit/Kconfig"' in (tree / "Kconfig").read_text()
