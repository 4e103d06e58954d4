"""make's runs: the build's step estimate (a step count a killed build left half-written is no count at all), its
deadline, a path-prefix cross compiler run by name, and what of a developer's shell reaches make."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import pytest

from pytest_kunit.arch import ARCHES
from pytest_kunit.errors import BuildError, KunitWarning
from pytest_kunit.kernel import makerun
from pytest_kunit.kernel.makerun import CROSS_TOOLS, STEPS, Make, _expected_steps


def make_in(tmp_path: Path, *options: str, timeout: float = 0) -> Make:
    build = tmp_path / "build"
    build.mkdir(exist_ok=True)
    return Make(tmp_path / "src", build, ARCHES["x86_64"], 2, build / "build.log", {}, options, timeout=timeout)


@pytest.mark.parametrize("damage", ["", "12\x00", "  ", "-3"])
def test_a_truncated_steps_file_counts_as_absent(tmp_path: Path, damage: str) -> None:
    """Before the fix, an empty file aborted the build with int('')."""
    own, other = tmp_path / "own", tmp_path / "other"
    own.mkdir()
    other.mkdir()
    (own / STEPS).write_text(damage)
    assert _expected_steps(own, own / "vmlinux") == (0, "")
    (other / STEPS).write_text("1234\n")
    assert _expected_steps(own, own / "vmlinux") == (1234, "as a build of another configuration")


class Progress:
    def __call__(self, message: str) -> None:
        pass

    def phase(self, message: str, terminal: bool = True) -> None:
        pass


def gone(pid: int) -> bool:
    """Whether `pid` has ended (a zombie of it, which init reaps, counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


@pytest.mark.parametrize("how", ["logged", "streamed"])
def test_a_make_past_its_deadline_is_stopped_with_its_jobs_and_named(tmp_path: Path, how: str) -> None:
    make = make_in(tmp_path, timeout=1)
    job = tmp_path / "job.pid"
    # A make that printed a step and hangs, a job of its own hanging beside it.
    command = ["sh", "-c", f'sleep 60 & echo $! > {job}; echo "  CC      lib/hang.o"; wait']
    started = time.monotonic()
    with pytest.raises(BuildError) as stopped:
        if how == "logged":
            make.run_logged(command)
        else:
            make.run(command, Progress())
    assert time.monotonic() - started < 15
    assert stopped.value.what.startswith("make ran past its deadline of 1 s and was stopped (--kunit-make-timeout)")
    assert "--kunit-make-timeout SECONDS (ini kunit_make_timeout; 0: no deadline)" in stopped.value.remedy
    deadline = time.monotonic() + 10
    while not gone(int(job.read_text())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(int(job.read_text()))


def test_no_deadline_and_a_make_within_it_are_left_alone(tmp_path: Path) -> None:
    assert make_in(tmp_path, timeout=0).run_logged(["sh", "-c", "sleep 1.5; exit 3"]) == 3
    assert make_in(tmp_path, timeout=30).run(["sh", "-c", 'echo "  LD      vmlinux"'], Progress()) == 1


def test_a_path_prefix_reaches_make_by_name_with_only_its_own_tools_on_path(tmp_path: Path) -> None:
    tools = tmp_path / "opt" / "cross" / "bin"
    tools.mkdir(parents=True)
    for name in ("mine-gcc", "mine-ld", "gcc", "python3"):  # the last two would shadow the host's
        (tools / name).write_text("#!/bin/sh\n")
    make = make_in(tmp_path, "W=1", f"CROSS_COMPILE={tools}/mine-")
    assert make.variables() == ["ARCH=x86_64", "CROSS_COMPILE=mine-", "W=1"]
    assert make.cross_prefix() == f"{tools}/mine-"
    first, _, rest = make.environment()["PATH"].partition(os.pathsep)
    assert first == str(make.build_dir / CROSS_TOOLS) and rest == os.environ["PATH"]
    links = {link.name: os.readlink(link) for link in Path(first).iterdir()}
    assert links == {"mine-gcc": f"{tools}/mine-gcc", "mine-ld": f"{tools}/mine-ld"}
    assert [path.name for path in sorted(tools.iterdir())] == ["gcc", "mine-gcc", "mine-ld", "python3"]


def test_a_prefix_without_a_directory_is_left_as_it_is(tmp_path: Path) -> None:
    make = make_in(tmp_path, "CROSS_COMPILE=x86_64-linux-gnu-")
    assert make.variables() == ["ARCH=x86_64", "CROSS_COMPILE=x86_64-linux-gnu-"]
    assert make.environment()["PATH"] == os.environ["PATH"]
    assert not (make.build_dir / CROSS_TOOLS).exists()


def test_what_pytest_kunit_decides_leaves_make_s_environment_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(makerun, "_said", set())
    for name in makerun.HONOURED:
        monkeypatch.delenv(name, raising=False)
    shell = {"ARCH": "arm64", "CROSS_COMPILE": "aarch64-linux-gnu-", "O": "/o", "KBUILD_OUTPUT": "/k", "KCFLAGS": "-g"}
    for name, value in shell.items():
        monkeypatch.setenv(name, value)
    make = make_in(tmp_path)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        environments = [make.environment(), make.environment()]
    notes = sorted(str(note.message) for note in said if issubclass(note.category, KunitWarning))
    assert [note.split("=")[0] for note in notes] == [
        "pytest-kunit: ARCH",
        "pytest-kunit: CROSS_COMPILE",
        "pytest-kunit: KBUILD_OUTPUT",
        "pytest-kunit: O",
    ]
    for environment in environments:
        assert {name: environment.get(name) for name in shell} == dict.fromkeys(makerun.OVERRIDDEN) | {"KCFLAGS": "-g"}
    assert makerun.honoured_variables() == ("KCFLAGS=-g",)


def test_a_value_make_gets_anyway_is_not_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(makerun, "_said", set())
    monkeypatch.setenv("ARCH", "x86_64")
    monkeypatch.delenv("CROSS_COMPILE", raising=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert "ARCH" not in make_in(tmp_path).environment()
    assert not [note for note in said if "ARCH=" in str(note.message)]
