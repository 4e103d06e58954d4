"""/init's serve loop (findings/guest_init.py) run by the host's busybox, as the guest runs it: a module's file sent
in pieces, as kept.py sends it, arrives whole. Only `put` runs here: `load` would load into the host's kernel."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pytest_kunit.findings.guest_init import CHUNK_TAKEN, PUT_DONE, SERVE_COMMANDS
from pytest_kunit.guest.initramfs import BUSYBOX
from pytest_kunit.guest.kept_protocol import loadable, put_command


def serve(tmp_path: Path, commands: str) -> list[str]:
    modules, scratch = tmp_path / "modules", tmp_path / "scratch"
    modules.mkdir()
    scratch.mkdir()
    glob = tmp_path / "filter_glob"  # KUnit's parameter file in the guest
    script = f"B={BUSYBOX}\n{SERVE_COMMANDS}\nserve_commands {modules} {scratch} {glob}\n"
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
