"""seeding.nearest: which build a new one starts from."""

from __future__ import annotations

from pathlib import Path

from pytest_kunit.kernel.build_records import BuildRecord
from pytest_kunit.kernel.seeding import nearest


def built(tmp_path: Path, name: str, config: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / ".config").write_text(config)
    return directory


def test_the_build_setting_the_fewest_symbols_otherwise_is_nearest_and_the_first_of_equals(tmp_path: Path) -> None:
    wanted = {"CONFIG_KUNIT": "y", "CONFIG_DRM": "y", "CONFIG_LOG_BUF_SHIFT": "17"}
    far = built(tmp_path, "far", "CONFIG_KUNIT=y\nCONFIG_UBSAN=y\nCONFIG_LOCKDEP=y\n")
    near = built(tmp_path, "near", "CONFIG_KUNIT=y\nCONFIG_DRM=y\nCONFIG_LOG_BUF_SHIFT=14\n")
    equal = built(tmp_path, "equal", "CONFIG_KUNIT=y\nCONFIG_DRM=y\n")
    gone = tmp_path / "gone"  # evicted since it was listed
    record = BuildRecord.__new__(BuildRecord)
    found = [(gone, record), (far, record), (near, record), (equal, record)]
    assert nearest(found, wanted) == (near, 1)  # the most recent first: `equal` is as near, listed later
    assert nearest([(gone, record)], wanted) is None
