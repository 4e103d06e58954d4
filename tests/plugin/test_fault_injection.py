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
