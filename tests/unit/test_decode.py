"""Crash reports of kernels without KALLSYMS: raw addresses named from the image's own symbol table."""

from __future__ import annotations

import stat
from pathlib import Path

from pytest_kunit.console.decode import decode_stacktrace, symbolize

NM_OUTPUT = """\
ffffffff81000000 T _text
ffffffff810b8f80 0000000000000090 t kunit_try_run_case
ffffffff810bbac0 0000000000000040 T faults_null_deref
ffffffff810bbb00 0000000000000020 T faults_pass
ffffffff810bbb20 D some_data
"""


def fake_nm(tmp_path: Path) -> str:
    script = tmp_path / "nm"
    script.write_text(f"#!/bin/sh\ncat <<'OUT'\n{NM_OUTPUT}OUT\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_raw_addresses_get_function_offset_and_size(tmp_path: Path) -> None:
    image = tmp_path / "vmlinux"
    image.write_bytes(b"\x7fELF")
    report = (
        "RIP: 0010:0xffffffff810bbaea",
        "Call Trace:",
        " <TASK>",
        " ? 0xffffffff810b8fea",
        " 0xffffffff810bbb1f",
        "RSP: 0018:ffffc90000013e58 EFLAGS: 00010246",
        " ? 0xffffffff810bbb30",
    )
    assert symbolize(report, image, fake_nm(tmp_path)) == (
        "RIP: 0010:faults_null_deref+0x2a/0x40",
        "Call Trace:",
        " <TASK>",
        " ? kunit_try_run_case+0x6a/0x90",
        " faults_pass+0x1f/0x20",
        # Register values are not addresses in text: left alone; so is an address past the last function's end.
        "RSP: 0018:ffffc90000013e58 EFLAGS: 00010246",
        " ? 0xffffffff810bbb30",
    )


def test_named_reports_and_unreadable_images_are_left_as_they_are(tmp_path: Path) -> None:
    named = ("RIP: 0010:faults_null_deref+0x2a/0x40",)
    assert symbolize(named, tmp_path / "missing") == named
    raw = ("RIP: 0010:0xffffffff810bbaea",)
    assert symbolize(raw, tmp_path / "missing") == raw
    (tmp_path / "vmlinux").write_bytes(b"")
    assert symbolize(raw, tmp_path / "vmlinux", str(tmp_path / "no-nm")) == raw


def test_a_failure_shows_the_oops_once_decoded() -> None:
    from pytest_kunit.console.ktap import CaseResult, Status
    from pytest_kunit.face.report import render_failure
    from pytest_kunit.findings.outcomes import Outcome

    raw = ("BUG: kernel NULL pointer dereference, address: 0000000000000000", "RIP: 0010:0xffffffff810bbaea")
    diagnostics = ("# faults_null_deref: about to dereference NULL", *raw, "# faults_null_deref: test case crashed")
    decoded = ("BUG: kernel NULL pointer dereference, address: 0000000000000000", "RIP: 0010:faults_null_deref+0x2a")
    outcome = Outcome(
        CaseResult("faults", "faults_null_deref", Status.CRASHED, "", diagnostics), Path("c.log"), decoded
    )
    text = render_failure(outcome)
    assert text.count("BUG: kernel NULL pointer dereference") == 1
    assert "about to dereference NULL" in text and "faults_null_deref+0x2a" in text
    assert "0xffffffff810bbaea" not in text


ARM64_NM_OUTPUT = """\
ffff800008010000 T _text
ffff8000083c1a00 0000000000000014 T faults_null_dereference
ffff8000083c1a00 t $x
ffff8000083c1a10 d $d
ffff8000083c1a14 0000000000000010 T faults_pass_after_null_dereference
ffff8000083c1a24 t $x
"""


def test_arm64_mapping_symbols_name_no_function(tmp_path: Path) -> None:
    # aarch64's nm lists `$x` (code starts) and `$d` (data starts) at the same addresses as functions: a frame
    # named after one would read `$x+0x8`.
    script = tmp_path / "aarch64-linux-gnu-nm"
    script.write_text(f"#!/bin/sh\ncat <<'OUT'\n{ARM64_NM_OUTPUT}OUT\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    image = tmp_path / "vmlinux"
    image.write_bytes(b"\x7fELF")
    report = ("pc : 0xffff8000083c1a08", "lr : 0xffff8000083c1a18", "Call trace:", " 0xffff8000083c1a08")
    assert symbolize(report, image, str(script)) == (
        "pc : faults_null_dereference+0x8/0x14",
        "lr : faults_pass_after_null_dereference+0x4/0x10",
        "Call trace:",
        " faults_null_dereference+0x8/0x14",
    )


def test_file_names_recorded_relative_to_the_build_directory_read_as_the_trees(tmp_path: Path) -> None:
    """Objects compiled through the compiler wrapper record the build directory as `.` (so that no object names a
    tree): their frames read `lib/x.c:42`, as decode_stacktrace.sh prints an unwrapped build's absolute names."""
    tree, build = tmp_path / "tree", tmp_path / "build"
    (tree / "scripts").mkdir(parents=True)
    build.mkdir()
    (build / "vmlinux").write_bytes(b"")
    frames = "(./lib/kunit/test.c:402)|(././lib/bug.c:195 ./lib/bug.c:219)|(lib/x.c:1)|(./no-line)"
    (tree / "scripts" / "decode_stacktrace.sh").write_text(f'while read -r line; do echo "$line {frames}"; done\n')
    decoded = decode_stacktrace(("Call Trace:",), build, tree, cross_compile=f"{tmp_path}/none-")
    assert decoded == ("Call Trace: (lib/kunit/test.c:402)|(lib/bug.c:195 lib/bug.c:219)|(lib/x.c:1)|(./no-line)",)
