"""The coverage initramfs and reading counters back from a console: the cpio archive the kernel unpacks, the /init
script busybox runs, the marker-delimited base64 tar, and the terminal summary."""

from __future__ import annotations

import base64
import gzip
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from pytest_kunit import coverage
from pytest_kunit.coverage_report import CoverageReport, FileCoverage

needs_busybox = pytest.mark.skipif(not coverage.BUSYBOX.is_file(), reason="busybox-static is not installed")


@needs_busybox
def test_the_initramfs_holds_init_busybox_and_a_console(tmp_path: Path) -> None:
    path = coverage.initramfs(tmp_path)
    assert coverage.initramfs(tmp_path) == path  # built once
    listing = subprocess.run(
        [str(coverage.BUSYBOX), "cpio", "-tv"], input=path.read_bytes(), capture_output=True, check=True
    ).stdout.decode()
    assert "init" in listing and "bin/busybox" in listing
    assert any(line.startswith("crw") and "dev/console" in line for line in listing.splitlines())


@needs_busybox
def test_the_init_script_parses() -> None:
    subprocess.run([str(coverage.BUSYBOX), "sh", "-n", "-c", coverage.INIT], check=True)


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
    return ["    ok 1 last", "ok 1 suite", coverage.BEGIN, *lines, coverage.END, "reboot: Restarting system"]


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
        [coverage.BEGIN, "aGVsbG8="],  # cut before the end marker
        [coverage.BEGIN, "not base64 at all!", coverage.END],
        [coverage.BEGIN, "aGVsbG8=", coverage.END],  # base64, but no gzip inside
    ],
)
def test_no_counters(console: list[str]) -> None:
    assert coverage.counters(console) is None


def test_tested_dirs_and_boot_arguments() -> None:
    dirs = coverage.tested_dirs(["lib/kunit/test.c", "lib/kunit/kunit-test.c", "pytest-kunit/sanitize/x.c", ""])
    assert dirs == ("lib/kunit", "pytest-kunit/sanitize")
    assert coverage.kernel_args(dirs) == ("kunit_shutdown=none", "pytest_kunit.gcov=lib/kunit,pytest-kunit/sanitize")
    assert coverage.kernel_args(()) == ("kunit_shutdown=none", "pytest_kunit.gcov=all")


def test_the_summary_is_short_and_best_covered_first(tmp_path: Path) -> None:
    files = tuple(FileCoverage(f"lib/f{index:02}.c", index, 40) for index in range(30))
    lines = CoverageReport(tmp_path, files, boots=2, missing=1).summary()
    assert lines[0] == f"coverage of 2 boot(s): {tmp_path / 'index.html'} (also coverage.xml, coverage.lcov, counters/)"
    assert lines[1] == "  36.2%    435/1200   all tested files"
    assert lines[2] == "  72.5%     29/40     lib/f29.c"
    assert lines[-2] == "... and 5 more files in the report"
    assert lines[-1].startswith("1 boot(s) ended before their counters were copied out")
    assert len(lines) < 30
