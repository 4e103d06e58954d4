#!/usr/bin/env bash
# Check kernel-patches/ the way a maintainer would: `git am` onto a pristine extract of Debian's linux-source-6.1,
# `scripts/checkpatch.pl --strict` on every patch (no errors; each warning or check type left must be named in the
# patch's notes below its `---`, which say why it stays), a build of every prefix of the series (tinyconfig + the
# guest's needs + every test the series adds), and the whole series' suites on a debug kernel
# (testsuites/kunit-debug.kunitconfig: KASAN, UBSAN, lockdep, ...) with no case failing and no report on the console.
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
git am --abort >/dev/null 2>&1 || true
git checkout -q -f -B series pristine && git clean -q -fdx
fragment="$work/fragment.config"
cat "$repo"/testsuites/kunit.kunitconfig "$repo"/testsuites/of.kunitconfig > "$fragment"
printf 'CONFIG_PRINTK=y\nCONFIG_TTY=y\nCONFIG_SERIAL_8250=y\nCONFIG_SERIAL_8250_CONSOLE=y\nCONFIG_KERNEL_GZIP=y\n' >> "$fragment"
printf 'CONFIG_KUNIT_ALL_TESTS=y\nCONFIG_EXPERT=y\nCONFIG_BUG=y\n' >> "$fragment"
build="$work/build"
status=0
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
done
# The last prefix, the whole series, on a debug kernel: every case passes and the console holds no sanitizer,
# lockdep, debug-objects or kmemleak report (the runner fails a case whose run printed one, once it knows them;
# the grep below checks the consoles meanwhile).
[ $debug = yes ] || exit $status
# 6.1's PVH entry (how QEMU boots the vmlinux) must not be KASAN-instrumented: the plugin's own fix, on top.
git -c user.name=check -c user.email=check@invalid am -q "$repo"/tests/data/patches/pvh-kasan/*.patch
debug_cache="$work/debug-cache"
if (cd "$repo" && PYTHONPATH="$repo" python3 -m pytest -p no:cacheprovider -q --kunit testsuites/kunit-debug.kunitconfig \
        --kunit-kernel-src "$work/tree" --kunit-patches none --kunit-cache-dir "$debug_cache") > "$work/debug.log" 2>&1
then
    echo "debug kernel: $(tail -1 "$work/debug.log")"
else
    echo "debug kernel: FAILED (log: $work/debug.log)"; tail -5 "$work/debug.log"; status=1
fi
reports='BUG: KASAN|UBSAN:|WARNING: possible|BUG: sleeping function|BUG: scheduling while atomic|ODEBUG:|'
reports+='unreferenced object|WARNING: lock held|inconsistent lock state|BUG: workqueue leaked'
if grep -rE "$reports" "$debug_cache/consoles" > "$work/debug-reports.txt" 2>/dev/null; then
    echo "debug kernel: reports on the console (see $work/debug-reports.txt):"; head -5 "$work/debug-reports.txt"
    status=1
fi
exit $status
