"""The console as users read it: control sequences stripped, each case's slice and duration."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit import ktap
from pytest_kunit.console import ConsoleMap, printk_seconds, strip_controls

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (
            "\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS (version 1.16.2-debian-1.16.2-1)",
            "SeaBIOS (version 1.16.2-debian-1.16.2-1)",
        ),
        ("Booting from ROM..\x1bc\x1b[?7l\x1b[2JLinux version 6.1.192", "Booting from ROM..Linux version 6.1.192"),
        ("\x1b[1;31mred\x1b[m and \x1b]0;title\x07plain", "red and plain"),
        ("\x1b(Bcharset\x1b7saved\x1b8", "charsetsaved"),
        ("tab\tkept, bell\x07 and nul\x00 and cr\r gone", "tab\tkept, bell and nul and cr gone"),
        ("    ok 1 example_simple_test", "    ok 1 example_simple_test"),
        ("dangling escape\x1b", "dangling escape"),
    ],
)
def test_control_sequences_are_stripped(raw: str, clean: str) -> None:
    assert strip_controls(raw) == clean


@pytest.mark.parametrize(
    ("line", "seconds"),
    [("[    1.234567] ok 1 x", 1.234567), ("[  123.000001][    T1] ok 1 x", 123.000001), ("ok 1 x", None)],
)
def test_printk_time_stamps(line: str, seconds: float | None) -> None:
    assert printk_seconds(line) == seconds


def mapped(lines: list[str], host: list[float] | None = None) -> ConsoleMap:
    layout = ConsoleMap()
    parser = ktap.KtapParser()
    for index, line in enumerate(lines):
        for event in parser.feed(line):
            layout.note(event, index, line, host[index] if host else 0.0)
    return layout


def test_case_durations_by_the_kernels_time_stamps() -> None:
    lines = (DATA / "synthetic-timestamps.log").read_text().splitlines()
    seconds = mapped(lines).seconds
    # From the previous result line (or the suite's header) to the case's own result line.
    assert seconds[("ts-suite", "ts_pass")] == pytest.approx(0.5959 - 0.5685)
    assert seconds[("ts-suite", "ts_fail")] == pytest.approx(0.6644 - 0.5959)
    assert seconds[("ts-suite", "ts_params")] == pytest.approx(0.8014 - 0.6781)  # its own line, not a parameter's
    assert seconds[("ts-second", "ts_second_case")] == pytest.approx(0.8973 - 0.8699)


def test_case_durations_by_the_host_without_time_stamps() -> None:
    lines = ["KTAP version 1", "1..1", "  # Subtest: s", "  1..2", "  ok 1 a", "  # b: slow", "  ok 2 b", "ok 1 s"]
    host = [0.0, 0.1, 1.0, 1.1, 1.5, 2.0, 4.0, 4.1]
    assert mapped(lines, host).seconds == {("s", "a"): pytest.approx(0.5), ("s", "b"): pytest.approx(2.5)}


def test_a_cases_slice_runs_from_its_suites_header_to_its_result() -> None:
    lines = (DATA / "synthetic-timestamps.log").read_text().splitlines()
    layout = mapped(lines)
    failing = layout.case_lines(lines, ("ts-suite", "ts_fail"))
    assert failing[0].endswith("# Subtest: ts-suite") and failing[-1].endswith("not ok 2 ts_fail")
    assert layout.case_lines(lines, ("ts-second", "ts_second_case"))[0].endswith("# Subtest: ts-second")
    # No result line: the suite's section up to its end; a suite never seen: nothing.
    assert layout.case_lines(lines, ("ts-second", "missing"))[-1].endswith("ok 2 ts-second")
    assert layout.case_lines(lines, ("nowhere", "x")) == ()


def test_a_case_of_a_suite_that_never_ended_runs_to_the_consoles_end() -> None:
    lines = ["KTAP version 1", "1..1", "  # Subtest: s", "  1..2", "  ok 1 a", "BUG: kernel NULL pointer dereference"]
    assert mapped(lines).case_lines(lines, ("s", "b")) == tuple(lines[2:])
