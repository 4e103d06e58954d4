#!/usr/bin/env bash
# Check kernel-patches/ the way a maintainer would: `git am` onto a pristine extract of Debian's linux-source-6.1,
# `scripts/checkpatch.pl --strict` on every patch, and a build of every prefix of the series (tinyconfig + the
# guest's needs + every test the series adds). Usage: scripts/check-series.sh [WORKDIR]   (default: a temp dir)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
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
    # checkpatch exits non-zero on warnings; its summary line is what counts here.
    summary=$(perl scripts/checkpatch.pl --strict --terse "$patch" 2>&1 | tail -1 || true)
    echo "checkpatch $name: ${summary:-no problems}"
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
exit $status
