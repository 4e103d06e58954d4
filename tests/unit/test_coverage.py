"""Reading coverage counters back from a console (the marker-delimited base64 tar the initramfs's /init prints) and
the terminal summary."""

from __future__ import annotations

import base64
import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from pytest_kunit.findings import archive, coverage
from pytest_kunit.findings.coverage_report import META, CoverageReport, FileCoverage, save_boot
from pytest_kunit.findings.guest_init import GCOV_BEGIN, GCOV_END


def tar_of(files: dict[str, bytes], links: dict[str, tuple[bytes, str]] | None = None) -> bytes:
    """A tar of regular files by name (under `./`), and of other members: name -> (tar type, link target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, (kind, target) in (links or {}).items():
            info = tarfile.TarInfo("./" + name)
            info.type, info.linkname = kind, target
            archive.addfile(info)
    return buffer.getvalue()


def console_of(packed: bytes, noise: bool = False) -> list[str]:
    encoded = base64.b64encode(packed).decode()
    lines = [encoded[index : index + 76] for index in range(0, len(encoded), 76)]
    if noise:
        lines.insert(1, "[   12.345678] random: crng init done")  # a kernel line in the middle
    return ["    ok 1 last", "ok 1 suite", GCOV_BEGIN, *lines, GCOV_END, "reboot: Restarting system"]


def console_with(files: dict[str, bytes], noise: bool = False) -> list[str]:
    return console_of(gzip.compress(tar_of(files)), noise)


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
    extracted = coverage.unpack(tar, build, tmp_path / "out")
    assert extracted.files == [(tmp_path / "out/lib/kunit/test.gcda").resolve()]
    assert len(extracted.refused) == 2  # outside the build directory, and leaving it by `..`
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


@pytest.fixture
def build(tmp_path: Path) -> Path:
    (tmp_path / "build/lib").mkdir(parents=True)
    return tmp_path / "build"


def unpacked(
    tmp_path: Path, build: Path, files: dict[str, bytes], links: dict[str, tuple[bytes, str]] | None = None
) -> tuple[archive.Extracted, list[Path]]:
    """What a guest printing this tar achieves: the result, and every file now under tmp_path outside the build."""
    extracted = coverage.unpack(tar_of(files, links), build, tmp_path / "out")
    return extracted, sorted(path for path in tmp_path.rglob("*") if build not in path.parents and path != build)


def test_a_guest_cannot_write_outside_the_output(tmp_path: Path, build: Path) -> None:
    """The build prefix followed by an absolute name (`PREFIX//abs/x.gcda`), `..`, links and devices: each refused
    by name, and nothing appears outside `out/` (before the fix, the absolute one was created with its directories)."""
    prefix = build.resolve().as_posix().lstrip("/")
    victim = tmp_path / "victim"
    hostile = {
        f"{prefix}/{victim.as_posix()}/planted.gcda": b"abs",
        f"{prefix}/lib/../../../escaped.gcda": b"dotdot",
        f"{prefix}/lib/notes.gcno": b"not counters",
        f"{prefix}/lib/good.gcda": b"good",
    }
    links = {
        f"{prefix}/lib/sym.gcda": (tarfile.SYMTYPE, "/etc/passwd"),
        f"{prefix}/lib/hard.gcda": (tarfile.LNKTYPE, "/etc/passwd"),
        f"{prefix}/lib/dev.gcda": (tarfile.CHRTYPE, ""),
        f"{prefix}/lib/fifo.gcda": (tarfile.FIFOTYPE, ""),
    }
    extracted, outside = unpacked(tmp_path, build, hostile, links)
    assert [path.name for path in extracted.files] == ["good.gcda"]
    assert not victim.exists() and not (tmp_path / "escaped.gcda").exists()
    assert all(path == tmp_path / "out" or tmp_path / "out" in path.parents for path in outside), outside
    assert {entry.split(":")[0].rsplit("/", 1)[-1] for entry in extracted.refused} == {
        "planted.gcda",
        "escaped.gcda",
        "notes.gcno",
        "sym.gcda",
        "hard.gcda",
        "dev.gcda",
        "fifo.gcda",
    }
    assert all(": " in entry for entry in extracted.refused)  # each says why


def test_a_planted_link_in_the_output_is_not_followed(tmp_path: Path, build: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out/lib").symlink_to(tmp_path / "elsewhere")
    prefix = build.resolve().as_posix().lstrip("/")
    extracted, _ = unpacked(tmp_path, build, {f"{prefix}/lib/x.gcda": b"x"})
    assert extracted.files == [] and not list((tmp_path / "elsewhere").iterdir())
    assert extracted.refused == [f"./{prefix}/lib/x.gcda: a directory on its way is a link or a file"]


def test_a_gzip_bomb_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small console that inflates past the bound (85 KiB of base64 became 64 MiB before the fix) is refused."""
    monkeypatch.setattr(coverage, "LIMITS", archive.Limits(max_bytes=1 << 20, max_members=10))
    bomb = gzip.compress(b"\0" * (64 << 20))
    console = console_of(bomb)
    assert sum(map(len, console)) < 150_000
    with pytest.raises(archive.UnsafeArchive, match="more than 1048576 bytes"):
        coverage.counters(console)


