"""The guest's /init after KUnit, as a contract: the script, what it is told on the kernel command line (dotted
parameters the kernel ignores), what it needs of the kernel, and the lines it prints on the console, read back here.
It loads the suites' modules (--kunit-modules: their suites run as each is loaded), makes kmemleak's final scan and
copies GCOV counters onto the console, then ends the guest (guest/initramfs.py packs it with busybox); or, told to
serve (--kunit-keep-guest), stays up and takes commands on its console (guest/kept.py speaks them): modules to load,
or built-in suites to run again through debugfs on a kernel booted with kunit.autorun=0.

KUnit runs before /init (kernel_init_freeable), so with `kunit_shutdown=none` the kernel goes on to the initramfs once
the last suite is done. /init ends the guest at once on a list boot (`kunit.action=`): it reboots, which QEMU's
-no-reboot turns into QEMU's exit, or halts a UML guest (HALT_ARG, which UML's boots carry).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .sanitizer_verdicts import OutsideReport

# What /init needs of the kernel: an initramfs, a script interpreter and busybox's ELF, and debugfs for both jobs.
KCONFIG = (
    "CONFIG_DEBUG_FS=y",
    "CONFIG_BLK_DEV_INITRD=y",
    "CONFIG_BINFMT_ELF=y",
    "CONFIG_BINFMT_SCRIPT=y",
)
MODULES_ARG = "pytest_kunit.modules"  # =NAMES (comma-separated, in order): the modules to load, from MODULE_DIR
MODULE_DIR = "lib/pytest-kunit"
MODULE_FAILED = "pytest-kunit: insmod failed:"
GCOV_ARG = "pytest_kunit.gcov"  # =DIRS (comma-separated, or `all`): copy these directories' counters out
KMEMLEAK_ARG = "pytest_kunit.kmemleak=scan"
SCAN_BEGIN, SCAN_END = "pytest-kunit: kmemleak's final scan", "pytest-kunit: kmemleak's final scan done"
SCAN_BUSY = "pytest-kunit: kmemleak's final scan still running"
GCOV_BUSY = "pytest-kunit: copying the GCOV counters"
GCOV_BEGIN, GCOV_END = "pytest-kunit-gcov-begin", "pytest-kunit-gcov-end"
ALL = "all"
# /init ends the guest by halting it, not rebooting: a rebooting UML executes itself again.
HALT_ARG = "pytest_kunit.halt"

# Serving (SERVE_ARG on the command line): after the above, /init reads one command a line from its console, echo off.
#   put NAME      a module's new file follows: gzip, then base64, a line at most BASE64_LINE long, a line "."
#                 after each chunk of at most CHUNK_LINES (answered CHUNK_TAKEN once the chunk is read: the guest's
#                 terminal holds 4 KiB unread), "end" after the last; answered PUT_DONE NAME or PUT_FAILED NAME
#   load ID GLOB NAMES
#                 set KUnit's filter_glob parameter to GLOB unless it is NO_GLOB (6.6 and later filter a module's
#                 suites by it), load the modules NAMES (comma-separated, maybe none) in order, their suites running
#                 as each comes in, unload them in the reverse order, say the taint flags; answered BATCH_DONE ID
#   check ID - SUITES
#                 say NO_RUN_FILE NAME for each of the built-in suites SUITES (comma-separated) that has no debugfs
#                 run file (KUnit makes none for a suite in init memory); answered BATCH_DONE ID
#   run ID - SUITES
#                 run the suites SUITES again in order, each by a write to its run file (one without is said as by
#                 check and not run), say the taint flags; answered BATCH_DONE ID
SERVE_ARG = "pytest_kunit.serve"
NO_GLOB = "-"
FILTER_GLOB = "/sys/module/kunit/parameters/filter_glob"
SUITES_DIR = "/sys/kernel/debug/kunit"  # a directory a suite, holding its results and run files
NO_RUN_FILE = "pytest-kunit: no run file:"
SERVING = "pytest-kunit: serving"
CHUNK_TAKEN = "pytest-kunit: chunk taken"
CHUNK_LINES = 40
BASE64_LINE = 76
PUT_DONE, PUT_FAILED = "pytest-kunit: put", "pytest-kunit: put failed:"
UNLOAD_FAILED = "pytest-kunit: rmmod failed:"
TAINTED = "pytest-kunit: tainted"
BATCH_DONE = "pytest-kunit: batch done"

# A shell function of /init (tested on the host): copy_counters FROM TO DIRS copies the .gcda files below FROM that lie
# in one of DIRS (comma-separated paths relative to the build, or `all`) to the same paths below TO. One find per
# directory and no program started for a counter file left out: a kernel has thousands, and starting one for each
# took five minutes of every boot of a KASAN kernel under TCG.
COPY_COUNTERS = f"""copy_counters() {{
    for d in $(echo "$3" | $B tr , ' '); do
        if [ "$d" = {ALL} ]; then pattern='*'; else pattern="*/$d/*"; fi
        (cd "$1" && $B find . -path "$pattern" -name '*.gcda') | while read -r f; do
            $B mkdir -p "$2/${{f%/*}}"
            # debugfs gives no size: copy by reading, not with tar.
            $B cat "$1/$f" > "$2/$f"
        done
    done
}}"""

# A shell function of /init (tested on the host, never with a module to load): serve_commands MODULES SCRATCH GLOB
# SUITES reads the commands above from standard input until its end; modules are loaded from, and sent into, the
# directory MODULES; GLOB is the file of KUnit's filter_glob parameter, written without a newline (a charp parameter
# keeps one); SUITES is KUnit's debugfs directory.
SERVE_COMMANDS = f"""serve_commands() {{
    while read -r command id glob names; do
        case "$command" in
            put)
                : > "$2/module.b64"
                while read -r line; do
                    case "$line" in
                        end) break ;;
                        .) echo "{CHUNK_TAKEN}" ;;
                        *) echo "$line" >> "$2/module.b64" ;;
                    esac
                done
                if $B base64 -d "$2/module.b64" | $B gunzip > "$1/$id.ko"; then
                    echo "{PUT_DONE} $id"
                else
                    echo "{PUT_FAILED} $id"
                fi
                ;;
            load)
                [ "$glob" = {NO_GLOB} ] || printf %s "$glob" > "$3"
                loaded=
                for module in $(echo "$names" | $B tr , ' '); do
                    if $B insmod "$1/$module.ko"; then
                        loaded="$module $loaded"
                    else
                        echo "{MODULE_FAILED} $module"
                    fi
                done
                for module in $loaded; do $B rmmod "$module" || echo "{UNLOAD_FAILED} $module"; done
                echo "{TAINTED} $($B cat /proc/sys/kernel/tainted)"
                echo "{BATCH_DONE} $id"
                ;;
            check|run)
                for suite in $(echo "$names" | $B tr , ' '); do
                    if [ ! -e "$4/$suite/run" ]; then
                        echo "{NO_RUN_FILE} $suite"
                    elif [ "$command" = run ]; then
                        echo 1 > "$4/$suite/run"
                    fi
                done
                [ "$command" = check ] || echo "{TAINTED} $($B cat /proc/sys/kernel/tainted)"
                echo "{BATCH_DONE} $id"
                ;;
        esac
    done
}}"""

INIT = f"""#!/bin/busybox sh
# pytest-kunit's /init: KUnit has run the built-in suites. The modules' suites (each runs as it is loaded),
# kmemleak's final scan, then the GCOV counters of the tested directories.
B=/bin/busybox
{COPY_COUNTERS}
{SERVE_COMMANDS}
$B mount -t proc proc /proc
end() {{
    if $B grep -qwF {HALT_ARG} /proc/cmdline; then $B halt -f; else $B reboot -f; fi
}}
dirs=
leaks=
modules=
serving=
for word in $($B cat /proc/cmdline); do
    case "$word" in
        kunit.action=*) end ;;
        {MODULES_ARG}=*) modules="${{word#{MODULES_ARG}=}}" ;;
        {GCOV_ARG}=*) dirs="${{word#{GCOV_ARG}=}}" ;;
        {KMEMLEAK_ARG}) leaks=1 ;;
        {SERVE_ARG}) serving=1 ;;
    esac
