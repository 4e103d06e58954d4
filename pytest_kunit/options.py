"""Command-line options and their ini twins, declared once (settings.py resolves them into a Settings value)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pytest

from .versions import DEFAULT_TARBALL, MAX_CASE_TIMEOUT

COVERAGE_DIR = "kunit-coverage"


class Accel(enum.Enum):
    AUTO = "auto"
    TCG = "tcg"
    KVM = "kvm"


class Wrapper(enum.Enum):
    AUTO = "auto"
    NONE = "none"
    CCACHE = "ccache"
    DISTCC = "distcc"
    SCCACHE = "sccache"


class Isolate(enum.Enum):
    NONE = "none"
    SUITE = "suite"
    CASE = "case"


@dataclass(frozen=True)
class Option:
    name: str  # the ini key; the command-line flag is --name with dashes
    help: str
    # "bool", "string", "path" (relative to the rootdir in an ini file), "paths" (repeatable), "lines" (repeatable
    # text), "optional path" (the flag alone, or with a value)
    kind: str = "string"

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS = (
    Option("kunit", "collect and run KUnit suites from *.kunitconfig files (without it the plugin is inert)", "bool"),
    Option(
        "kunit_kernel_src",
        "kernel source: a tarball or a directory (built with O= into the cache, never modified); "
        f"default: the kernel tree the fragment lies in, else {DEFAULT_TARBALL}",
        "path",
    ),
    Option(
        "kunit_patches",
        "a directory of *.patch and *.diff files (git or plain unified diffs) applied in order on the tree; "
        "repeatable; 'none' applies nothing; "
        f"default: pytest-kunit's own series on {DEFAULT_TARBALL}, nothing on any other tree",
        "paths",
    ),
    Option(
        "kunit_cache_dir", "where trees, builds and consoles are kept; default $XDG_CACHE_HOME/pytest-kunit", "path"
    ),
    Option(
        "kunit_cache_prune",
        "remove from the cache what --kunit-cache-max-age and --kunit-cache-keep-consoles leave no room for, say "
        "what was removed, and exit without collecting or running anything (needs --kunit)",
        "bool",
    ),
    Option(
        "kunit_cache_max_age",
        "days an extracted tree, build directory, completed configuration or fetched image may go unused before a "
        "run removes it from the cache (one in use by another run stays); 0 keeps them; default 30",
    ),
    Option(
        "kunit_cache_keep_consoles",
        "how many runs' boot consoles (and coverage counters) the cache keeps, the latest; 0 keeps every run's; "
        "default 20",
    ),
    Option("kunit_jobs", "parallel make jobs; default: the number of CPUs"),
    Option(
        "kunit_timeout",
        f"whole seconds (1 to {MAX_CASE_TIMEOUT}) a test case may run: passed to the kernel as kunit.timeout where "
        "the tree supports it; "
        "a guest silent for this long plus a quarter (at most 15 s more) is killed and its running case reported "
        "timed out; default 120",
    ),
    Option(
        "kunit_boot_timeout",
        "seconds a whole boot may last before its guest is killed and the case it was running reported timed out "
        "(a guest that keeps printing is never silent); default: 60 plus the case timeout for each case it runs",
    ),
    Option("kunit_accel", "QEMU accelerator: tcg (default), kvm, or auto (KVM if usable, falling back to TCG)"),
    Option("kunit_raw", "stream each guest's console to the terminal as it boots", "bool"),
    Option(
        "kunit_isolate",
        "boots per run: none (one boot per batch: per worker under xdist), suite (one per suite), "
        "case (a fresh kernel for every case); default none",
    ),
    Option(
        "kunit_reboot_after_crash",
        "end the guest as soon as a case has crashed (oops, BUG) and boot a fresh one for the cases after it, so "
        "that no verdict comes from a tainted kernel (one more boot per crash)",
        "bool",
    ),
    Option("kunit_qemu", "the QEMU binary to run; default qemu-system-<arch> from PATH"),
    Option(
        "kunit_wrapper",
        "compiler wrapper in front of every compiler a kernel build runs: ccache, distcc (over DISTCC_HOSTS), "
        "sccache, none, or auto (default: ccache when installed, else none); never part of the build key",
    ),
    Option(
        "kunit_arch",
        "guest architecture, or several comma-separated (each case collected once per architecture, its node id "
        "naming it): x86_64 (the default), um (User Mode Linux), or a cross-built QEMU guest: i386, arm64, arm, "
        "riscv64, powerpc64le, powerpc, s390, m68k, alpha, sparc64, sh4, mipsel, parisc; or one from "
        "--kunit-arch-config",
    ),
    Option(
        "kunit_arch_config",
        "a TOML (or .json) file of your own architecture records, in the shape of pytest_kunit/arch/: a table per "
        "architecture with kconfig, make and qemu (or uml); each is then a name --kunit-arch takes",
        "path",
    ),
    Option(
        "kunit_coverage",
        "build with GCOV and write a coverage report of the code the run's cases exercised (HTML, Cobertura and "
        f"lcov) into DIR (default {COVERAGE_DIR}), with a line summary per tested file; write --kunit-coverage=DIR",
        "optional path",
    ),
    Option(
        "kunit_sanitize",
        "comma-separated sanitizers to build every kernel with: kasan, ubsan, lockdep, atomic-sleep, debugobjects, "
        "kcsan, kmemleak; a report printed while a case runs fails that case, one printed outside any case fails "
        "the run",
    ),
    Option(
        "kunit_kcidb",
        "write the run to this file as KCIDB v5 JSON for KernelCI: the checkout, each build with its configuration, "
        "one test per case (kunit.SUITE.CASE) with its console slice",
        "path",
    ),
    Option(
        "kunit_share_kernels",
        "build one kernel for all the run's fragments of one tree (the union of their lines) instead of one each; "
        "every fragment still runs, in boots of its own, exactly the suites its own kernel would hold, and one whose "
        "suites cannot be told for sure is built alone",
        "bool",
    ),
    Option(
        "kunit_reuse_kernels",
        "yes (default): a fragment never built runs in a kernel built before for the same tree and architecture "
        "when that kernel provably runs its suites as its own kernel would (only its own suites, in boots of its "
        "own); no: always build each fragment's own kernel",
    ),
    Option(
        "kunit_modules",
        "module mode for the edit loop: build the fragments' tristate suites as modules (CONFIG_MODULES=y), loaded "
        "by an initramfs after boot, so an edit to a suite's sources rebuilds that module alone and boots the same "
        "kernel image; suites that cannot be modules stay built in",
        "bool",
    ),
    Option("kunit_kcidb_origin", "the CI system's name KCIDB ids start with (a-z, 0-9, _); default pytest_kunit"),
    # kunit.py's remaining knobs (--kconfig_add, --make_options, --kernel_args, --qemu_args, --cross_compile) and its
    # `parse` command (--kunit-replay).
    Option(
        "kunit_kconfig_add",
        "a kunitconfig line (CONFIG_X=y, '# CONFIG_X is not set') added to every fragment's kernel, after the "
        "fragment's own lines; repeatable; part of the build key",
        "lines",
    ),
    Option(
        "kunit_make_options",
        "more make variables and flags for every make run of a build, split as a shell would (no shell runs): "
        "'CC=clang LLVM=1', 'W=1'; part of the build key",
    ),
    Option("kunit_kernel_args", "more kernel command-line arguments for every boot, after pytest-kunit's own"),
    Option("kunit_qemu_args", "more QEMU arguments for every boot, after pytest-kunit's own (QEMU guests only)"),
    Option(
        "kunit_cross_compile",
        "the CROSS_COMPILE prefix of the build's compiler and of the binutils that decode crash reports, instead of "
        "the architecture's own (arm64: aarch64-linux-gnu-); empty: the host's",
    ),
    Option(
        "kunit_replay",
        "read this saved console (a file, or - for stdin) instead of building and booting: its KTAP's cases are "
        "collected (under the one fragment given, else under the console file) and given the outcomes a live run "
        "would",
        "path",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("kunit", "KUnit kernel tests")
    for option in OPTIONS:
        if option.kind == "bool":
            group.addoption(option.flag, action="store_true", default=None, dest=option.name, help=option.help)
            parser.addini(option.name, option.help, type="bool", default=False)
        elif option.kind == "optional path":
            group.addoption(option.flag, nargs="?", const="", default=None, dest=option.name, help=option.help)
            parser.addini(option.name, option.help, default=None)
        elif option.kind in ("paths", "lines"):
            group.addoption(option.flag, action="append", default=None, dest=option.name, help=option.help)
            parser.addini(option.name, option.help, type="linelist", default=[])
        else:
            group.addoption(option.flag, default=None, dest=option.name, help=option.help)
            parser.addini(option.name, option.help, default=None)
