"""The wheel, installed (not editable) into a fresh virtual environment, collecting its own framework fragment from an
empty directory: the run on the packaged tarball applies the series installed as package data (before it was looked
up beside a checkout, and the run said "no patches", then failed on the series' symbols).

It adds no build: the tier's x86_64 kernel is the same tree (the tarball with the same series, keyed by the patches'
contents, not where they lie) and serves the fragment (reuse.py), in the tier's cache."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_kunit.kernel.tree import patch_series
from pytest_kunit.versions import DEFAULT_TARBALL

from ..installed import ROOT, clean_env, install_wheel
from .conftest import TIER_HOME, Kunit
from .test_real_kernel import FRAMEWORK_CASES

pytestmark = [pytest.mark.real("x86_64"), pytest.mark.xdist_group("x86_64")]


def test_the_installed_wheel_applies_its_own_series_on_the_packaged_tarball(kunit: Kunit, tmp_path: Path) -> None:
    kunit.kernel("x86_64")
    installed = install_wheel(tmp_path / "wheel")
    fragment = installed.package / "testsuites" / "kunit.kunitconfig"
    empty = tmp_path / "empty"
    empty.mkdir()
    run = subprocess.run(
        [installed.python, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", "--collect-only", "-q", str(fragment)],
        cwd=empty,
        env=clean_env(XDG_CACHE_HOME=str(TIER_HOME)),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    report = run.stdout[-6000:] + run.stderr[-3000:]
    assert run.returncode == 0, report
    series = installed.package / "kernel_patches"
    count = len(patch_series((ROOT / "kernel-patches",)).patches)
    assert f"kunit: kernel tree {DEFAULT_TARBALL} (default), {count} patches from {series}" in run.stdout, report
    assert "kunit: building kernel" not in run.stdout, "the tier's x86_64 kernel was to serve it:\n" + report
    # Node ids relative to the rootdir pytest chose (the common ancestor of the empty directory and the fragment).
    installed_fragment = "site-packages/pytest_kunit/testsuites/kunit.kunitconfig"
    ids = [line.split("::") for line in run.stdout.splitlines() if "::" in line]
    collected = {".".join(parts[1:]) for parts in ids if parts[0].endswith(installed_fragment)}
    missing = FRAMEWORK_CASES - collected
    assert not missing, f"not collected: {sorted(missing)}\n{report}"
