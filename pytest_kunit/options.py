"""Command-line options and their ini twins, each declared once: the flag, the ini key, the type of its value, its
default, metavar, help and kunit.py's equivalent. pytest's help and ini keys are registered from here (add_options),
face/settings.py resolves each into its Settings field, face/reference.py renders docs/options.md from it.

Adding an option: append an `Option` to OPTIONS, in the place its help should be listed:

    Option(
        "kunit_make_deadline",               # the ini key; the flag is --kunit-make-deadline
        "seconds one make run may take before it is stopped and the build refused",  # no default in it
        SECONDS,                             # its Type: how it is read and what the refusal of a bad value says
        default=3600.0,                      # what a run gets when it is not given (Decided: one no value says)
        metavar="SECONDS",
        kunitpy=None,                        # kunit.py's equivalent option, if it has one
    ),

(`repeatable=True` for one given again to add to the last; `choice(AnEnum)` as the Type of one taking an enum's
values), then give model.Settings the field it resolves into (the name without `kunit_`, or say `field=`;
`field=None` for an option read before the settings, like --kunit-cache-prune), a new Type (optiontypes.py) its
reader in face/readers.py's READERS, and run `python -m pytest_kunit.face.reference > docs/options.md`.
tests/unit/test_declarations.py checks that the declarations, the Settings fields, the readers, `pytest --help` and
docs/options.md agree.

Flags are `action="store_true"` with a bool ini key; a repeatable option appends each occurrence (its ini key is a
line list, one occurrence a line), as kunit.py's repeatable options do; any other takes one value, the last given.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path

import pytest

from .optiontypes import (
    CASE_SECONDS,
    CONSOLE,
    COVERAGE,
    EXISTING_FILE,
    FLAG,
    KCONFIG_LINES,
    KERNEL_SOURCE,
    KERNEL_WORDS,
    MAKE_SECONDS,
    MAKE_WORDS,
    NAMES,
    ORIGIN,
    PATCH_DIRS,
    PATH,
    POSITIVE_WHOLE,
    PREFIX,
    PROGRAM,
    SANITIZER_NAMES,
    SANITIZERS,
    SECONDS,
    SHELL_WORDS,
    WHOLE,
    YES_NO,
    Decided,
    Option,
    choice,
)
from .versions import DEFAULT_TARBALL, MAX_CASE_TIMEOUT

COVERAGE_DIR = "kunit-coverage"
# What a boot may take beyond its cases' own time: starting the kernel, the list boot, shutting down. A KASAN and
# GCOV kernel under TCG on a loaded host took more than 60 s to reach KUnit (its list boot killed, every case of two
# fragments lost); a hang is the silence watchdog's to catch, so this only bounds a guest that never stops printing.
BOOT_ALLOWANCE = 300.0
# Seconds one make run may take: over ten times the slowest cold build measured on the project's two-core machine
# (UML, 940 s under load), so a kernel of all of kunit.py's all_tests.config on a slower machine still fits; below the
# six hours a process waits for a cache lock, so one waiting on a hung build gets the lock before it gives up.
DEFAULT_MAKE_TIMEOUT = 3 * 3600


class Accel(enum.Enum):
    AUTO = "auto"
    TCG = "tcg"
    KVM = "kvm"


class Wrapper(enum.Enum):
    AUTO = "auto"
    CCACHE = "ccache"
    DISTCC = "distcc"
    SCCACHE = "sccache"
    NONE = "none"


class Isolate(enum.Enum):
    NONE = "none"
    SUITE = "suite"
    CASE = "case"


class FilterAction(enum.Enum):
    DESELECT = "deselect"  # pytest's own: a case not selected is left out of the results
    SKIP = "skip"  # kunit.py's --filter_action=skip: reported skipped


def cache_home() -> Path:
    # The XDG base directory specification: a relative path is invalid and is ignored.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "pytest-kunit"


OWN_SERIES = f"pytest-kunit's own series on {DEFAULT_TARBALL}, nothing on any other tree"

OPTIONS = (
    Option(
        "kunit",
        "collect and run KUnit suites from *.kunitconfig files (without it the plugin is inert)",
        FLAG,
        False,
        kunitpy="--kunitconfig",
        field="enabled",
    ),
    Option(
        "kunit_kernel_src",
        "kernel source: a tarball or a directory (built with O= into the cache, never modified)",
        KERNEL_SOURCE,
        Decided(f"the kernel tree the fragment lies in, else {DEFAULT_TARBALL}"),
        "PATH",
    ),
    Option(
        "kunit_patches",
        "a directory of *.patch and *.diff files (git or plain unified diffs) applied in order on the tree; "
        "'none' applies nothing",
        PATCH_DIRS,
        Decided(OWN_SERIES),
        "PATCH_DIR",
        repeatable=True,
        field="patch_dirs",
    ),
    Option(
        "kunit_cache_dir",
        "where trees, builds and consoles are kept",
        PATH,
        Decided("$XDG_CACHE_HOME/pytest-kunit, else ~/.cache/pytest-kunit", cache_home),
        "DIR",
        kunitpy="--build_dir",
    ),
    Option(
        "kunit_cache_prune",
        "remove from the cache what --kunit-cache-max-age and --kunit-cache-keep-consoles leave no room for, say "
        "what was removed, and exit without collecting or running anything (needs --kunit)",
        FLAG,
        False,
        field=None,
    ),
    Option(
        "kunit_cache_max_age",
        "days an extracted tree, build directory, completed configuration or fetched image may go unused before a "
        "run removes it from the cache (one in use by another run stays); 0 keeps them",
        WHOLE,
        30,
        "DAYS",
    ),
    Option(
        "kunit_cache_keep_consoles",
        "how many runs' boot consoles (and coverage counters) the cache keeps, the latest; 0 keeps every run's",
        WHOLE,
        20,
        "N",
    ),
    Option(
        "kunit_jobs",
        "parallel make jobs",
        POSITIVE_WHOLE,
        Decided("the number of CPUs", lambda: os.cpu_count() or 1),
        "N",
        kunitpy="--jobs",
    ),
    Option(
        "kunit_timeout",
        f"whole seconds (1 to {MAX_CASE_TIMEOUT}) a test case may run: passed to the kernel as kunit.timeout where "
        "the tree supports it; a guest silent for this long plus a quarter (at most 15 s more) is killed and its "
        "running case reported timed out",
        CASE_SECONDS,
        120,
        "SECONDS",
    ),
    Option(
        "kunit_boot_timeout",
        "seconds a whole boot may last before its guest is killed and the case it was running reported timed out "
        "(a guest that keeps printing is never silent)",
        SECONDS,
        Decided(f"{BOOT_ALLOWANCE:g} plus the case timeout for each case the boot runs"),
        "SECONDS",
        kunitpy="--timeout",
    ),
    Option(
        "kunit_accel",
        "QEMU accelerator: tcg, kvm, or auto (KVM if usable, falling back to TCG)",
        choice(Accel),
        Accel.TCG,
    ),
    Option("kunit_raw", "stream each guest's console to the terminal as it boots", FLAG, False, kunitpy="--raw_output"),
    Option(
        "kunit_isolate",
        "boots per run: none (one boot per batch: per worker under xdist), suite (one per suite), "
        "case (a fresh kernel for every case)",
        choice(Isolate),
        Isolate.NONE,
        kunitpy="--run_isolated suite|test",
    ),
    Option(
        "kunit_reboot_after_crash",
        "end the guest as soon as a case has crashed (oops, BUG) and boot a fresh one for the cases after it, so "
        "that no verdict comes from a tainted kernel (one more boot per crash)",
        FLAG,
        False,
    ),
    Option("kunit_qemu", "the QEMU binary to run", PROGRAM, Decided("qemu-system-<arch> from PATH"), "PROGRAM"),
    Option(
        "kunit_wrapper",
        "compiler wrapper in front of every compiler a kernel build runs: ccache, distcc (over DISTCC_HOSTS), "
        "sccache, none, or auto (ccache when installed, else none); never part of the build key",
        choice(Wrapper),
        Wrapper.AUTO,
    ),
    Option(
        "kunit_arch",
        "guest architecture, or several comma-separated (each case collected once per architecture, its node id "
        "naming it): x86_64, um (User Mode Linux), or a cross-built QEMU guest: i386, arm64, arm, riscv64, "
        "powerpc64le, powerpc, s390, m68k, alpha, sparc64, sh4, mipsel, parisc; or one from --kunit-arch-config",
        NAMES,
        ("x86_64",),
        "ARCH[,ARCH...]",
        kunitpy="--arch",
        field="arches",
    ),
    Option(
        "kunit_arch_config",
        "a TOML (or .json) file of your own architecture records, in the shape of pytest_kunit/arch/: a table per "
        "architecture with kconfig, make and qemu (or uml); each is then a name --kunit-arch takes",
        EXISTING_FILE,
        None,
        "FILE",
        kunitpy="--qemu_config",
        field=None,
    ),
    Option(
        "kunit_coverage",
        "build with GCOV and write a coverage report of the code the run's cases exercised (HTML, Cobertura and "
        f"lcov) into DIR ({COVERAGE_DIR} for the flag alone), with a line summary per tested file; write "
        "--kunit-coverage=DIR",
        COVERAGE,
        Decided("off"),
        "DIR",
    ),
    Option(
        "kunit_sanitize",
        f"comma-separated sanitizers to build every kernel with: {SANITIZER_NAMES}; a report printed while a case "
        "runs fails that case, one printed outside any case fails the run",
        SANITIZERS,
        (),
        "NAME[,NAME...]",
    ),
    Option(
        "kunit_kcidb",
        "write the run to this file as KCIDB v5 JSON for KernelCI: the checkout, each build with its configuration, "
        "one test per case (kunit.SUITE.CASE) with its console slice",
        PATH,
        None,
        "FILE",
    ),
    Option(
        "kunit_share_kernels",
        "build one kernel for all the run's fragments of one tree (the union of their lines) instead of one each; "
        "every fragment still runs, in boots of its own, exactly the suites its own kernel would hold, and one whose "
        "suites cannot be told for sure is built alone",
        FLAG,
        False,
    ),
    Option(
        "kunit_reuse_kernels",
        "yes: a fragment never built runs in a kernel built before for the same tree and architecture when that "
        "kernel provably runs its suites as its own kernel would (only its own suites, in boots of its own), and a "
        "kernel that must be built starts from a copy of the nearest build (Kbuild compiles what the configurations' "
        "differences change); no: always build each fragment's own kernel, from an empty directory",
        YES_NO,
        True,
        "yes|no",
    ),
    Option(
        "kunit_modules",
        "module mode for the edit loop: build the fragments' tristate suites as modules (CONFIG_MODULES=y), loaded "
        "by an initramfs after boot, so an edit to a suite's sources rebuilds that module alone and boots the same "
        "kernel image; suites that cannot be modules stay built in; not with --kunit-share-kernels",
        FLAG,
        False,
    ),
    Option(
        "kunit_keep_guest",
        "keep the guest up after the run (its keeper ends it after 15 idle minutes). With --kunit-modules, the next "
        "run that loads only modules sends the changed ones into it and loads them there instead of booting; "
        "without, on a tree whose KUnit has kunit.autorun (the series; 6.14+), the next run of whole built-in "
        "suites on the same image runs them again there through debugfs. A guest that faulted, stayed tainted or "
        "could not unload a module is ended and the next run boots afresh",
        FLAG,
        False,
    ),
    Option(
        "kunit_kcidb_origin", "the CI system's name KCIDB ids start with (a-z, 0-9, _)", ORIGIN, "pytest_kunit", "NAME"
    ),
    Option(
        "kunit_kconfig_add",
        "a kunitconfig line (CONFIG_X=y, '# CONFIG_X is not set') added to every fragment's kernel, after the "
        "fragment's own lines; part of the build key",
        KCONFIG_LINES,
        (),
        "LINE",
        kunitpy="--kconfig_add",
        repeatable=True,
    ),
    Option(
        "kunit_make_options",
        "more make variables and flags for every make run of a build, split as a shell would (no shell runs): "
        "'CC=clang LLVM=1', 'W=1'; part of the build key",
        MAKE_WORDS,
        (),
        "MAKE_ARGS",
        kunitpy="--make_options",
        repeatable=True,
    ),
    Option(
        "kunit_kernel_args",
        "more kernel command-line arguments for every boot, after pytest-kunit's own, split as the kernel splits "
        'its command line (x="a b" is one)',
        KERNEL_WORDS,
        (),
        "PARAMS",
        kunitpy="--kernel_args",
        repeatable=True,
    ),
    Option(
        "kunit_qemu_args",
        "more QEMU arguments for every boot, after pytest-kunit's own, split as a shell would (QEMU guests only)",
        SHELL_WORDS,
        (),
        "QEMU_ARGS",
        kunitpy="--qemu_args",
        repeatable=True,
    ),
    Option(
        "kunit_cross_compile",
        "the CROSS_COMPILE prefix of the build's compiler and of the binutils that decode crash reports, instead of "
        "the architecture's own; empty: the host's",
        PREFIX,
        Decided("the architecture's own (arm64: aarch64-linux-gnu-; x86_64, um: none)"),
        "PREFIX",
        kunitpy="--cross_compile",
    ),
    Option(
        "kunit_replay",
        "read this saved console (a file, or - for stdin) instead of building and booting: its KTAP's cases are "
        "collected (under the one fragment given, else under the console file) and given the outcomes a live run "
        "would",
        CONSOLE,
        None,
        "FILE",
        kunitpy="kunit.py parse",
    ),
    # kunit.py's run options that pytest had no equivalent of: --json, --alltests, --filter_action=skip.
    Option(
        "kunit_json",
        "write the run's results to this file in the shape of kunit.py's --json (what KernelCI reads): a group per "
        "suite holding its cases' PASS, FAIL, SKIP or ERROR (no result line), a parameterised case a group of its "
        "parameters; several kernels a group each",
        PATH,
        None,
        "FILE",
        kunitpy="--json",
        field="kunit_json",
    ),
    Option(
        "kunit_alltests",
        "collect the kernel tree's own tools/testing/kunit/configs/all_tests.config, as kunit.py's --alltests runs "
        "it (the tree of --kunit-kernel-src, else the one pytest runs in, else the packaged one): alone when no "
        "path is named, beside the fragments named otherwise; node ids tools/testing/kunit/configs/all_tests.config::",
        FLAG,
        False,
        kunitpy="--alltests",
    ),
    Option(
        "kunit_filter_action",
        "what becomes of a kernel case the run does not select (-k, -m, --deselect, node ids naming other cases of "
        "its fragment): deselect (left out of the results) or skip (reported skipped as 'filtered out', with no "
        "boot, as kunit.py's --filter_action=skip)",
        choice(FilterAction),
        FilterAction.DESELECT,
        kunitpy="--filter_action",
    ),
    Option(
        "kunit_make_timeout",
        "whole seconds one make run of a build may take before it is stopped and the build fails (a hung make "
        "would hold its worker forever); 0: no deadline",
        MAKE_SECONDS,
        DEFAULT_MAKE_TIMEOUT,
        "SECONDS",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("kunit", "KUnit kernel tests")
    for option in OPTIONS:
        shape, text = option.type.shape, option.described
        common = {"dest": option.name, "default": None, "help": text}
        if shape == "flag":
            group.addoption(option.flag, action="store_true", **common)
            parser.addini(option.name, text, type="bool", default=False)
        elif option.repeatable:
            group.addoption(option.flag, action="append", metavar=option.shown_metavar, **common)
            parser.addini(option.name, text, type="linelist", default=[])
        else:
            nargs = {"nargs": "?", "const": ""} if shape == "optional" else {}
            group.addoption(option.flag, metavar=option.shown_metavar, **nargs, **common)
            parser.addini(option.name, text, default=None)
