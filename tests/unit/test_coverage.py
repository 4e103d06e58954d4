"""Reading coverage counters back from a console (the marker-delimited base64 tar the initramfs's /init prints) and
the terminal summary."""

from __future__ import annotations

import base64
import gzip
import io
import tarfile
from pathlib import Path

import pytest

from pytest_kunit import coverage
from pytest_kunit.coverage_report import CoverageReport, FileCoverage
from pytest_kunit.initramfs import GCOV_BEGIN, GCOV_END


def console_with(files: dict[str, bytes], noise: bool = False) -> list[str]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    encoded = base64.b64encode(gzip.compress(buffer.getvalue())).decode()
    lines = [encoded[index : index + 76] for index in range(0, len(encoded), 76)]
    if noise:
        lines.insert(1, "[   12.345678] random: crng init done")  # a kernel line in the middle
    return ["    ok 1 last", "ok 1 suite", GCOV_BEGIN, *lines, GCOV_END, "reboot: Restarting system"]


def test_counters_are_unpacked_beside_links_to_their_notes(tmp_path: Path) -> None:
    build = tmp_path / "build"
    (build / "lib/kunit").mkdir(parents=True)
    (build / "lib/kunit/test.gcno").write_bytes(b"notes")
    prefix = build.resolve().as_posix().lstrip("/")
    console = console_with(
        {f"{prefix}/lib/kunit/test.gcda": b"counts", "elsewhere/x.gcda": b"?", f"{prefix}/../../evil.gcda": b"!"},
        noise=True,
    )
    tar = coverage.counters(console)
    assert tar is not None
    assert coverage.unpack(tar, build, tmp_path / "out") == 1
    assert (tmp_path / "out/lib/kunit/test.gcda").read_bytes() == b"counts"
    assert (tmp_path / "out/lib/kunit/test.gcno").resolve() == (build / "lib/kunit/test.gcno").resolve()


@pytest.mark.parametrize(
    "console",
    [
        ["ok 1 suite", "reboot: Restarting system"],  # no /init: the guest died or rebooted first
        [GCOV_BEGIN, "aGVsbG8="],  # cut before the end marker
        [GCOV_BEGIN, "not base64 at all!", GCOV_END],
        [GCOV_BEGIN, "aGVsbG8=", GCOV_END],  # base64, but no gzip inside
    ],
)
def test_no_counters(console: list[str]) -> None:
    assert coverage.counters(console) is None


def test_tested_dirs() -> None:
    dirs = coverage.tested_dirs(["lib/kunit/test.c", "lib/kunit/kunit-test.c", "pytest-kunit/sanitize/x.c", ""])
    assert dirs == ("lib/kunit", "pytest-kunit/sanitize")


def test_the_summary_is_short_and_best_covered_first(tmp_path: Path) -> None:
    files = tuple(FileCoverage(f"lib/f{index:02}.c", index, 40) for index in range(30))
    lines = CoverageReport(tmp_path, files, boots=2, missing=1).summary()
    assert lines[0] == f"coverage of 2 boot(s): {tmp_path / 'index.html'} (also coverage.xml, coverage.lcov, counters/)"
    assert lines[1] == "  36.2%    435/1200   all tested files"
    assert lines[2] == "  72.5%     29/40     lib/f29.c"
    assert lines[-2] == "... and 5 more files in the report"
    assert lines[-1].startswith("1 boot(s) ended before their counters were copied out")
    assert len(lines) < 30
