"""`cd ~/linux && pytest --kunit`: the tree's own Python stays out of the run, and many kernels are announced."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import KUNITCONFIG, FakeKernel, no_traceback

FRAGMENTS = ("lib/kunit/.kunitconfig", "fs/ext4/.kunitconfig", "mm/.kunitconfig", "net/core/.kunitconfig")


def without_source(arguments: list[str]) -> list[str]:
    return [arg for arg in arguments if not arg.startswith("--kunit-kernel-src")]


@pytest.fixture
def hostile_tree(fake_kernel: FakeKernel) -> Path:
    """The fake tree as a real one is: fragments in several directories, Python that runs (and exits) at import, a
    conftest.py that does the same. Each leaves a mark when imported."""
    tree = fake_kernel.tree
    for fragment in FRAGMENTS:
        (tree / fragment).parent.mkdir(parents=True, exist_ok=True)
        (tree / fragment).write_text(KUNITCONFIG)
    exits = "from pathlib import Path\nPath(__file__).with_suffix('.imported').touch()\nraise SystemExit(1)\n"
    scripts = (
        "tools/testing/kunit/kunit_tool_test.py",
        "tools/testing/selftests/test_exits.py",
        "tools/lib/__init__.py",
    )
    for script in scripts:
        (tree / script).parent.mkdir(parents=True, exist_ok=True)
        (tree / script).write_text(exits)
    (tree / "tools/testing/selftests/hid/tests").mkdir(parents=True)
    (tree / "tools/testing/selftests/hid/tests/conftest.py").write_text(exits)
    return tree


def imported(tree: Path) -> list[Path]:
    return sorted(tree.rglob("*.imported"))


def collect_at_the_root(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, tree: Path, *paths: str
) -> pytest.RunResult:
    """`cd TREE && pytest --kunit --collect-only -q [PATH ...]`, as a kernel developer types it at the tree's root."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tree)
        return pytester.runpytest_subprocess(*without_source(fake_kernel.options("--collect-only", "-q", *paths)))


def test_a_kernel_tree_root_collects_its_fragments_and_imports_none_of_its_python(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, hostile_tree: Path
) -> None:
    result = collect_at_the_root(pytester, fake_kernel, hostile_tree)
    no_traceback(result)
    assert imported(hostile_tree) == []
    for fragment in FRAGMENTS:
        result.stdout.fnmatch_lines([f"{fragment}::example::example_simple_test"])
    assert result.ret == pytest.ExitCode.OK


def test_many_kernels_are_announced_before_the_first_build(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, hostile_tree: Path
) -> None:
    lines = collect_at_the_root(pytester, fake_kernel, hostile_tree).stdout.lines
    announced = next(index for index, line in enumerate(lines) if "4 kunitconfig fragments collected" in line)
    first_build = next(index for index, line in enumerate(lines) if line.startswith("kunit: built "))
    assert announced < first_build
    line = lines[announced]
    assert "each built as its own kernel: up to 4 kernel builds" in line
    assert all(fragment in line for fragment in FRAGMENTS)
    assert "--kunit-share-kernels" in line and "pytest --kunit fs/ext4/" in line


def test_a_few_kernels_are_not_announced(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, hostile_tree: Path
) -> None:
    result = collect_at_the_root(pytester, fake_kernel, hostile_tree, "fs/")
    result.stdout.fnmatch_lines(["fs/ext4/.kunitconfig::example::example_simple_test"])
    result.stdout.no_fnmatch_line("*fragments collected*")


def test_outside_a_kernel_tree_python_is_collected_beside_fragments(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.makepyfile(test_mine="def test_mine():\n    pass\n")
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    result.stdout.fnmatch_lines(["kunit.kunitconfig::example::example_simple_test", "test_mine.py::test_mine"])
