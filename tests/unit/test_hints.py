"""kunit.py's filter globs as pytest -k expressions."""

from __future__ import annotations

import pytest

from pytest_kunit.face.hints import glob_as_keywords, keyword_glob_error


@pytest.mark.parametrize(
    ("glob", "keywords"),
    [
        ("example.*", "example"),
        ("example*", "example"),
        ("*.example_simple_test", "example_simple_test"),
        ("example.example_simple*", "example and example_simple"),
        ("kunit-try-catch.*", "kunit and try and catch"),
        ("example.*,other.first", "example or (other and first)"),
        ("*", ""),
    ],
)
def test_a_glob_becomes_the_words_it_names(glob: str, keywords: str) -> None:
    assert glob_as_keywords(glob) == keywords


@pytest.mark.parametrize("keyword", ["example", "example and not slow", "test_x[1]", "a.b"])
def test_a_keyword_expression_is_left_to_pytest(keyword: str) -> None:
    assert keyword_glob_error(keyword) is None


def test_a_glob_of_wildcards_only_is_told_to_drop_k() -> None:
    error = keyword_glob_error("*.*")
    assert error is not None and "no -k at all (it selects every case)" in error
