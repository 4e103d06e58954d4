#!/usr/bin/env bash
# Check kernel-patches/ the way a maintainer would: `git am` onto a pristine extract of Debian's linux-source-6.1,
# `scripts/checkpatch.pl --strict` on every patch (no errors; each warning or check type left must be named in the
# patch's notes below its `---`, which say why it stays), a build of every prefix of the series (tinyconfig + the
# guest's needs + every test the series adds) and a boot of it in QEMU with every suite passing, and the whole series'
# suites on a debug kernel (testsuites/kunit-debug.kunitconfig: KASAN, UBSAN, lockdep, ...) run by pytest-kunit, with
# no case failing and no sanitizer report.
# Compiles kernels: run it under the shared build lock (flock /tmp/kbuild.lock scripts/check-series.sh).
# Usage: scripts/check-series.sh [--no-debug] [WORKDIR]   (default: a temp dir; --no-debug leaves out the debug
# kernel, for a run that has already checked the same tree with testsuites/kunit-debug.kunitconfig)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
debug=yes
if [ "${1:-}" = --no-debug ]; then debug=no; shift; fi
work=${1:-$(mktemp -d /tmp/check-series.XXXXXX)}
tarball=/usr/src/linux-source-6.1.tar.xz
mkdir -p "$work"
if [ ! -d "$work/tree/.git" ]; then
    rm -rf "$work/tree" && mkdir -p "$work/tree"
    tar -xf "$tarball" -C "$work/tree" --strip-components=1
    git -C "$work/tree" init -q -b base
    git -C "$work/tree" add -f -A >/dev/null
    git -C "$work/tree" -c user.name=check -c user.email=check@invalid commit -q -m pristine
    git -C "$work/tree" tag pristine
