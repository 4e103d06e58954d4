"""The console split into lines as it streams: each line as console_line would keep it whole, however the reads cut
it, and a line that never ends held to MAX_LINE characters while it arrives."""

from __future__ import annotations

import pytest

from pytest_kunit.console.transcript import MAX_LINE, console_line
from pytest_kunit.guest.console_lines import LineSplitter


def split(text: str, chunk: int) -> list[str]:
    splitter = LineSplitter()
    lines = [line for start in range(0, len(text), chunk) for line in splitter.feed(text[start : start + chunk])]
    tail = splitter.finish()
    return lines + ([] if tail is None else [tail])


@pytest.mark.parametrize("chunk", [1, 7, MAX_LINE - 1, MAX_LINE + 1, 1 << 16])
def test_lines_read_as_console_line_keeps_them_whatever_the_reads(chunk: int) -> None:
    lines = [
        "    ok 1 example_simple_test\r",
        "",
        "\x1b[2J" + "a" * (MAX_LINE - 4),  # cut after its controls are stripped, not before
        "b" * MAX_LINE,
        "c" * (MAX_LINE + 1),
        "\x1b[31m" + "d" * 10_000 + "\x1b[0m",
    ]
    assert split("\n".join(lines) + "\n", chunk) == [console_line(line) for line in lines]


def test_a_last_line_without_a_newline_is_kept_and_a_blank_one_is_not() -> None:
    assert split("one\ntwo", 3) == ["one", "two"]
    assert split("one\n\r", 3) == ["one"]


def test_a_line_that_never_ends_is_held_to_its_cut_while_it_arrives() -> None:
    splitter = LineSplitter()
    for _ in range(1000):  # 64 MiB, no newline
        assert splitter.feed("x" * (1 << 16)) == []
        assert splitter.held <= MAX_LINE
    (line,) = splitter.feed("\n")
    assert line == console_line("x" * (1000 << 16))
