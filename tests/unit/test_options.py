"""Option resolution: every unusable value is a usage error naming its option or ini key; the CLI beats the ini.

The runs here pass --kunit (only then does the plugin read its settings) and stop at configure time on the bad value,
so nothing is ever built or booted; `resolved` reads the settings of a configured run directly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_kunit import options
from pytest_kunit.face.settings import resolve
from pytest_kunit.model import Settings
from pytest_kunit.options import Accel, Isolate

WHOLE_SECONDS = "a whole number of seconds from 1 to 86400 (what the kernel's kunit.timeout accepts)"


def usage_error(pytester: pytest.Pytester, *args: str) -> str:
    """Run pytest --kunit in-process; it must stop with a usage error. Returns its stderr."""
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--kunit", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    return result.stderr.str()


def resolved(pytester: pytest.Pytester, *args: str) -> Settings:
    config = pytester.parseconfigure("-p", "no:cacheprovider", *args)
    return resolve(config)


def test_every_option_has_an_ini_twin(pytester: pytest.Pytester) -> None:
    """Each option of pytest-kunit (dest kunit*), however it was added, has an ini key of the same name."""
    config = pytester.parseconfig("-p", "no:cacheprovider")
    dests = [dest for dest in vars(config.option) if dest.startswith("kunit")]
    assert {option.name for option in options.OPTIONS} <= set(dests)
    for dest in dests:
        try:
            config.getini(dest)
        except ValueError:
            pytest.fail(f"--{dest.replace('_', '-')} has no ini key {dest!r}")


# --- bad command-line values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kunit-jobs", "0"], "--kunit-jobs: '0' is not a positive whole number"),
        (["--kunit-jobs", "-2"], "--kunit-jobs: '-2' is not a positive whole number"),
        (["--kunit-jobs", "1.5"], "--kunit-jobs: '1.5' is not a positive whole number"),
        (["--kunit-jobs", "many"], "--kunit-jobs: 'many' is not a positive whole number"),
        (["--kunit-timeout", "abc"], f"--kunit-timeout: 'abc' is not {WHOLE_SECONDS}"),
        (["--kunit-timeout", "0"], f"--kunit-timeout: '0' is not {WHOLE_SECONDS}"),
        (["--kunit-timeout", "-5"], f"--kunit-timeout: '-5' is not {WHOLE_SECONDS}"),
        # What the kernel's kunit.timeout would refuse (keeping its 300 s) or round: refused here instead.
        (["--kunit-timeout", "0.5"], f"--kunit-timeout: '0.5' is not {WHOLE_SECONDS}"),
        (["--kunit-timeout", "1.9"], f"--kunit-timeout: '1.9' is not {WHOLE_SECONDS}"),
        (["--kunit-timeout", "1e9"], f"--kunit-timeout: '1e9' is not {WHOLE_SECONDS}"),
        (["--kunit-timeout", "86401"], f"--kunit-timeout: '86401' is not {WHOLE_SECONDS}"),
        (["--kunit-boot-timeout", "0"], "--kunit-boot-timeout: '0' is not a positive number of seconds"),
        (["--kunit-boot-timeout", "inf"], "--kunit-boot-timeout: 'inf' is not a positive number of seconds"),
        (["--kunit-accel", "foo"], "--kunit-accel: 'foo' is not one of auto, tcg, kvm"),
        (["--kunit-accel", "KVM"], "--kunit-accel: 'KVM' is not one of auto, tcg, kvm"),
        (["--kunit-isolate", "x"], "--kunit-isolate: 'x' is not one of none, suite, case"),
        (["--kunit-arch", "vax"], "--kunit-arch: 'vax' is not one of: "),
        (["--kunit-patches", "nonexistent"], "--kunit-patches: 'nonexistent' is not a directory of patches"),
        (
            ["--kunit-kernel-src", "/no/such/linux-source.tar.xz"],
            "--kunit-kernel-src: '/no/such/linux-source.tar.xz' is not an existing kernel tarball or directory",
        ),
    ],
)
def test_bad_command_line_value_is_a_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    stderr = usage_error(pytester, *args)
    assert f"ERROR: {message}" in stderr
    assert "Traceback" not in stderr
    assert "INTERNALERROR" not in stderr


def test_parseconfigure_raises_usage_error_naming_the_flag(pytester: pytest.Pytester) -> None:
    with pytest.raises(pytest.UsageError, match=r"^--kunit-isolate: 'everything' is not one of none, suite, case$"):
        resolved(pytester, "--kunit-isolate", "everything")


def series(directory: Path) -> Path:
    """A directory holding one patch."""
    directory.mkdir()
    (directory / "0001-fix.patch").write_text("--- a/Makefile\n+++ b/Makefile\n@@ -1 +1 @@\n-a\n+b\n")
    return directory


def test_second_patch_directory_missing_is_named(pytester: pytest.Pytester) -> None:
    series(pytester.path / "patches")
    stderr = usage_error(pytester, "--kunit-patches", "patches", "--kunit-patches", "gone")
    assert "--kunit-patches: 'gone' is not a directory of patches (use 'none' to apply no patches)" in stderr


def test_patch_directory_without_patches_is_a_usage_error(pytester: pytest.Pytester) -> None:
    empty = pytester.mkdir("empty")
    (empty / "0000-cover-letter.patch").write_text("Subject: [PATCH 0/1] a series\n\n lib/x.c | 2 +-\n")
    stderr = usage_error(pytester, "--kunit-patches", "empty")
    assert (
        "--kunit-patches: 'empty' holds no patch (no *.patch or *.diff file with a diff in it; "
        "use 'none' to apply no patches)"
    ) in stderr


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_timeout_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    with pytest.raises(pytest.UsageError, match="--kunit-timeout"):
        resolved(pytester, "--kunit-timeout", value)


# --- bad ini values ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("kunit_jobs", "0", "'0' is not a positive whole number"),
        ("kunit_jobs", "lots", "'lots' is not a positive whole number"),
        ("kunit_timeout", "soon", f"'soon' is not {WHOLE_SECONDS}"),
        ("kunit_timeout", "2.5", f"'2.5' is not {WHOLE_SECONDS}"),
        ("kunit_accel", "hvf", "'hvf' is not one of auto, tcg, kvm"),
        ("kunit_isolate", "module", "'module' is not one of none, suite, case"),
        ("kunit_arch", "sparc", "'sparc' is not one of: "),
        ("kunit_kernel_src", "missing-tree", "'missing-tree' is not an existing kernel tarball or directory"),
        ("kunit_patches", "no-such-dir", "'no-such-dir' is not a directory of patches"),
    ],
)
def test_bad_ini_value_is_a_usage_error_naming_the_key(
    pytester: pytest.Pytester, key: str, value: str, expected: str
) -> None:
    ini = pytester.makeini(f"[pytest]\n{key} = {value}\n")
    stderr = usage_error(pytester)
    assert f"ERROR: ini key {key!r} in {ini}: {expected}" in stderr


@pytest.mark.parametrize("key", ["kunit", "kunit_raw", "kunit_reboot_after_crash", "kunit_share_kernels"])
def test_bad_boolean_ini_value_is_a_usage_error_naming_the_key(pytester: pytest.Pytester, key: str) -> None:
    pytester.makeini(f"[pytest]\n{key} = maybe\n" + ("" if key == "kunit" else "kunit = true\n"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ini key {key!r}" in result.stderr.str()


@pytest.mark.parametrize("ini", ["", "[pytest]\nkunit_timeout = 30\n"])
def test_bad_override_ini_value_names_the_o_option_not_the_ini_file(pytester: pytest.Pytester, ini: str) -> None:
    if ini:
        pytester.makeini(ini)
    stderr = usage_error(pytester, "-o", "kunit_timeout=abc")
    assert f"ERROR: -o kunit_timeout: 'abc' is not {WHOLE_SECONDS}" in stderr


def test_bad_boolean_override_names_the_o_option(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkunit_raw = true\n")
    stderr = usage_error(pytester, "--override-ini=kunit_raw=maybe")
    assert "ERROR: -o kunit_raw: " in stderr


def test_override_ini_paths_are_relative_to_the_invocation_directory(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkunit_patches = series\n")
    series(pytester.path / "series")
    sub = pytester.mkdir("sub")
    series(sub / "mine")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(sub)
        settings = resolved(pytester, "-o", "kunit_patches=mine", "--rootdir", str(pytester.path))
    assert settings.patch_dirs == ((sub / "mine").resolve(),)


def test_pyproject_ini_key_is_named_too(pytester: pytest.Pytester) -> None:
    ini = pytester.makepyprojecttoml('[tool.pytest.ini_options]\nkunit_timeout = "-1"\n')
    stderr = usage_error(pytester)
    assert f"ERROR: ini key 'kunit_timeout' in {ini}: '-1' is not {WHOLE_SECONDS}" in stderr


def test_a_relative_xdg_cache_home_is_ignored(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG base directory specification: a relative path in XDG_CACHE_HOME is invalid."""
    monkeypatch.setenv("HOME", str(pytester.path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert resolved(pytester).cache_dir == pytester.path / "home" / ".cache" / "pytest-kunit"


# --- precedence and good values ------------------------------------------------------------------------------------


def test_defaults(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "xdg"))
    settings = resolved(pytester)
    assert settings == Settings(
        enabled=False,
        kernel_src=None,
        patch_dirs=None,
        cache_dir=pytester.path / "xdg" / "pytest-kunit",
        jobs=os.cpu_count() or 1,
        timeout=120,
        boot_timeout=None,
        accel=Accel.TCG,
        raw=False,
        isolate=Isolate.NONE,
        reboot_after_crash=False,
        qemu=None,
        arch="x86_64",
        arches=("x86_64",),
    )


def test_cli_beats_ini_even_when_the_ini_value_is_bad(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nkunit_jobs = 0\nkunit_timeout = never\nkunit_accel = foo\nkunit_isolate = x\n"
        "kunit_arch = vax\nkunit_patches = nowhere\nkunit_kernel_src = nothing-here\n"
    )
    source = pytester.mkdir("linux")
    patches = series(pytester.path / "mine")
    settings = resolved(
        pytester,
        "--kunit-jobs",
        "3",
        "--kunit-timeout",
        "2",
        "--kunit-accel",
        "kvm",
        "--kunit-isolate",
        "suite",
        "--kunit-arch",
        "x86_64",
        "--kunit-patches",
        "mine",
        "--kunit-kernel-src",
        str(source),
    )
    assert (settings.jobs, settings.timeout, settings.accel, settings.isolate) == (3, 2, Accel.KVM, Isolate.SUITE)
    assert settings.patch_dirs == (patches.resolve(),)
    assert settings.kernel_src == source.resolve()
    # And the same run without the command-line values is refused on the first bad ini key resolved.
    refused = r"^ini key 'kunit_arch' in .*tox\.ini: 'vax' is not one of: alpha, arm, arm64, i386, .*, um, x86_64$"
    with pytest.raises(pytest.UsageError, match=refused):
        resolved(pytester)


def test_good_ini_values_are_used(pytester: pytest.Pytester) -> None:
    series(pytester.path / "series-a")
    series(pytester.path / "series-b")
    pytester.makeini(
        "[pytest]\nkunit = true\nkunit_raw = yes\nkunit_jobs = 5\nkunit_timeout = 30\nkunit_accel = auto\n"
        "kunit_boot_timeout = 900\nkunit_isolate = case\nkunit_qemu = /opt/qemu/bin/qemu-system-x86_64\n"
        "kunit_cache_dir = cache-here\nkunit_reboot_after_crash = true\nkunit_arch = arm64\n"
        "kunit_patches =\n    series-b\n    series-a\n"
    )
    settings = resolve(pytester.parseconfig("-p", "no:cacheprovider"))
    assert settings.enabled is True
    assert settings.raw is True
    assert settings.reboot_after_crash is True
    assert (settings.jobs, settings.timeout, settings.accel, settings.isolate) == (5, 30, Accel.AUTO, Isolate.CASE)
    assert settings.qemu == "/opt/qemu/bin/qemu-system-x86_64"
    assert settings.boot_timeout == 900.0
    assert settings.arch == "arm64"
    assert settings.cache_dir.name == "cache-here"
    # Ini patch directories are relative to the rootdir, in the order written.
    assert settings.patch_dirs == ((pytester.path / "series-b").resolve(), (pytester.path / "series-a").resolve())


def test_boolean_flag_beats_its_ini_key(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkunit_reboot_after_crash = false\n")
    assert resolved(pytester).reboot_after_crash is False
    assert resolved(pytester, "--kunit-reboot-after-crash").reboot_after_crash is True


def test_patches_none_and_default_series(pytester: pytest.Pytester) -> None:
    assert resolved(pytester, "--kunit-patches", "none").patch_dirs == ()
    # Not given: the default rule (our series on the packaged tarball only), decided per tree, not per rootdir.
    assert resolved(pytester).patch_dirs is None
    pytester.mkdir("kernel-patches")
    assert resolved(pytester).patch_dirs is None


def test_cli_patch_directories_are_relative_to_the_invocation_directory(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    sub = pytester.mkdir("sub")
    series(sub / "series")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(sub)
        settings = resolved(pytester, "--kunit-patches", "series", "--rootdir", str(pytester.path))
    assert settings.patch_dirs == ((sub / "series").resolve(),)


def test_relative_ini_paths_are_relative_to_the_rootdir_wherever_pytest_starts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\nkunit_kernel_src = linux\nkunit_cache_dir = cache\nkunit_patches = series\n")
    linux = pytester.mkdir("linux")
    patches = series(pytester.path / "series")
    monkeypatch.chdir(pytester.mkdir("sub"))
    config = pytester.parseconfig("-p", "no:cacheprovider")
    assert config.rootpath == pytester.path
    settings = resolve(config)
    assert settings.patch_dirs == (patches.resolve(),)
    assert settings.kernel_src == linux.resolve()
    assert settings.cache_dir.resolve() == (pytester.path / "cache").resolve()


@pytest.mark.parametrize(("value", "seconds"), [("1", 1), ("86400", 86400), ("30.0", 30), ("1e3", 1000)])
def test_whole_second_timeouts_within_the_kernels_range(pytester: pytest.Pytester, value: str, seconds: int) -> None:
    timeout = resolved(pytester, "--kunit-timeout", value).timeout
    assert timeout == seconds and isinstance(timeout, int)


def test_module_mode_with_shared_kernels_is_refused_naming_where_it_was_asked(pytester: pytest.Pytester) -> None:
    with pytest.raises(pytest.UsageError, match=r"^-o kunit_modules cannot be combined with --kunit-share-kernels"):
        resolved(pytester, "-o", "kunit_modules=true", "--kunit-share-kernels")
