"""The kernel suites are a Python package (testsuites/__init__.py), so that an installed pytest-kunit runs them with
`pytest --kunit --pyargs pytest_kunit.testsuites`; from a checkout, `pytest --kunit testsuites/` must keep the node ids
it gave before (a user's --lf, --deselect and CI history name them)."""

from __future__ import annotations

import pytest

from .conftest import KUNITCONFIG, FakeKernel


def listed_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


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
