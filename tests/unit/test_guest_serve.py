"""/init's serve loop (findings/guest_init.py) run by the host's busybox, as the guest runs it: a module's file sent
in pieces, as kept.py sends it, arrives whole; a suite run again is a write to its run file, in a directory laid out
as KUnit's debugfs one. `load` runs here with no module named: it would load into the host's kernel."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pytest_kunit.findings.guest_init import BATCH_DONE, CHUNK_TAKEN, NO_RUN_FILE, PUT_DONE, SERVE_COMMANDS, TAINTED
from pytest_kunit.guest.initramfs import BUSYBOX
from pytest_kunit.guest.kept_protocol import loadable, put_command


def serve(tmp_path: Path, commands: str) -> list[str]:
    modules, scratch = tmp_path / "modules", tmp_path / "scratch"
    modules.mkdir()
    scratch.mkdir()
    glob = tmp_path / "filter_glob"  # KUnit's parameter file in the guest
    suites = tmp_path / "kunit"  # KUnit's debugfs directory: a directory a suite
    script = f"B={BUSYBOX}\n{SERVE_COMMANDS}\nserve_commands {modules} {scratch} {glob} {suites}\n"
    done = subprocess.run(
        [str(BUSYBOX), "sh", "-c", script], input=commands, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.splitlines()


def test_a_module_sent_in_chunks_arrives_whole(tmp_path: Path) -> None:
    data = os.urandom(60_000)  # no gzip shrinks it: several chunks
    pieces = put_command("some_test", data)
    answers = serve(tmp_path, "".join(pieces))
    assert len(pieces) > 3
    assert answers == [CHUNK_TAKEN] * (len(pieces) - 1) + [f"{PUT_DONE} some_test"]
    assert (tmp_path / "modules" / "some_test.ko").read_bytes() == data


def test_a_module_that_arrives_broken_is_said_to_have_failed(tmp_path: Path) -> None:
    answers = serve(tmp_path, "put some_test\nnot base64 at all!\nend\n")
    assert answers == ["pytest-kunit: put failed: some_test"]


def test_a_module_is_sent_without_its_debug_information(tmp_path: Path) -> None:
    source = tmp_path / "mod.c"
    source.write_text("int answer(int x) { return x * 42; }\n")
    module = tmp_path / "mod.ko"  # a relocatable object, as a .ko is
    subprocess.run(["gcc", "-g", "-c", str(source), "-o", str(module)], check=True)
    sent = loadable(module, "")
    assert b".debug_info" in module.read_bytes() and b".debug_info" not in sent
    assert len(sent) < len(module.read_bytes())


def test_a_file_objcopy_cannot_read_is_sent_as_built(tmp_path: Path) -> None:
    module = tmp_path / "fake.ko"
    module.write_bytes(b"FAKE-MODULE:{}:END")
    assert loadable(module, "") == module.read_bytes()


def test_a_batch_writes_its_glob_to_kunits_parameter_without_a_newline(tmp_path: Path) -> None:
    # A charp parameter keeps what is written whole: "example*\n" would match no suite. No module is named: nothing
    # is loaded on the host.
    answers = serve(tmp_path, "load abc example*\n")
    assert (tmp_path / "filter_glob").read_bytes() == b"example*"
    assert answers[-1] == "pytest-kunit: batch done abc" and answers[0].startswith("pytest-kunit: tainted ")


def test_a_batch_without_a_glob_leaves_the_parameter_alone(tmp_path: Path) -> None:
    answers = serve(tmp_path, "load abc -\n")
    assert not (tmp_path / "filter_glob").exists()
    assert answers[-1] == "pytest-kunit: batch done abc"


def debugfs_suites(tmp_path: Path, runnable: list[str], init: list[str]) -> Path:
    """KUnit's debugfs directory as the series' kernel makes it: a results file a suite, a run file but for a suite
    in init memory. The runs a write makes are counted in the file itself (a real one runs the suite)."""
    for name in runnable + init:
        (tmp_path / "kunit" / name).mkdir(parents=True)
        (tmp_path / "kunit" / name / "results").write_text("")
        if name in runnable:
            (tmp_path / "kunit" / name / "run").write_text("")
    return tmp_path / "kunit"


def test_a_run_writes_to_each_suite_s_run_file_then_says_the_taint(tmp_path: Path) -> None:
    suites = debugfs_suites(tmp_path, ["example", "kunit_mock", "other"], [])
    answers = serve(tmp_path, "run n1 - example,kunit_mock\n")
    assert (suites / "example" / "run").read_text() == (suites / "kunit_mock" / "run").read_text() == "1\n"
    assert (suites / "other" / "run").read_text() == ""
    assert len(answers) == 2 and answers[0].startswith(f"{TAINTED} ") and answers[1] == f"{BATCH_DONE} n1"


def test_a_check_names_each_suite_without_a_run_file_and_runs_nothing(tmp_path: Path) -> None:
    suites = debugfs_suites(tmp_path, ["example"], ["of_base", "of_dynamic"])
    answers = serve(tmp_path, "check n1 - of_base,example,of_dynamic\n")
    assert answers == [f"{NO_RUN_FILE} of_base", f"{NO_RUN_FILE} of_dynamic", f"{BATCH_DONE} n1"]
    assert (suites / "example" / "run").read_text() == ""


def test_a_run_skips_a_suite_without_a_run_file_saying_so(tmp_path: Path) -> None:
    suites = debugfs_suites(tmp_path, ["example"], ["of_base"])
    answers = serve(tmp_path, "run n1 - of_base,example\n")
    assert answers[0] == f"{NO_RUN_FILE} of_base" and answers[-1] == f"{BATCH_DONE} n1"
    assert (suites / "example" / "run").read_text() == "1\n"
