"""The console as users read it: control sequences stripped, each case's slice and duration."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit.console import ktap
from pytest_kunit.console.transcript import (
    MAX_LINE,
    BoundedConsole,
    ConsoleMap,
    console_line,
    printk_seconds,
    strip_controls,
    visible,
)
from pytest_kunit.face.report import render_failure
from pytest_kunit.findings.outcomes import Outcome

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
        # C1 controls (a terminal's one-byte CSI, NEL) and bidirectional overrides or isolates: a name that reads
        # one way and is another.
        ("ok 1 case\x9b31m red\x85", "ok 1 case31m red"),
        (
            "ok 1 admin\u202egnp.exe and \u2066isolated\u2069 \u202a\u202b\u202c\u202d",
            "ok 1 admingnp.exe and isolated ",
        ),
        ("naïve café \u00a0 \u00ff kept", "naïve café \u00a0 \u00ff kept"),
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


def test_a_cases_slice_runs_from_its_suites_header_to_its_result_without_earlier_cases() -> None:
    lines = (DATA / "synthetic-timestamps.log").read_text().splitlines()
    layout = mapped(lines)
    failing = layout.case_lines(lines, ("ts-suite", "ts_fail"))
    assert failing[0].endswith("# Subtest: ts-suite") and failing[-1].endswith("not ok 2 ts_fail")
    assert not [line for line in failing if "ok 1 ts_pass" in line]
    assert layout.case_lines(lines, ("ts-second", "ts_second_case"))[0].endswith("# Subtest: ts-second")
    # No result line: the suite's section up to its end; a suite never seen: nothing.
    assert layout.case_lines(lines, ("ts-second", "missing"))[-1].endswith("ok 2 ts-second")
    assert layout.case_lines(lines, ("nowhere", "x")) == ()


def test_a_case_of_a_suite_that_never_ended_runs_to_the_consoles_end() -> None:
    lines = ["KTAP version 1", "1..1", "  # Subtest: s", "  1..2", "  ok 1 a", "BUG: kernel NULL pointer dereference"]
    assert mapped(lines).case_lines(lines, ("s", "b")) == ("  # Subtest: s", "  1..2", lines[-1])


def test_a_failures_slice_holds_its_suites_header_and_its_own_lines_not_an_earlier_failures() -> None:
    lines = [
        "KTAP version 1",
        "1..1",
        "    KTAP version 1",
        "    # Subtest: s",
        "    # module: m",
        "    1..3",
        "    # first: EXPECTATION FAILED at lib/a.c:10",
        "    not ok 1 first",
        "    ok 2 between",
        "    # second: EXPECTATION FAILED at lib/a.c:20",
        "    not ok 3 second",
        "not ok 1 s",
    ]
    layout = mapped(lines)
    header = ("    # Subtest: s", "    # module: m", "    1..3")
    assert layout.case_lines(lines, ("s", "first")) == (*header, *lines[6:8])
    second = layout.case_lines(lines, ("s", "second"))
    assert second == (*header, *lines[9:11])
    assert not [line for line in second if "first" in line or "between" in line]


def test_an_over_long_line_is_cut_once_and_says_so() -> None:
    raw = "    ok 1 x" + " " * 10_000 + "y\x1b[0m"
    line = console_line(raw)
    assert line.startswith("    ok 1 x   ") and len(line) < MAX_LINE + 100
    assert line.endswith(f"[pytest-kunit: line cut at {MAX_LINE} characters, {len(raw) - MAX_LINE} more dropped]")
    assert console_line("short\x1b[0m") == "short"


def test_a_flooding_guest_keeps_the_head_and_the_tail_and_says_what_was_dropped() -> None:
    lines: list[str] = []
    console_map = ConsoleMap()
    console = BoundedConsole(lines, console_map, limit=1000)
    console.append("KTAP version 1")
    console.append("    # Subtest: s")
    console_map.note(ktap.SuiteStarted("s"), 1, lines[1], 0.0)
    for number in range(5000):
        console.append(f"flood {number:06d}")
        if number == 4990:
            console_map.note(ktap.CaseResult("s", "c", ktap.Status.PASSED), len(lines) - 1, lines[-1], 1.0)
    assert sum(len(line) for line in lines) <= 1000 + 200
    assert lines[:2] == ["KTAP version 1", "    # Subtest: s"]
    assert lines[-1] == "flood 004999"
    note = next(line for line in lines if line.startswith("[pytest-kunit:"))
    assert f"{console.dropped_lines} console lines" in note and console.dropped_lines > 4000
    # The map still points at the same lines.
    assert lines[console_map.headers["s"]] == "    # Subtest: s"
    assert lines[console_map.results[("s", "c")]] == "flood 004990"


@pytest.mark.parametrize("character", ["\u200b", "\u200f", "\u2028", "\u2029", "\ufeff", "\u2060"])
def test_a_report_shows_invisible_and_line_separating_characters_as_code_points(character: str) -> None:
    result = ktap.CaseResult(
        "s", f"c{character}", ktap.Status.FAILED, diagnostics=(f"    # c: EXPECTATION FAILED at a.c:1 {character}x",)
    )
    text = render_failure(Outcome(result, Path("console.log")))
    assert character not in text
    assert f"<U+{ord(character):04X}>" in text and text.splitlines()[0].startswith("s.c<U+")
    assert visible("plain ünïcode") == "plain ünïcode"