done
for module in $(echo "$modules" | $B tr , ' '); do
    $B insmod "/{MODULE_DIR}/$module.ko" || echo "{MODULE_FAILED} $module"
done
$B mount -t sysfs sysfs /sys
$B mount -t debugfs debugfs /sys/kernel/debug
if [ -n "$leaks" ]; then
    echo "{SCAN_BEGIN}"
    # kmemleak reports no object younger than 5 s, and none whose contents changed since the scan before: the
    # first scan records them, the second reports the leaks. The list is printed whether or not kmemleak.verbose is.
    $B sleep 5
    # A scan prints nothing until it ends; on a KASAN kernel under a loaded TCG host that outlasts the runner's
    # silence watchdog (the case timeout plus a quarter): say every 10 s that it still runs.
    ( while :; do $B sleep 10; echo "{SCAN_BUSY}"; done ) &
    busy=$!
    echo scan > /sys/kernel/debug/kmemleak
    echo scan > /sys/kernel/debug/kmemleak
    kill $busy
    $B cat /sys/kernel/debug/kmemleak
    echo "{SCAN_END}"
fi
if [ -n "$dirs" ]; then
    $B mkdir -p /out
    # Reading every counter file of a KASAN kernel under TCG can outlast the silence watchdog too: say it still runs
    # (before the archive starts, which is never silent and must not be interrupted).
    ( while :; do $B sleep 10; echo "{GCOV_BUSY}"; done ) &
    busy=$!
    copy_counters /sys/kernel/debug/gcov /out "$dirs"
    kill $busy
    echo {GCOV_BEGIN}
    cd /out && $B tar -c . | $B gzip -c | $B base64
    echo {GCOV_END}
