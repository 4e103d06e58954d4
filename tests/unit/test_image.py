"""A kernel image is checked before it is booted: a truncated or foreign file is told from a whole one."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from pytest_kunit.kernel import image as image_module
from pytest_kunit.kernel.image import SETTLED_NS, ImageCheck, ImageRecord, check_image


def elf64(segment: tuple[int, int] = (176, 64), payload: int = 64) -> bytes:
    """Header, one program header (offset, file size), payload, one section header at the end (as vmlinux)."""
    table = 64 + 56 + payload
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 64, table, 0, 64, 56, 1, 64, 1, 0)
    program = struct.pack("<IIQQQQQQ", 1, 5, segment[0], 0, 0, segment[1], segment[1], 0x1000)
    return header + program + bytes(payload) + bytes(64)


def elf32() -> bytes:
    table = 52 + 32
    header = b"\x7fELF" + bytes([1, 1, 1]) + bytes(9)
    header += struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, 0, 52, table, 0, 52, 32, 1, 40, 1, 0)
    program = struct.pack("<IIIIIIII", 1, 0, 0, 0, 84, 84, 5, 0x1000)
    return header + program + bytes(40)


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "vmlinux"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("data", [elf64(), elf32()], ids=["elf64", "elf32"])
def test_a_whole_elf_image_passes(tmp_path: Path, data: bytes) -> None:
    checked = check_image(write(tmp_path, data), True, None)
    assert checked.problem == ""
    assert checked.record.size == len(data)
    assert check_image(write(tmp_path, data), True, checked.record).problem == ""


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (elf64()[:-1], "it is 247 bytes, but its ELF headers describe 248: truncated"),
        (elf64()[:100], "it is 100 bytes, but its ELF headers describe 248: truncated"),
        (elf64(segment=(176, 4096)), "it is 248 bytes, but its ELF headers describe 4272: truncated"),
        (elf64()[:40], "it is not an ELF file"),
        (elf32()[:-8], "it is 116 bytes, but its ELF headers describe 124: truncated"),
        (b"MZ" + bytes(300), "it is not an ELF file"),
        (b"", "it is not an ELF file"),
    ],
)
def test_a_damaged_elf_image_is_told(tmp_path: Path, data: bytes, problem: str) -> None:
    assert check_image(write(tmp_path, data), True, None).problem == problem


def test_a_non_elf_image_is_checked_against_its_record_only(tmp_path: Path) -> None:
    image = write(tmp_path, b"bzImage bytes")
    record = check_image(image, False, None).record
    assert check_image(image, False, None).problem == ""
    image.write_bytes(b"bzImage byteZ")
    assert check_image(image, False, record).problem == "its contents differ from what its build recorded"
    image.write_bytes(b"bzImage")
    assert check_image(image, False, record).problem == "it is 7 bytes, its build recorded 13"


def test_an_image_record_round_trips_through_the_stamp() -> None:
    record = ImageRecord("0123456789abcdef", 12345)
    assert ImageRecord.parse(record.lines().split()) == record
    assert ImageRecord.parse([]) is None
    assert ImageRecord.parse(["0123456789abcdef", "lots"]) is None


def test_an_image_unchanged_since_its_record_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = write(tmp_path, b"bzImage bytes")
    settled = time.time_ns() - 10 * SETTLED_NS
    os.utime(image, ns=(settled, settled))
    record = check_image(image, False, None).record
    assert record.mtime_ns == settled
    assert ImageRecord.parse(record.lines().split()) == record

    def unread(path: Path) -> str:
        raise AssertionError(f"{path} was read again")

    monkeypatch.setattr(image_module, "file_digest", unread)
    assert check_image(image, False, record) == ImageCheck(record, "")
    assert check_image(image, False, None, previous=record) == ImageCheck(record, "")
    # Written since: read again, and found changed.
    monkeypatch.undo()
    image.write_bytes(b"bzImage byteZ")
    assert check_image(image, False, record).problem == "its contents differ from what its build recorded"


def test_a_freshly_written_images_mtime_vouches_for_nothing(tmp_path: Path) -> None:
    image = write(tmp_path, b"bzImage bytes")
    assert check_image(image, False, None).record.mtime_ns is None