def test_too_many_members_are_refused(tmp_path: Path, build: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coverage, "LIMITS", archive.Limits(max_bytes=1 << 20, max_members=10))
    prefix = build.resolve().as_posix().lstrip("/")
    with pytest.raises(archive.UnsafeArchive, match="more than 10 members"):
        unpacked(tmp_path, build, {f"{prefix}/lib/f{index}.gcda": b"" for index in range(11)})


def test_refused_counters_are_named_in_the_boots_record(tmp_path: Path, build: Path) -> None:
    prefix = build.resolve().as_posix().lstrip("/")
    console = console_with({f"{prefix}//etc/x.gcda": b"abs", f"{prefix}/lib/good.gcda": b"good"})
    save_boot(console, [], build, tmp_path / "tree", tmp_path / "boot")
    meta = json.loads((tmp_path / "boot" / META).read_text())
    assert meta["files"] == 1 and meta["refused"] == [f"./{prefix}//etc/x.gcda: outside the directory it must lie in"]
    assert not Path("/etc/x.gcda").exists()


def test_names_the_file_system_refuses_are_refused_by_name_not_raised(tmp_path: Path, build: Path) -> None:
    """A directory of counters where a counter's notes link goes (FileExistsError before the fix) and a name too long
    for the file system (ENAMETOOLONG before the fix): each refused by name, the rest unpacked."""
    (build / "lib/test.gcno").write_bytes(b"notes")
    prefix = build.resolve().as_posix().lstrip("/")
    long_name = "a" * 300 + ".gcda"
    hostile = {
        f"{prefix}/lib/test.gcno/x.gcda": b"in a directory named as the notes",
        f"{prefix}/lib/test.gcda": b"counts",
        f"{prefix}/lib/{long_name}": b"long",
        f"{prefix}/lib/good.gcda": b"good",
    }
    extracted, _ = unpacked(tmp_path, build, hostile)
    assert sorted(path.name for path in extracted.files) == ["good.gcda", "x.gcda"]
    assert not (tmp_path / "out/lib/test.gcda").exists()  # gcov would fail on it, and gcovr on the whole report
    assert extracted.refused == [
        f"./{prefix}/lib/{long_name}: not written (File name too long)",
        "lib/test.gcda: its notes' link not made (File exists)",
    ]


def test_a_boot_whose_counters_the_file_system_refuses_is_recorded_once(tmp_path: Path, build: Path) -> None:
    """save_boot runs after every boot, before its cases' outcomes are recorded: an error raised there made every
    case of the batch boot again and fail again."""
    prefix = build.resolve().as_posix().lstrip("/")
    console = console_with({f"{prefix}/lib/{'b' * 300}.gcda": b"long", f"{prefix}/lib/good.gcda": b"good"})
    save_boot(console, [], build, tmp_path / "tree", tmp_path / "boot")
    meta = json.loads((tmp_path / "boot" / META).read_text())
    assert meta["files"] == 1
    (refused,) = meta["refused"]
    assert refused.endswith(".gcda: not written (File name too long)")
