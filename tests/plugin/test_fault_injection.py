"""Faults injected from outside the plugin's own code (a cut console, a damaged cache, a truncated image, a bad
value, a flooding guest, a hung accelerator): each ends in one clear paragraph, and nothing partial is ever kept."""

from __future__ import annotations

import difflib
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import FAKE, FakeKernel, no_traceback, signals_as


@pytest.mark.parametrize("value", ["0.5", "1.9", "1e9"])
def test_timeout_the_kernel_would_refuse_is_a_usage_error(
    project: pytest.Pytester, fake_kernel: FakeKernel, value: str
) -> None:
    result = project.runpytest(*fake_kernel.options(f"--kunit-timeout={value}"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--kunit-timeout: '{value}' is not a whole number of seconds from 1 to 86400*"])
    assert fake_kernel.boots() == []
    no_traceback(result)


def test_empty_fragment_is_refused_before_any_build(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    pytester.makefile(".kunitconfig", empty="# nothing here yet\n")
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(["*empty.kunitconfig sets no CONFIG_ option: its kernel would hold no test.*"])
    assert not any((fake_kernel.cache / "build").iterdir())
    no_traceback(result)


def test_binary_fragment_is_refused_in_a_few_lines(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    (pytester.path / "x.kunitconfig").write_bytes(bytes(range(256)) * 2000)
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(["*x.kunitconfig is not a kunitconfig: it holds binary data.*"])
    assert len(result.stdout.str()) < 4000
    no_traceback(result)


def test_plain_unified_diff_is_applied_and_a_cover_letter_named(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    series = tmp_path / "series"
    series.mkdir()
    (series / "0000-cover-letter.patch").write_text("Subject: [PATCH 0/1] pass\n\n guest.json | 2 +-\n")
    before = (fake_kernel.tree / "guest.json").read_text()
    after = before.replace('"outcome": "fail",', "")
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), "a/guest.json", "b/guest.json"
    )
    (series / "0001-pass.diff").write_text("".join(diff))
    arguments = [arg for arg in fake_kernel.options() if arg != "--kunit-patches=none"]
    result = project.runpytest(*arguments, f"--kunit-patches={series}", "-k", "example_failing_test")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 patch from *series (left out, holding no diff: 0000-cover-letter.patch)*"])


def test_patch_directory_holding_no_patch_is_a_usage_error(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    arguments = [arg for arg in fake_kernel.options() if arg != "--kunit-patches=none"]
    result = project.runpytest(*arguments, f"--kunit-patches={empty}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--kunit-patches: '{empty}' holds no patch*use 'none' to apply no patches*"])
    assert fake_kernel.boots() == []


@pytest.mark.parametrize(
    "damage", [b"", b'{"format": 3, "cases": [["example", "ex', b"\x00\xff" * 64], ids=["empty", "cut", "binary"]
)
def test_damaged_case_list_is_discarded_and_rebuilt(
    project: pytest.Pytester, fake_kernel: FakeKernel, damage: bytes
) -> None:
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    (listing,) = fake_kernel.cache.glob("lists/*.json")
    listing.write_bytes(damage)
    result = project.runpytest(*fake_kernel.options())
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [f"*CacheWarning: pytest-kunit: discarded the damaged cache file {listing}; it will be rebuilt"]
    )
    assert "JSONDecodeError" not in result.stdout.str()
    no_traceback(result)
    # Rebuilt from a second list boot, and served silently from then on.
    assert [boot["params"].get("kunit.action") for boot in fake_kernel.boots()].count("list") == 2
    again = project.runpytest(*fake_kernel.options())
    again.assert_outcomes(passed=3, failed=2, skipped=1)
    assert "CacheWarning" not in again.stdout.str()


def qemu_script(directory: Path, body: str) -> Path:
    """A stand-in for QEMU: a shell script that logs each start to `starts` beside it."""
    script = directory / "qemu-system-x86_64"
    script.write_text(f"#!/bin/sh\necho started >> {directory / 'starts'}\n{body}\n")
    script.chmod(0o755)
    return script


def starts(directory: Path) -> int:
    log = directory / "starts"
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.parametrize("qemu", ["/nonexistent/qemu-system-x86_64", "bad-interpreter"])
def test_qemu_that_cannot_start_is_one_paragraph_per_item_never_retried(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path, qemu: str
) -> None:
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)  # caches the list
    if qemu == "bad-interpreter":
        qemu = str(qemu_script(tmp_path, "").rename(tmp_path / "qemu"))
        Path(qemu).write_text("#!/nonexistent/interpreter\n")
    result = project.runpytest(*fake_kernel.options(f"--kunit-qemu={qemu}", "-rE"))
    result.assert_outcomes(errors=6)
    text = result.stdout.str()
    no_traceback(result)
    headline = "QEMU is not installed" if qemu.startswith("/nonexistent") else "QEMU could not be started"
    assert sum(line.startswith(headline) for line in text.splitlines()) == 6  # one paragraph for each item
    assert "During handling" not in text
    # Only the ERRORS section: with CI set, pytest prints the short summary untruncated, advice included.
    errors = text.split("short test summary info")[0]
    assert errors.count("What to do:") == 1
    assert errors.count("Not tried again: the same error as for kunit.kunitconfig::") == 5


def test_guest_that_never_reaches_kunit_is_booted_once_per_kernel(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    # QEMU lists the cases, then fails every boot that would run them.
    fails = f'case "$*" in *kunit.action=list*) exec {FAKE / "qemu"} "$@";; esac\necho "qemu: fatal" >&2; exit 1'
    qemu = qemu_script(tmp_path, fails)
    # Every case in a boot of its own: the first shows the kernel cannot be booted; the other five are not tried.
    result = project.runpytest(*fake_kernel.options(f"--kunit-qemu={qemu}", "--kunit-isolate=case"))
    result.assert_outcomes(errors=6)
    result.stdout.fnmatch_lines(["*qemu: fatal*"])
    assert starts(tmp_path) == 2  # the list boot, then one boot for six cases


def list_boots(fake_kernel: FakeKernel) -> int:
    return [boot["params"].get("kunit.action") for boot in fake_kernel.boots()].count("list")


def test_list_boot_behind_a_console_cutting_wrapper_is_an_error_never_cached(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    # What `qemu ... | head` does: the console stops part-way and the exit status is 0.
    qemu = qemu_script(tmp_path, f'{FAKE / "qemu"} "$@" 2>/dev/null | head -n 6')
    result = project.runpytest(*fake_kernel.options(f"--kunit-qemu={qemu}"))
    result.stdout.fnmatch_lines(
        [
            "*The kunit.action=list boot of */vmlinux did not reach its end (the console stopped after 6 lines, with "
            "no reboot, though QEMU exited 0; 2 cases listed, after a second try): the case list would be "
            "incomplete, so none was collected or cached.",
            "What to do: check what runs QEMU*",
        ]
    )
    assert starts(tmp_path) == 2
    assert not list((fake_kernel.cache / "lists").glob("*.json"))
    no_traceback(result)
    # The next run with a QEMU that passes the whole console collects every case.
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)


def test_list_boot_cut_once_is_booted_again(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_QEMU_FAULT", '{"do": "cut", "after": 5, "boots": "list", "times": 1}')
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    assert list_boots(fake_kernel) == 2


@pytest.mark.parametrize(
    ("fault", "how", "boots"),
    [
        ('{"do": "kill", "after": 5, "boots": "list"}', "QEMU was killed by signal 9 (SIGKILL) from outside*", 2),
        ('{"do": "hang", "after": 5, "boots": "list"}', "the guest printed nothing for 1.25 s and was killed", 1),
    ],
    ids=["killed", "silent"],
)
def test_list_boot_killed_or_silent_is_an_error_never_cached(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch, fault: str, how: str, boots: int
) -> None:
    monkeypatch.setenv("FAKE_QEMU_FAULT", fault)
    result = project.runpytest(*fake_kernel.options("--kunit-timeout=1"))
    result.stdout.fnmatch_lines([f"*The kunit.action=list boot of * did not reach its end ({how}; 2 cases listed*"])
    assert list_boots(fake_kernel) == boots
    assert not list((fake_kernel.cache / "lists").glob("*.json"))
    no_traceback(result)


def built_image(fake_kernel: FakeKernel) -> Path:
    (image,) = fake_kernel.cache.glob("build/*/vmlinux")
    return image


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("truncate", "it is * bytes, its build recorded *"),
        ("zero", "it is not an ELF file"),
        ("flip", "its contents differ from what its build recorded"),
        ("truncate, old stamp", "it is * bytes, but its ELF headers describe *: truncated"),
    ],
)
def test_damaged_image_is_rebuilt_once_with_a_note(
    project: pytest.Pytester, fake_kernel: FakeKernel, damage: str, problem: str
) -> None:
    # A tarball tree is fixed: a whole image is never rebuilt, so only the damage makes `make` run.
    tarball = project.path / "linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(fake_kernel.tree, arcname="linux-fake")
    options = fake_kernel.options(f"--kunit-kernel-src={tarball}")
    project.runpytest(*options).assert_outcomes(passed=3, failed=2, skipped=1)
    image = built_image(fake_kernel)
    data = image.read_bytes()
    if damage.startswith("truncate"):
        image.write_bytes(data[: len(data) // 2])
    elif damage == "zero":
        image.write_bytes(bytes(len(data)))
    else:
        image.write_bytes(data.replace(b"example_simple_test", b"example_simple_tesT"))
    if damage.endswith("old stamp"):  # written before images were recorded: only the ELF structure tells
        stamp = image.parent / ".pytest-kunit-stamp"
        stamp.write_text("\n".join(stamp.read_text().split()[:2]) + "\n")
    result = project.runpytest(*options)
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [f"*CacheWarning: pytest-kunit: discarded the damaged kernel image {image} ({problem}); rebuilding it"]
    )
    result.stdout.fnmatch_lines(["*kernel builds: 1 *"])
    no_traceback(result)
    assert (image.parent / "make-runs").read_text().split().count("vmlinux") == 2
    again = project.runpytest(*options)
    again.stdout.fnmatch_lines(["*kernel builds: 0 *"])
    assert "CacheWarning" not in again.stdout.str()


def test_qemu_error_is_shown_in_qemus_words_first(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    oom = "qemu-system-x86_64: cannot set up guest memory 'pc.ram': Cannot allocate memory"
    qemu = qemu_script(tmp_path, f'echo "{oom}" >&2; exit 1')
    result = project.runpytest(*fake_kernel.options(f"--kunit-qemu={qemu}"))
    result.stdout.fnmatch_lines(
        [
            f"QEMU failed before the kernel started (exit status 1): {oom}",
            "What to do: read QEMU's own words below. If it could not load the kernel, the image */vmlinux "
            "(build directory */build/*) is damaged: delete it and run again to rebuild it.*",
            "QEMU said:",
            oom,
            f"Command: {qemu} -nodefaults *",
        ]
    )
    assert "KUnit did not run" not in result.stdout.str()
    no_traceback(result)


def processes_with(*words: str) -> list[int]:
    """The processes whose command line holds every word."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if all(word in command for word in words):
                found.append(int(entry.name))
    return found


def wait_for(check: Callable[[], bool], seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)
    return check()


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["interrupted", "killed"])
def test_stopped_build_leaves_no_make_job_behind(
    pytester: pytest.Pytester, fake_kernel: FakeKernel, how: signal.Signals
) -> None:
    pytester.makefile(".kunitconfig", hang="CONFIG_KUNIT=y\nCONFIG_FAKE_BUILD_HANG=y\n")
    job = ("fake_make.py", "vmlinux", str(fake_kernel.cache))
    command = [sys.executable, "-m", "pytest", *fake_kernel.options()]
    # SIGINT at its default action (a run of a background job of a script inherits it ignored): pytest's own.
    default = signals_as(signal.SIG_DFL)
    process = subprocess.Popen(
        command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=default
    )
    try:
        assert wait_for(lambda: any(fake_kernel.cache.glob("build/*/hanging"))), "the build never started"
        assert processes_with(*job)
        # To pytest alone: a signal from outside the terminal; SIGKILL runs no cleanup at all.
        process.send_signal(how)
        output, _ = process.communicate(timeout=120)  # a loaded host (command two under load) took over 30 s
    finally:
        process.kill()
    if how == signal.SIGINT:
        assert b"KeyboardInterrupt" in output, output.decode()
    assert wait_for(lambda: not processes_with(*job), 10), "make's job outlived the build"


def test_killed_guest_takes_what_its_wrapper_started_with_it(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    # A wrapper that shrugs off SIGHUP and SIGINT, and a guest behind it that goes silent in the last case.
    qemu = qemu_script(tmp_path, f"trap '' HUP INT\n{FAKE / 'qemu'} \"$@\"")
    fake_kernel.set_case("other", "second", outcome="hang")
    result = project.runpytest(*fake_kernel.options(f"--kunit-qemu={qemu}", "--kunit-timeout=1", "-k", "other"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*other.second TIMED OUT*"])
    assert wait_for(lambda: not processes_with("fake/qemu", str(fake_kernel.cache)), 5), "the guest outlived its kill"


def test_flooding_guest_is_stopped_at_the_boot_deadline(
    project: pytest.Pytester, fake_kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seven lines in (the header of suite "other"), the guest prints without end: never silent, so only a deadline
    # for the whole boot stops it.
    monkeypatch.setenv("FAKE_QEMU_FAULT", '{"do": "flood", "after": 7, "boots": "tests", "times": 1}')
    started = time.monotonic()
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-boot-timeout=3"))
    assert time.monotonic() - started < 25
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*other.first TIMED OUT*",
            "the boot was still running at its deadline of 3 s (--kunit-boot-timeout) and was killed",
        ]
    )
    assert fake_kernel.filters() == ["other", "other.second"]  # the rest booted again


def test_silent_guest_says_how_long_it_was_silent(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="hang")
    result = project.runpytest(*fake_kernel.options("-k", "other", "--kunit-timeout=2"))
    result.stdout.fnmatch_lines(["*other.first TIMED OUT*", "the guest printed nothing for 2.5 s and was killed"])


def test_a_wait_on_a_cache_lock_says_who_holds_it(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    (lock,) = fake_kernel.cache.glob("locks/build-*.lock")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from pytest_kunit.host.locking import cache_lock\n"
            f"with cache_lock(Path({str(fake_kernel.cache)!r}), {lock.stem!r}, 'building a kernel elsewhere'):\n"
            "    print('held', flush=True); time.sleep(5)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        result = project.runpytest(*fake_kernel.options())
    finally:
        holder.wait(timeout=30)
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            f"kunit: waiting for the cache lock {lock.stem}: held by pid {holder.pid} (building a kernel elsewhere) "
            "for * s so far"
        ]
    )
    assert result.stdout.str().count("waiting for the cache lock") == 1


def test_kvm_hang_is_found_in_seconds_said_once_and_remembered(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    spec = fake_kernel.spec()
    spec["kvm"] = "hang"
    fake_kernel.write_spec(spec)
    started = time.monotonic()
    result = project.runpytest(*fake_kernel.options("--kunit-accel=kvm", "-k", "other"))
    assert time.monotonic() - started < 15
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*KunitWarning: pytest-kunit: KVM failed: the guest printed nothing within 5 s (a KVM guest speaks within "
            "a second); QEMU */fake/qemu on host kernel *; falling back to TCG for this session and later ones on "
            "this machine",
            "*guest boots: 3 *",  # the hung one counts
        ]
    )
    assert result.stdout.str().count("KVM failed") == 1
    assert [boot["accel"] for boot in fake_kernel.boots()] == ["kvm", "tcg", "tcg"]
    # The next session goes straight to TCG, and says why.
    again = project.runpytest(*fake_kernel.options("--kunit-accel=kvm", "-k", "other"))
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["*KVM is known not to work here (the guest printed nothing within 5 s*"])
    assert [boot["accel"] for boot in fake_kernel.boots()][3:] == ["tcg"]


def test_a_note_made_an_error_by_w_error_is_one_paragraph(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.runpytest(*fake_kernel.options()).assert_outcomes(passed=3, failed=2, skipped=1)
    (listing,) = fake_kernel.cache.glob("lists/*.json")
    listing.write_text("{")
    strict = fake_kernel.options("-W", "error::pytest_kunit.errors.KunitWarning")
    result = project.runpytest(*strict)
    result.stdout.fnmatch_lines(
        [
            f"pytest-kunit: discarded the damaged cache file {listing}; it will be rebuilt",
            "(a pytest-kunit note, raised as an error by -W or filterwarnings; it has been acted on)",
        ]
    )
    no_traceback(result)
    project.runpytest(*strict).assert_outcomes(passed=3, failed=2, skipped=1)
