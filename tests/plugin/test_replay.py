"""--kunit-replay: recorded consoles (tests/data/) read as a boot's, with no build and no guest: the cases their KTAP
reports collected under the console file (or the fragment named), each with a live run's outcome, failure text and
crash report, in JUnit and KCIDB too; a console cut short gives errors for the cases it never finished."""

from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import no_traceback

DATA = Path(__file__).resolve().parent.parent / "data"


def replay(pytester: pytest.Pytester, console: str, *extra: str) -> pytest.RunResult:
    """`pytest --kunit --kunit-replay NAME` on a copy of tests/data/NAME in the pytester directory."""
    shutil.copy(DATA / console, pytester.path / console)
    return pytester.runpytest(*options(pytester, "--kunit-replay", console, *extra))


def options(pytester: pytest.Pytester, *extra: str) -> list[str]:
    # No kernel source, QEMU or cache of a live run: a replay needs none.
    cache = pytester.path / "cache"
    plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark"]
    return [*plugins, "--kunit", f"--kunit-cache-dir={cache}", *extra]


def junit_cases(path: Path) -> dict[str, str]:
    """Each JUnit test case (classname.name) and how it ended: passed, failure, skipped or error."""
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        ended = [child.tag for child in case if child.tag in ("failure", "skipped", "error")]
        cases[f"{case.get('classname')}.{case.get('name')}"] = ended[0] if ended else "passed"
    return cases


def test_a_whole_run_replayed_under_the_console_file(pytester: pytest.Pytester) -> None:
    result = replay(pytester, "kunit-6.1.192-all.log", "--junitxml=out.xml", "-v")
    result.assert_outcomes(passed=22, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "kunit: replaying the console */kunit-6.1.192-all.log (no build, no boot); arch x86_64",
            "kunit-6.1.192-all.log::kunit_executor_test::parse_filter_test PASSED*",
            "kunit-6.1.192-all.log::example::example_simple_test PASSED*",
        ]
    )
    cases = junit_cases(pytester.path / "out.xml")
    assert len(cases) == 24
    assert cases["kunit-6.1.192-all.log.example.example_skip_test"] == "skipped"
    assert not any((pytester.path / "cache" / "build").iterdir())


def test_failures_under_the_fragment_named_and_k_selects(pytester: pytest.Pytester) -> None:
    pytester.makefile(".kunitconfig", kunit="CONFIG_KUNIT=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\n")
    result = replay(pytester, "example-failing-6.1.192.log", "kunit.kunitconfig", "-k", "failing", "--junitxml=j.xml")
    result.assert_outcomes(failed=3, deselected=5)
    result.stdout.fnmatch_lines(
        [
            "example.example_failing_test FAILED at lib/kunit/kunit-example-test.c:*",
            "*EXPECTATION FAILED at lib/kunit/kunit-example-test.c:*",
            "FAILED kunit.kunitconfig::example::example_failing_test - *",
        ]
    )
    cases = junit_cases(pytester.path / "j.xml")
    assert cases == {
        "kunit.kunitconfig.example.example_failing_test": "failure",
        "kunit.kunitconfig.example.example_assert_failing_test": "failure",
        "kunit.kunitconfig.example.example_params_failing_test": "failure",
    }


def test_crashes_and_timeouts_as_a_live_boot_reports_them(pytester: pytest.Pytester) -> None:
    result = replay(pytester, "synthetic-crash-timeout.log")
    result.assert_outcomes(passed=1, failed=4, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "fragile.fragile_crash CRASHED: the test thread died",
            "kernel crash report:",
            "BUG: kernel NULL pointer dereference, address: 0000000000000008",
            "*",
            "fragile.fragile_hang TIMED OUT",
        ]
    )


