"""kunit.py's knobs as options: a repeatable one given again adds to the last, as kunit.py's `append` options do, and
--kunit-kernel-args refuses the plugin's own parameters however the kernel would read them."""

from __future__ import annotations

import pytest

from pytest_kunit.face.knobs import kernel_parameter
from pytest_kunit.face.settings import resolve
from pytest_kunit.model import Settings


def resolved(pytester: pytest.Pytester, *args: str) -> Settings:
    return resolve(pytester.parseconfigure("-p", "no:cacheprovider", *args))


@pytest.mark.parametrize(
    ("flag", "field", "occurrences", "words"),
    [
        (
            "--kunit-make-options",
            "make_options",
            ["W=1", "LLVM=1 'KCFLAGS=-O1 -g'"],
            ("W=1", "LLVM=1", "KCFLAGS=-O1 -g"),
        ),
        (
            "--kunit-kernel-args",
            "kernel_args",
            ['quiet fake.label="a b"', "fake.n=1"],
            ("quiet", 'fake.label="a b"', "fake.n=1"),
        ),
        ("--kunit-qemu-args", "qemu_args", ["-smp 2", "-m 512"], ("-smp", "2", "-m", "512")),
    ],
)
def test_a_repeatable_option_given_twice_keeps_both_in_order(
    pytester: pytest.Pytester, flag: str, field: str, occurrences: list[str], words: tuple[str, ...]
) -> None:
    given = [f"{flag}={occurrence}" for occurrence in occurrences]
    assert getattr(resolved(pytester, *given), field) == words
    assert getattr(resolved(pytester, *reversed(given)), field) != words  # the order is kept


@pytest.mark.parametrize(
    ("key", "field", "words"),
    [
        ("kunit_make_options", "make_options", ("W=1", "LLVM=1", "CC=clang")),
        ("kunit_kernel_args", "kernel_args", ("W=1", "LLVM=1", "CC=clang")),
        ("kunit_qemu_args", "qemu_args", ("W=1", "LLVM=1", "CC=clang")),
    ],
)
def test_a_repeatable_options_ini_key_takes_one_occurrence_a_line(
    pytester: pytest.Pytester, key: str, field: str, words: tuple[str, ...]
) -> None:
    pytester.makeini(f"[pytest]\n{key} =\n    W=1\n    LLVM=1 CC=clang\n")
    assert getattr(resolved(pytester), field) == words


def test_a_refused_word_in_a_later_occurrence_is_named(pytester: pytest.Pytester) -> None:
    with pytest.raises(pytest.UsageError, match=r"^--kunit-make-options: pytest-kunit sets ARCH itself"):
        resolved(pytester, "--kunit-make-options=W=1", "--kunit-make-options=ARCH=arm64")
    with pytest.raises(pytest.UsageError, match=r"^--kunit-qemu-args: '-m \"512' does not split into words"):
        resolved(pytester, "--kunit-qemu-args=-smp 2", '--kunit-qemu-args=-m "512')
    with pytest.raises(pytest.UsageError, match=r"^--kunit-kernel-args: 'x=\"1' has an unclosed double quote"):
        resolved(pytester, '--kunit-kernel-args=y="2"', '--kunit-kernel-args=x="1')


@pytest.mark.parametrize(
    "word",
    [
        "kunit.filter_glob=example.*",  # the plain form
        "kunit.filter-glob=example.*",  # the kernel takes a dash in a parameter's name for an underscore
        "kunit.filter-glob",
        '"kunit.filter_glob=example.*"',  # next_arg() drops the quote a word starts with
        '"kunit.filter_glob"',
        'kunit.filter_glob="example.*"',
        '"kunit.action=list"',
        "kunit.filter=speed>slow",
    ],
)
def test_kernel_args_that_choose_the_cases_are_refused_in_every_form_the_kernel_reads(
    pytester: pytest.Pytester, word: str
) -> None:
    with pytest.raises(pytest.UsageError, match="would change which cases the kernel runs"):
        resolved(pytester, f"--kunit-kernel-args=quiet {word}")


@pytest.mark.parametrize(
    ("word", "parameter"),
    [
        ("quiet", "quiet"),
        ("kunit.filter-glob=a-b", "kunit.filter_glob"),
        ('"kunit.filter_glob=x y"', "kunit.filter_glob"),
        ('"kunit.filter_glob"', "kunit.filter_glob"),
        ('fake.label="kunit.filter_glob=x"', "fake.label"),  # a value naming the parameter sets another one
        ('fake."kunit.filter_glob"=x', 'fake."kunit.filter_glob"'),  # a quote inside the name stays in it
    ],
)
def test_the_parameter_a_word_sets_is_read_as_the_kernel_reads_it(word: str, parameter: str) -> None:
    assert kernel_parameter(word) == parameter


def test_a_value_that_only_mentions_a_refused_parameter_passes(pytester: pytest.Pytester) -> None:
    words = resolved(pytester, '--kunit-kernel-args=fake.label="kunit.filter_glob=x"').kernel_args
    assert words == ('fake.label="kunit.filter_glob=x"',)
