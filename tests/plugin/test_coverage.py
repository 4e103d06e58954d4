"""--kunit-coverage on the fake tree: its kernel is built with GCOV options and boots with the coverage initramfs; the
fake guest's counters come from a program built with gcc --coverage (tests/fake/tree/lib/kunit/fake-coverage.c), so
gcovr really runs: the report covers what ran (-k), sums xdist workers' boots, and says why when it cannot be made."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import FakeKernel


def summary_percent(text: str, name: str) -> float:
    line = next(line for line in text.splitlines() if line.endswith(f" {name}"))
    return float(line.split("%")[0])


def test_a_report_of_what_ran(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    report = project.path / "cov"
    result = project.runpytest(
        *fake_kernel.options("--kunit-coverage", str(report), "-k", "not failing and not params")
    )
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(
        [
            f"coverage of 1 boot(s): {report / 'index.html'} (also coverage.xml, coverage.lcov, counters/)",
            "*% *all tested files",
            "*% *lib/kunit/fake-coverage.c",
        ]
    )
    assert {"index.html", "coverage.xml", "coverage.lcov"} <= {path.name for path in report.iterdir()}
    # Four cases ran: every line but the one for more than five.
    assert summary_percent(result.stdout.str(), "lib/kunit/fake-coverage.c") == pytest.approx(100 * 12 / 13, 0.01)
    cobertura = ET.parse(report / "coverage.xml").getroot()
    assert float(cobertura.get("line-rate", "0")) == pytest.approx(12 / 13, 0.01)
    (boot,) = [boot for boot in fake_kernel.test_boots()]
    assert "kunit_shutdown=none" in boot["append"] and "pytest_kunit.gcov=lib/kunit" in boot["append"]
    assert "-initrd" in boot["argv"]
    # The counters of each boot are not left behind in the cache, but kept with the report, where gcov itself reads
    # them: it counts the same lines.
    assert not list(fake_kernel.cache.glob("coverage/runs/*/*"))
    (gcda,) = report.glob("counters/*/gcda/lib/kunit/fake-coverage.gcda")
    assert gcov_lines(gcda) == (12, 13)


def gcov_lines(gcda: Path) -> tuple[int, int]:
    """(covered, total) lines of the source file as gcov itself counts them from these counters."""
    said = subprocess.run(
        ["gcov", "-n", "-o", str(gcda.parent), str(gcda)], capture_output=True, text=True, check=True, cwd=gcda.parent
    ).stdout
    match = re.search(r"File '[^']*fake-coverage\.c'\nLines executed:([\d.]+)% of (\d+)", said)
    assert match, said
    total = int(match[2])
    return round(float(match[1]) * total / 100), total


def test_selection_covers_less(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-coverage", "-k", "example_simple_test"))
    result.assert_outcomes(passed=1)
    assert summary_percent(result.stdout.str(), "lib/kunit/fake-coverage.c") == pytest.approx(100 * 10 / 13, 0.01)
    assert (project.path / "kunit-coverage" / "index.html").is_file()  # the default directory


def test_xdist_workers_boots_are_summed(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-n", "2", "-p", "xdist", "--kunit-coverage=cov"))
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["coverage of 2 boot(s): *"])
    # One worker ran the four example cases, the other the two of `other`: together all but one line.
    assert summary_percent(result.stdout.str(), "lib/kunit/fake-coverage.c") == pytest.approx(100 * 12 / 13, 0.01)


def test_a_hostile_worker_cannot_move_a_directory_into_the_report(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("kept\n")
    # A worker that names a directory of the controller's among its boots (what a changed worker could send).
    project.makeconftest(
        f"""
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(session):
            if hasattr(session.config, "workeroutput"):
                session.config.workeroutput["kunit_coverage_boots"] = [{str(victim)!r}]
        """
    )
    result = project.runpytest(*fake_kernel.options("-n", "1", "-p", "xdist", "--kunit-coverage=cov"))
    result.stdout.fnmatch_lines(["*malformed coverage boots: each must be one name, never a path*"])
    assert (victim / "precious").read_text() == "kept\n"
    assert not (project.path / "cov" / "counters").exists()


def test_a_guest_that_dies_is_counted_missing(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "second", outcome="panic")
    result = project.runpytest(*fake_kernel.options("--kunit-coverage=cov", "-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["no coverage report: No boot of this run copied GCOV counters out of its guest*"])


def test_coverage_builds_a_kernel_of_its_own(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options("-k", "example_simple_test")).assert_outcomes(passed=1)
    result = project.runpytest(*fake_kernel.options("--kunit-coverage=cov", "-k", "example_simple_test"))
    result.stdout.fnmatch_lines(["*kernel builds: 1 *"])
    dotconfigs = [path.read_text() for path in fake_kernel.cache.glob("build/*/.config")]
    assert sorted("CONFIG_GCOV_KERNEL=y" in text for text in dotconfigs) == [False, True]


def test_a_fragment_as_the_directory_is_a_usage_error(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("--kunit-coverage", "kunit.kunitconfig"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kunit-coverage: 'kunit.kunitconfig' is a file, not a report directory*"])


def test_ini_twin(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.makeini("[pytest]\nkunit_coverage = reports/kunit\n")
    result = project.runpytest(*fake_kernel.options("-k", "example_simple_test"))
    result.assert_outcomes(passed=1)
    assert (project.path / "reports" / "kunit" / "index.html").is_file()


def test_from_another_directory(project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fragment = elsewhere / "mine.kunitconfig"
    fragment.write_text("CONFIG_KUNIT=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\n")
    result = project.runpytest(*fake_kernel.options("--kunit-coverage=out", str(fragment), "-k", "simple"))
    result.assert_outcomes(passed=1)
    assert (project.path / "out" / "coverage.lcov").read_text().count("SF:") == 1


def test_a_report_leaves_the_tree_as_built(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    # gcovr runs gcov in a working directory and drops its outputs and a lock file there: in the tree, that moved
    # the time of the tree's root, and every later run rebuilt the kernel.
    first = project.runpytest(*fake_kernel.options("--kunit-coverage=cov", "-k", "example_simple_test"))
    first.assert_outcomes(passed=1)
    again = project.runpytest(*fake_kernel.options("--kunit-coverage=cov", "-k", "example_simple_test"))
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*kernel builds: 0 *"])