def test_a_console_cut_short_gives_errors_for_the_unfinished_cases(pytester: pytest.Pytester) -> None:
    result = replay(pytester, "synthetic-truncated-oops.log", "--junitxml=j.xml")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of oops-suite.(case 2 of 3)*",
            "oops-suite.(case 2 of 3) NO RESULT*",
            "The console */synthetic-truncated-oops.log ends inside suite oops-suite, before this case's result "
            "line: its plan announced 3 cases, 1 of them reported.",
            "kernel crash report:",
            "BUG: kernel NULL pointer dereference, address: 0000000000000000",
        ]
    )
    cases = junit_cases(pytester.path / "j.xml")
    assert cases["synthetic-truncated-oops.log.oops-suite.(case 3 of 3)"] == "error"
    assert cases["synthetic-truncated-oops.log.oops-suite.oops_fine"] == "passed"


def test_sanitizer_reports_fail_the_cases_they_were_printed_in(pytester: pytest.Pytester) -> None:
    result = replay(pytester, "synthetic-sanitizer-reports-6.1.log")
    result.assert_outcomes(passed=2, failed=4)
    result.stdout.fnmatch_lines(["*sanitizer report while this case ran*"])


def test_kcidb_of_a_replay(pytester: pytest.Pytester) -> None:
    replay(pytester, "example-failing-6.1.192.log", "--kunit-kcidb=kcidb.json").assert_outcomes(
        passed=3, failed=3, skipped=2
    )
    report = json.loads((pytester.path / "kcidb.json").read_text())
    builds = {build["id"] for build in report["builds"]}
    assert len(report["tests"]) == 8
    assert {test["build_id"] for test in report["tests"]} == builds
    assert {test["status"] for test in report["tests"]} == {"PASS", "FAIL", "SKIP"}


def test_replay_from_the_ini_file(pytester: pytest.Pytester) -> None:
    shutil.copy(DATA / "kunit-6.1.192-filter-simple.log", pytester.path / "console.log")
    pytester.makeini("[pytest]\nkunit_replay = console.log\n")
    pytester.runpytest(*options(pytester)).assert_outcomes(passed=1)


def test_replay_from_stdin(pytester: pytest.Pytester) -> None:
    console = (DATA / "kunit-6.1.192-filter-simple.log").read_bytes()
    result = pytester.run(
        sys.executable, "-m", "pytest", *options(pytester, "--kunit-replay", "-", "-v"), stdin=console
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["stdin::example::example_simple_test PASSED*"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "*--kunit-replay: 'console.log' is not a file: name a saved console, or - for stdin"),
        (b"Linux version 6.1\nno KUnit here\n", "*The console */console.log holds no KTAP version line*"),
        (b"\x1f\x8b\x08\x00\0\0binary", "*The console */console.log holds binary data (NUL bytes)*"),
    ],
)
def test_a_bad_console_is_a_usage_error(pytester: pytest.Pytester, content: bytes | None, message: str) -> None:
    if content is not None:
        (pytester.path / "console.log").write_bytes(content)
    result = pytester.runpytest(*options(pytester, "--kunit-replay", "console.log"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    no_traceback(result)


def test_one_console_serves_one_fragment(pytester: pytest.Pytester) -> None:
    pytester.makefile(".kunitconfig", one="CONFIG_KUNIT=y\n", two="CONFIG_KUNIT=y\n")
    result = replay(pytester, "kunit-6.1.192-filter-simple.log", "one.kunitconfig", "two.kunitconfig")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*its cases were collected under one.kunitconfig already; two.kunitconfig cannot*"])


def test_replay_runs_in_one_process(pytester: pytest.Pytester) -> None:
    result = replay(pytester, "kunit-6.1.192-filter-simple.log", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-replay reads one console in one process: run it without -n*"])


def test_replay_reads_one_architecture(pytester: pytest.Pytester) -> None:
    """One console is one boot of one architecture's kernel: a matrix would collect its cases once per architecture."""
    result = replay(pytester, "kunit-6.1.192-filter-simple.log", "--kunit-arch=x86_64,arm64")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-replay reads one boot's console, of one architecture*"])


def test_a_replay_selecting_nothing_gives_no_hint_about_the_default_paths(pytester: pytest.Pytester) -> None:
    """The console is what a replay collects, not the directory pytest would collect without one: a -k matching no case
    there says nothing about that directory's fragments."""
    result = replay(pytester, "kunit-6.1.192-all.log", "-k", "no_such_case")
    result.assert_outcomes()
    assert "no kunitconfig fragment in" not in result.stdout.str()
