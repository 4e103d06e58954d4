"""Where the plugin finds the series it ships: package data in a wheel, the checkout's kernel-patches/ beside the
package in a source checkout, and nothing from wherever pytest runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit import bundled

ROOT = Path(__file__).resolve().parents[2]


def test_in_a_checkout_the_series_is_the_checkouts_kernel_patches() -> None:
    assert bundled.default_patch_dirs() == (ROOT / "kernel-patches",)


def test_in_an_installed_package_the_series_is_its_package_data(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "pytest_kunit"
    (package / "kernel_patches").mkdir(parents=True)
    (tmp_path / "site-packages" / "kernel-patches").mkdir()  # another distribution's: not ours, the package's wins
    assert bundled.default_patch_dirs(package) == (package / "kernel_patches",)


def test_no_series_shipped_means_none_and_the_working_directory_is_never_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site-packages" / "pytest_kunit"
    package.mkdir(parents=True)
    (tmp_path / "kernel-patches").mkdir()
    monkeypatch.chdir(tmp_path)
    assert bundled.default_patch_dirs(package) == ()