fi
if [ -n "$serving" ]; then
    # The console is a terminal: what the host sends is not echoed back onto it.
    $B stty -echo
    $B mkdir -p /tmp
    echo "{SERVING}"
    serve_commands /{MODULE_DIR} /tmp {FILTER_GLOB} {SUITES_DIR}
fi
end
"""


@dataclass(frozen=True)
class AfterKunit:
    """What /init does on every test boot of one kernel."""

    kmemleak: bool = False  # make kmemleak's final scan
    gcov: tuple[str, ...] | None = None  # copy out the counters of these directories (empty: all); None: none
    modules: bool = False  # load the suites' modules each boot names (MODULES_ARG)
    serve: bool = False  # a guest that may be kept up (--kunit-keep-guest) runs built-in suites again via debugfs

    @property
    def wanted(self) -> bool:
        return self.kmemleak or self.gcov is not None or self.modules or self.serve

    def kernel_args(self) -> tuple[str, ...]:
        if not self.wanted:
            return ()
        args = ["kunit_shutdown=none"]
        if self.kmemleak:
            args.append(KMEMLEAK_ARG)
        if self.gcov is not None:
            args.append(f"{GCOV_ARG}={','.join(self.gcov) or ALL}")
        return tuple(args)


def modules_arg(names: Sequence[str]) -> str:
    """The boot argument that makes /init load these modules, in this order."""
    return f"{MODULES_ARG}={','.join(names)}"


def with_gcov_dirs(args: Sequence[str], dirs: Sequence[str]) -> tuple[str, ...]:
    """Boot arguments whose counters to copy are narrowed to `dirs` (the suites' own directories, once listed)."""
    return tuple(f"{GCOV_ARG}={','.join(dirs) or ALL}" if arg.startswith(f"{GCOV_ARG}=") else arg for arg in args)


def unloaded_modules(console: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The modules /init said insmod could not load, each with the console's lines before that naming it (the
    kernel's and insmod's own words for why)."""
    unloaded: dict[str, tuple[str, ...]] = {}
    for index, line in enumerate(console):
        if MODULE_FAILED in line:
            name = line.split(MODULE_FAILED, 1)[1].strip()
            unloaded[name] = tuple(said for said in console[:index] if name in said and MODULE_FAILED not in said)
    return unloaded


def unfinished_scan(
    kernel: str, boot_args: Sequence[str], console: Sequence[str], killed_for: str, path: Path
) -> OutsideReport | None:
    """An error of the run for a boot that ran every case and was to end with kmemleak's final scan but whose console
    never shows the scan done: the guest died or was killed first, and no leak reported must mean none found."""
    if KMEMLEAK_ARG not in boot_args or any(SCAN_END in line for line in console):
        return None
    why = killed_for or "the guest's console ended there"
    last = next((line for line in reversed(console) if line.strip()), "(nothing)")
    return OutsideReport(
        kernel,
        "kmemleak",
        "kmemleak's final scan did not finish: leaks found by it, if any, went unreported.",
        "after the last suite",
        (f"The boot ran every case, then {why}.", f"Its console's last line: {last}"),
        str(path),
        missing=True,
    )