fi
cd "$work/tree"
# checkpatch validates each SPDX line through scripts/spdxcheck.py; when that script cannot import its modules it
# prints a traceback (to the stderr dropped below) and the check is skipped.
python3 -c 'import ply, git' 2>/dev/null || {
    echo "check-series: checkpatch's SPDX check needs Python's ply and GitPython: pip install ply GitPython" \
        "(scripts/setup.sh --test installs them)" >&2
    exit 2
}
git am --abort >/dev/null 2>&1 || true
git checkout -q -f -B series pristine && git clean -q -fdx
fragment="$work/fragment.config"
cat "$repo"/testsuites/kunit.kunitconfig "$repo"/testsuites/of.kunitconfig > "$fragment"
printf 'CONFIG_PRINTK=y\nCONFIG_TTY=y\nCONFIG_SERIAL_8250=y\nCONFIG_SERIAL_8250_CONSOLE=y\nCONFIG_KERNEL_GZIP=y\n' >> "$fragment"
printf 'CONFIG_KUNIT_ALL_TESTS=y\nCONFIG_EXPERT=y\nCONFIG_BUG=y\n' >> "$fragment"
# The PVH entry (how the runner boots a vmlinux) is compiled too, though the bzImage boots below do not use it.
printf 'CONFIG_HYPERVISOR_GUEST=y\nCONFIG_PVH=y\n' >> "$fragment"
build="$work/build"
status=0
# Boot a prefix's bzImage (no init: the kernel runs the built-in suites, then panics for want of a root, and
# panic=-1 with -no-reboot ends QEMU) and read its console: every top-level KTAP result ok (a skip is `ok ... # SKIP`), and as
# many results as the plans announced, so a suite that crashed the kernel or never ran is a failure.
booted=""  # the checksum of the last image that booted green: a prefix that changed only documentation reuses it
boot() {
    local name=$1 console="$work/console-$1.log" start=$SECONDS sum
    [ -f "$build/arch/x86/boot/bzImage" ] || return 1
    sum=$(sha256sum < "$build/arch/x86/boot/bzImage")
    if [ "$sum" = "$booted" ]; then echo "boot $name: the previous prefix's image, already booted"; return 0; fi
    timeout 900 qemu-system-x86_64 -m 512 -display none -no-reboot -serial stdio -monitor none \
        -kernel "$build/arch/x86/boot/bzImage" -append "console=ttyS0 panic=-1 i8042.noaux i8042.nokbd" \
        > "$console" 2>&1 </dev/null || true
    # Console lines may carry a printk time stamp and a CR; top-level KTAP lines start in the first column.
    local ktap planned results bad
    ktap=$(sed -e 's/\r$//' -e 's/^\[ *[0-9.]*\] //' "$console")
    planned=$(grep -E '^1\.\.[0-9]+$' <<<"$ktap" | awk -F. '{n += $3} END {print n + 0}')
    results=$(grep -cE '^(not )?ok [0-9]+ ' <<<"$ktap" || true)
    bad=$(grep -E '^not ok [0-9]+ ' <<<"$ktap" || true)
    if [ "$planned" -gt 0 ] && [ "$results" -eq "$planned" ] && [ -z "$bad" ]; then
        echo "boot $name: ok ($results suites, $(( SECONDS - start )) s)"
        booted=$sum
    else
        echo "boot $name: FAILED ($results of $planned suites reported; console: $console)"
        [ -z "$bad" ] || sed 's/^/    /' <<<"$bad"
        return 1
    fi
}
for patch in "$repo"/kernel-patches/[0-9]*.patch; do
    name=$(basename "$patch")
    case "$name" in 0000-*) continue ;; esac
    git -c user.name=check -c user.email=check@invalid am -q "$patch" || { echo "FAIL apply $name"; exit 1; }
    # checkpatch exits non-zero on warnings; its summary and the types it names are what count here.
    report=$(perl scripts/checkpatch.pl --strict --terse --show-types "$patch" 2>/dev/null || true)
    echo "checkpatch $name: $(tail -1 <<<"$report")"
    notes=$(sed -n '/^---$/,/^diff --git /p' "$patch")
    for type in $(grep -o ' \(ERROR\|WARNING\|CHECK\):[A-Z_]*' <<<"$report" | sort -u); do
        case "$type" in
        ERROR:*) echo "checkpatch $name: $type"; status=1 ;;
        *) grep -q "${type#*:}" <<<"$notes" || { echo "checkpatch $name: $type not explained below ---"; status=1; } ;;
        esac
    done
    make -s O="$build" ARCH=x86_64 tinyconfig >/dev/null
    cat "$fragment" >> "$build/.config"
    # The fragment re-sets symbols tinyconfig set: Kconfig's "override" notes go to a log, not the report.
    make -s O="$build" ARCH=x86_64 olddefconfig >/dev/null 2>"$work/olddefconfig-$name.log"
    start=$(date +%s)
    if make -s O="$build" ARCH=x86_64 -j"$(nproc)" bzImage > "$work/build-$name.log" 2>&1; then
        echo "build $name: ok ($(( $(date +%s) - start )) s)"
    else
        echo "build $name: FAILED (log: $work/build-$name.log)"; status=1
    fi
    grep -E "warning:" "$work/build-$name.log" | head -5 || true
    boot "$name" || status=1
done
# The last prefix, the whole series, on a debug kernel: every case passes and no sanitizer, lockdep, debug-objects or
# kmemleak report is printed (the runner fails the case a report was printed in, or the run if no case was running).
# The runner applies kernel-patches/ to the packaged tarball itself, in its default cache, so this is the very kernel
# the real tier's tests/real/test_debug_real.py builds (in the tier's own cache). Then each fix's case with its fix
# undone (scripts/check-unfix.py: another cold debug build, of the series plus tests/data/unfix-patches).
[ $debug = yes ] || exit $status
start=$(date +%s)
if (cd "$repo" && PYTHONPATH="$repo" python3 -m pytest -p no:cacheprovider -q --kunit testsuites/kunit-debug.kunitconfig \
        --kunit-patches "$repo/kernel-patches") > "$work/debug.log" 2>&1
then
    echo "debug kernel: $(tail -1 "$work/debug.log") ($(( $(date +%s) - start )) s)"
else
    echo "debug kernel: FAILED (log: $work/debug.log)"; tail -5 "$work/debug.log"; status=1
fi
start=$(date +%s)
if (cd "$repo" && PYTHONPATH="$repo" python3 scripts/check-unfix.py) > "$work/unfix.log" 2>&1; then
    echo "each fix undone: its case fails ($(( $(date +%s) - start )) s)"
else
    echo "each fix undone: FAILED (log: $work/unfix.log)"; grep FAIL "$work/unfix.log" | head -10; status=1
fi
exit $status
