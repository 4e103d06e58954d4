"""The guest's /init after KUnit: the script busybox runs, the boot arguments that tell it what to do, and what its
console lines mean when read back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_kunit.findings import guest_init
from pytest_kunit.findings.guest_init import AfterKunit
from pytest_kunit.guest.initramfs import BUSYBOX


def test_the_init_script_parses() -> None:
    subprocess.run([str(BUSYBOX), "sh", "-n", "-c", guest_init.INIT], check=True)


@pytest.mark.parametrize(
    ("dirs", "copied"),
    [
        ("lib/kunit,drivers/of", {"lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda", "drivers/of/base.gcda"}),
        ("lib/kunit", {"lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda"}),
        (guest_init.ALL, {"lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda", "drivers/of/base.gcda", "fs/inode.gcda"}),
    ],
)
def test_init_copies_the_counters_of_the_tested_directories_alone(tmp_path: Path, dirs: str, copied: set[str]) -> None:
    # debugfs names each counter file by the build directory's absolute path.
    build = tmp_path / "gcov" / "root" / "build"
    for name in ("lib/kunit/test.gcda", "lib/kunit/kunit-test.gcda", "drivers/of/base.gcda", "fs/inode.gcda"):
        (build / name).parent.mkdir(parents=True, exist_ok=True)
        (build / name).write_bytes(name.encode())
    (build / "lib/kunit/notes.txt").write_text("")
    script = f"B={BUSYBOX}\n{guest_init.COPY_COUNTERS}\ncopy_counters {tmp_path / 'gcov'} {tmp_path / 'out'} {dirs}"
    subprocess.run([str(BUSYBOX), "sh", "-c", script], check=True)
    out = tmp_path / "out" / "root" / "build"
    found = {str(path.relative_to(out)) for path in out.rglob("*") if path.is_file()}
    assert found == copied
    assert all((out / name).read_bytes() == name.encode() for name in found)


def test_what_init_is_told_on_the_command_line() -> None:
    assert AfterKunit().kernel_args() == ()
    assert not AfterKunit().wanted
    assert AfterKunit(kmemleak=True).kernel_args() == ("kunit_shutdown=none", "pytest_kunit.kmemleak=scan")
    both = AfterKunit(kmemleak=True, gcov=()).kernel_args()
    assert both == ("kunit_shutdown=none", "pytest_kunit.kmemleak=scan", "pytest_kunit.gcov=all")
    narrowed = guest_init.with_gcov_dirs(("kasan_multi_shot", *both), ("lib/kunit", "pytest-kunit/sanitize"))
    assert narrowed[-1] == "pytest_kunit.gcov=lib/kunit,pytest-kunit/sanitize"
    assert narrowed[:-1] == ("kasan_multi_shot", *both[:-1])
    assert guest_init.with_gcov_dirs(("kunit_shutdown=none",), ("lib",)) == ("kunit_shutdown=none",)


def test_a_boot_whose_final_scan_never_ended_is_an_error_of_the_run() -> None:
    """Every case ran but the guest was killed during the scan: green would claim no leak that nobody looked for."""
    args = ("kunit_shutdown=none", guest_init.KMEMLEAK_ARG)
    console = ["ok 1 other", guest_init.SCAN_BEGIN, guest_init.SCAN_BUSY]
    killed = "the guest printed nothing for 135 s and was killed"
    report = guest_init.unfinished_scan("k.kunitconfig", args, console, killed, Path("/c.log"))
    assert report is not None
    rendered = report.render()
    assert rendered.startswith("kmemleak's final scan did not finish: leaks found by it, if any, went unreported.")
    assert f"The boot ran every case, then {killed}." in rendered
    assert f"Its console's last line: {guest_init.SCAN_BUSY}" in rendered and rendered.endswith("console: /c.log")
    done = [*console, "unreferenced object 0xffff888003b4c400 (size 123):", guest_init.SCAN_END]
    assert guest_init.unfinished_scan("k.kunitconfig", args, done, "", Path("/c.log")) is None
    assert guest_init.unfinished_scan("k.kunitconfig", args[:1], console, "", Path("/c.log")) is None  # no scan asked
    ended = guest_init.unfinished_scan("k.kunitconfig", args, console[:2], "", Path("/c.log"))
    assert ended is not None and "then the guest's console ended there." in ended.render()
