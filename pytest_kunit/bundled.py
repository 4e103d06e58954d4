"""Where the patch series pytest-kunit ships is, in an installed wheel or in a source checkout.

In a wheel the series and the kernel suites are package data, pytest_kunit/kernel_patches/ and pytest_kunit/testsuites/
(pyproject.toml maps them in; the suites are collected with `--pyargs pytest_kunit.testsuites`). In a source checkout,
and so in an editable install, both stay at the checkout's top, kernel-patches/ and testsuites/, beside this package.
Never looked up from the directory pytest runs in: a project's own kernel-patches/ is not ours.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def default_patch_dirs(package: Path = PACKAGE) -> tuple[Path, ...]:
    """pytest-kunit's own series (applied by default on the packaged tarball): in the installed `package`, else beside
    it in a checkout; none where it is not shipped."""
    places = (package / "kernel_patches", package.parent / "kernel-patches")
    return next(((place,) for place in places if place.is_dir()), ())
