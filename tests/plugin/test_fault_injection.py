"""Faults injected from outside the plugin's own code (a cut console, a damaged cache, a truncated image, a bad
value, a flooding guest, a hung accelerator): each ends in one clear paragraph, and nothing partial is ever kept."""

from __future__ import annotations

import pytest

from .conftest import FakeKernel


def no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text


@pytest.mark.parametrize("value", ["0.5", "1.9", "1e9"])
def test_timeout_the_kernel_would_refuse_is_a_usage_error(
    project: pytest.Pytester, fake_kernel: FakeKernel, value: str
) -> None:
    result = project.runpytest(*fake_kernel.options(f"--kunit-timeout={value}"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--kunit-timeout: '{value}' is not a whole number of seconds from 1 to 86400*"])
    assert fake_kernel.boots() == []
    no_traceback(result)


def test_empty_fragment_is_refused_before_any_build(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    pytester.makefile(".kunitconfig", empty="# nothing here yet\n")
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(["*empty.kunitconfig sets no CONFIG_ option: its kernel would hold no test.*"])
    assert not (fake_kernel.cache / "build").exists()
    no_traceback(result)


def test_binary_fragment_is_refused_in_a_few_lines(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    (pytester.path / "x.kunitconfig").write_bytes(bytes(range(256)) * 2000)
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(["*x.kunitconfig is not a kunitconfig: it holds binary data.*"])
    assert len(result.stdout.str()) < 4000
    no_traceback(result)
