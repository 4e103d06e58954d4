"""A guest whose console is hostile (the kernel under test is code under review): forged result lines, mid-boot
reboot words, endless lines, terminal controls. Nothing is lost and nothing is forged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FakeKernel

# Boots a fake guest (QEMU, or a UML kernel, that is only this script) and says how much the reader's peak memory grew.
_BOOT_AND_MEASURE = """
import json, resource, sys
from pathlib import Path
from pytest_kunit.arch import ARCHES
from pytest_kunit.guest.boot import BootRequest, boot

guest, arch = sys.argv[1], ARCHES[sys.argv[2]]
uml = arch.uml is not None
request = BootRequest(
    Path(guest if uml else "vmlinux"), arch, (), "none" if uml else "tcg", 60.0, qemu=None if uml else guest
)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
record, _ = boot(request)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grown_kib": grown, "console": record.console}))
"""


def test_a_forged_result_line_neither_passes_another_case_nor_hides_its_crash(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    # example_simple_test printk()s the result line of the case after it, unindented; that case then crashes.
    fake_kernel.set_case("example", "example_simple_test", printk=["ok 2 - example_failing_test"])
    fake_kernel.set_case("example", "example_failing_test", outcome="crash", kills_guest=True, log=[])
    result = project.runpytest(*fake_kernel.options("-k", "example_simple_test or example_failing_test"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*example.example_failing_test CRASHED*"])


def test_reboot_words_mid_list_then_a_panic_leave_the_list_uncached(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    spec = fake_kernel.spec()
    spec["printk_list"] = ["reboot: Restarting system", "Kernel panic - not syncing: in the middle of the list"]
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(["*kunit.action=list boot*did not reach its end*none was collected or cached*"])
    assert result.ret not in (0, 5)
    assert not list(fake_kernel.cache.glob("lists/*.json"))


def test_an_endless_line_is_cut_and_named_and_costs_no_time(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    # 200 KB of spaces between a result word and a letter: a backtracking pattern took minutes for 4 KB of it.
    fake_kernel.set_case("other", "first", printk=["    ok 1 x" + " " * 200_000 + "y"])
    project.runpytest(*fake_kernel.options("-k", "other")).assert_outcomes(passed=2)
    (console,) = fake_kernel.cache.glob("consoles/*/*.log")
    text = console.read_text()
    assert "[pytest-kunit: line cut at 4096 characters, " in text and " " * 5000 not in text


def test_c1_controls_and_bidi_overrides_reach_no_report(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    fake_kernel.set_case("other", "first", outcome="fail", printk=["evil\u009b2J \u202etxt.exe\u202c \u2066x\u2069"])
    result = project.runpytest(*fake_kernel.options("--kunit-raw", "-k", "first"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*evil2J txt.exe x*"])
    text = result.stdout.str()
    assert not any(char in text for char in "\u009b\u202e\u202c\u2066\u2069")


@pytest.mark.parametrize("arch", ["x86_64", "um"])  # read from a pty, and from a pipe
def test_a_line_that_never_ends_costs_bounded_memory(tmp_path: Path, arch: str) -> None:
    guest = tmp_path / "guest"
    guest.write_text('#!/bin/sh\nhead -c 52428800 /dev/zero | tr "\\0" x\nprintf "\\nafter\\n"\n')
    guest.chmod(0o755)
    said = subprocess.run(
        [sys.executable, "-c", _BOOT_AND_MEASURE, str(guest), arch], capture_output=True, text=True, check=True
    )
    measured = json.loads(said.stdout)
    # 50 MiB without a newline: the reader grew by 150 MiB holding it whole; a few MiB when it is cut as it comes.
    assert measured["grown_kib"] < 16 << 10
    cut, after = (line.rstrip("\r") for line in measured["console"])
    assert cut.startswith("x" * 4096 + " [pytest-kunit: line cut at 4096 characters, 5242470")
    assert after == "after"
