"""The kernel suites are a Python package (testsuites/__init__.py), so that an installed pytest-kunit runs them with
`pytest --kunit --pyargs pytest_kunit.testsuites`; from a checkout, `pytest --kunit testsuites/` must keep the node ids
it gave before (a user's --lf, --deselect and CI history name them)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from .conftest import KUNITCONFIG, FakeKernel

ROOT = Path(__file__).resolve().parents[2]


def listed_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def knowing_every_symbol(tree: Path, fragments: list[Path]) -> None:
    """The fake tree given a Kconfig entry for each symbol the fragments set that it lacks (it has KUnit's and the
    example's, not the series' or the device tree's), so that the project's own fragments configure on it."""
    kconfig = tree / "Kconfig"
    defined = set(re.findall(r"^config (\w+)", kconfig.read_text(), re.M))
    named = {name for fragment in fragments for name in re.findall(r"^CONFIG_(\w+)=", fragment.read_text(), re.M)}
    with kconfig.open("a") as out:
        for name in sorted(named - defined):
            out.write(f'\nconfig {name}\n\tbool "{name}"\n')


def test_a_package_directory_keeps_its_fragments_node_ids(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    suites = pytester.mkdir("suites")
    (suites / "kunit.kunitconfig").write_text(KUNITCONFIG)
    (suites / "out").mkdir()
    (suites / "out" / "out.kunitconfig").write_text(KUNITCONFIG)
    plain = pytester.runpytest_subprocess(*fake_kernel.options("--collect-only", "-q", "suites/"))
    (suites / "__init__.py").write_text('"""Kernel suites."""\n')
    packaged = pytester.runpytest_subprocess(*fake_kernel.options("--collect-only", "-q", "suites/"))
    assert "suites/out/out.kunitconfig::example::example_simple_test" in listed_ids(plain), plain.outlines
    assert listed_ids(packaged) == listed_ids(plain)


def test_the_projects_suites_keep_node_ids_as_a_package(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """`pytest --kunit testsuites/`, the main job, on a copy of the checkout's testsuites/ with and without its
    __init__.py."""
    suites = pytester.path / "testsuites"
    shutil.copytree(ROOT / "testsuites", suites, ignore=shutil.ignore_patterns("__pycache__"))
    knowing_every_symbol(fake_kernel.tree, sorted(suites.rglob("*.kunitconfig")))
    packaged = pytester.runpytest_subprocess(*fake_kernel.options("--collect-only", "-q", "testsuites/"))
    (suites / "__init__.py").unlink()
    plain = pytester.runpytest_subprocess(*fake_kernel.options("--collect-only", "-q", "testsuites/"))
    assert "testsuites/all-tests.kunitconfig::example::example_simple_test" in listed_ids(plain), plain.outlines
    assert listed_ids(packaged) == listed_ids(plain)


def test_the_main_job_builds_one_kernel(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """Command one (`pytest --kunit testsuites/`, scripts/kunit.sh) from an empty cache, on a copy of the checkout's
    testsuites/: the plugin's own collection, reuse and sharing decide how many kernels it builds, and a second
    default fragment is a second kernel (the all-tests one cannot provably serve another: issue 47)."""
    shutil.copytree(ROOT / "testsuites", pytester.path / "testsuites", ignore=shutil.ignore_patterns("__pycache__"))
    knowing_every_symbol(fake_kernel.tree, sorted((pytester.path / "testsuites").rglob("*.kunitconfig")))
    result = pytester.runpytest_subprocess(*fake_kernel.options("--collect-only", "-q", "testsuites/"))
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(["kernel builds: 1 (*"])
    assert {nodeid.split("::")[0] for nodeid in listed_ids(result)} == {"testsuites/all-tests.kunitconfig"}
