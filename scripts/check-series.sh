#!/usr/bin/env bash
# Check kernel-patches/ the way a maintainer would: `git am` onto a pristine extract of Debian's linux-source-6.1,
# `scripts/checkpatch.pl --strict` on every patch (no errors; each warning or check type left must be named in the
# patch's notes below its `---`, which say why it stays), a build of every prefix of the series in four
# configurations (x86_64: tinyconfig + the guest's needs + every test the series adds; UML and arm64: KUnit's fragment
# as kunit.py builds it, and arm64's device tree unittest; x86_64 with KUnit and its tristate tests as modules, the
# mock built into kunit.ko, checked to be built) and for alpha from the series' alpha fix on (the base cannot build
# alpha before it: patch 2, which leads the series for that reason), a boot of every x86_64 prefix in QEMU with
# every suite passing and of the last prefix on UML, arm64, alpha and x86_64 through the PVH entry, the last prefix's
# suites loaded as modules (pytest-kunit's --kunit-modules), and the whole series' suites on a debug kernel
# (testsuites/kunit-debug.kunitconfig: KASAN, UBSAN, lockdep, ...) run by pytest-kunit, with no case failing and no
# sanitizer report.
# Compiles kernels: run it under the shared build lock (flock /tmp/kbuild.lock scripts/check-series.sh).
# Usage: scripts/check-series.sh [--no-debug] [--configs LIST] [--last | --from N] [WORKDIR]   (default: a temp dir;
# --no-debug leaves out the debug kernel, for a run that has already checked the same tree with
# testsuites/kunit-debug.kunitconfig; LIST is a comma-separated subset of x86_64,um,arm64,kunit-m,alpha, all by default;
# --last builds and boots only the whole series, --from N the prefixes that end at patch N or later (for patches
# added to a series whose earlier prefixes were checked); every patch is still checked by checkpatch)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
debug=yes configs=x86_64,um,arm64,kunit-m,alpha last_only=no from=1
while [ $# -gt 0 ]; do
    case "$1" in
    --no-debug) debug=no; shift ;;
    --last) last_only=yes; shift ;;
    --from)
        [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "check-series: --from takes a patch number (1 for the first)" >&2; exit 2; }
        from=$((10#$2)); shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    *) break ;;
    esac
done
for config in ${configs//,/ }; do
    case "$config" in x86_64|um|arm64|kunit-m|alpha) ;; *) echo "check-series: unknown configuration $config" >&2; exit 2 ;; esac
done
# Each configuration's compiler and QEMU, checked before anything is built: the Debian package that has each.
for config in ${configs//,/ }; do
    case "$config" in
    arm64) tools="aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu qemu-system-aarch64:qemu-system-arm" ;;
    alpha) tools="alpha-linux-gnu-gcc:gcc-alpha-linux-gnu qemu-system-alpha:qemu-system-misc" ;;
    um) tools="gcc:gcc" ;;
    *) tools="gcc:gcc qemu-system-x86_64:qemu-system-x86" ;;
    esac
    for tool in $tools; do
        command -v "${tool%%:*}" >/dev/null || {
            echo "check-series: the $config configuration needs ${tool%%:*}: apt-get install ${tool#*:}" >&2
            exit 2
        }
    done
done
patches=("$repo"/kernel-patches/[0-9]*.patch)
# The cover letter and patches numbered 0000 to N once each, as format-patch writes them: a patch of an earlier
# version left beside the new ones (another name, the same number) would be applied too.
numbers=$(printf '%s\n' "${patches[@]##*/}" | cut -c1-4)
expected=$(seq -f %04g 0 $(( 10#$(tail -1 <<<"$numbers") )))
if [ "$numbers" != "$expected" ]; then
    echo "check-series: kernel-patches/ must number its patches 0000 to N once each, as format-patch writes them;" \
        "repeated: $(uniq -d <<<"$numbers" | tr '\n' ' ')missing: $(comm -13 <(sort -u <<<"$numbers") <(echo "$expected") |
        tr '\n' ' ')(remove what an earlier version left: scripts/format-series.sh rewrites the directory)" >&2
    exit 2
fi
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
# Each configuration's fragment, added to its base (tinyconfig, or kunit.py's olddefconfig from nothing).
kunit_fragment=$(cat "$repo"/testsuites/kunit.kunitconfig)
printf '%s\n' "$kunit_fragment" "$(cat "$repo"/testsuites/of.kunitconfig)" \
    'CONFIG_PRINTK=y' 'CONFIG_TTY=y' 'CONFIG_SERIAL_8250=y' 'CONFIG_SERIAL_8250_CONSOLE=y' 'CONFIG_KERNEL_GZIP=y' \
    'CONFIG_KUNIT_ALL_TESTS=y' 'CONFIG_EXPERT=y' 'CONFIG_BUG=y' \
    'CONFIG_HYPERVISOR_GUEST=y' 'CONFIG_PVH=y' > "$work/x86_64.config"
# (The PVH entry, through which QEMU boots a vmlinux as pytest-kunit does: the last prefix boots that way too.)
# From the series' debugfs run patch on (the patch that adds lib/kunit/debugfs_test.c), x86_64 is built with debugfs,
# so that its kunit_debugfs suite runs, and with what the boot that runs the suites again after boot (rerun, below,
# from the autorun patch on) needs besides: an initramfs and busybox's ELF.
rerun_config=('CONFIG_DEBUG_FS=y' 'CONFIG_BLK_DEV_INITRD=y' 'CONFIG_BINFMT_ELF=y' 'CONFIG_BINFMT_SCRIPT=y')
debugfs_run() { [ -f lib/kunit/debugfs_test.c ]; }
autorun() { grep -q '^config KUNIT_AUTORUN_ENABLED$' lib/kunit/Kconfig; }
printf '%s\n' "$kunit_fragment" > "$work/um.config"
# alpha as pytest-kunit's record configures it: the fragment and the clipper machine's 16550 console, the rest defaults.
printf '%s\n' "$kunit_fragment" 'CONFIG_SERIAL_8250=y' 'CONFIG_SERIAL_8250_CONSOLE=y' > "$work/alpha.config"
printf '%s\n' "$kunit_fragment" "$(cat "$repo"/testsuites/of.kunitconfig)" 'CONFIG_PRINTK=y' 'CONFIG_TTY=y' \
    'CONFIG_SERIAL_AMBA_PL011=y' 'CONFIG_SERIAL_AMBA_PL011_CONSOLE=y' 'CONFIG_BUG=y' > "$work/arm64.config"
# KUnit and its tests as modules, what distributions ship: written per prefix (kunit_m_config), as Kconfig takes `m`
# only for a tristate symbol and falls back to n for a bool one. The bool options (KUNIT_MOCK, KUNIT_DEBUGFS, ...)
# stay y and are built into kunit.ko; those that need KUnit built in (`depends on KUNIT=y`: the fault test) are not
# built, and configured() says which they are.
# The type Kconfig declares a symbol with in the tree at hand (tristate, bool, ...), empty when no Kconfig has it.
# shellcheck disable=SC2086
kconfig_type() {
    awk -v name="$1" '$1 == "config" || $1 == "menuconfig" { this = ($2 == name); next }
        this && $1 ~ /^(tristate|bool|int|string|hex)$/ { print $1; exit }' $kconfigs
}
kunit_m_config() {
    local line symbol kconfigs
    kconfigs=$(find . -name 'Kconfig*' -not -path './.git/*')
    while IFS= read -r line; do
        symbol=${line%%=y}
        symbol=${symbol#CONFIG_}
        if [ "$line" != "${line%=y}" ] && [ "$(kconfig_type "$symbol")" = tristate ]; then
            echo "CONFIG_$symbol=m"
        else
            echo "$line"
        fi
    done <<<"$kunit_fragment"
    printf '%s\n' 'CONFIG_MODULES=y' 'CONFIG_MODULE_UNLOAD=y' 'CONFIG_PRINTK=y' 'CONFIG_BUG=y'
}
# What Kconfig made of each `=y`/`=m` line of a configuration's fragment: a line it changed is named, with why where
# the reason is known (a bool that needs KUnit built in, when KUnit is a module), so no check claims to build what
# it does not.
configured() {
    local config=$1 line symbol got need
    while IFS= read -r line; do
        case "$line" in CONFIG_*=[ym]) ;; *) continue ;; esac
        symbol=${line%=*}
        got=$(grep -E "^$symbol=|^# $symbol is not set" "$work/build-$config/.config" || true)
        [ "$got" = "$line" ] && continue
        need=$(awk -v name="${symbol#CONFIG_}" '$1 == "config" { this = ($2 == name); next }
            this && $1 == "depends" && /KUNIT=y/ { print "needs KUNIT=y"; exit }' lib/kunit/Kconfig)
        echo "configure $config: $line became ${got:-absent}${need:+ ($need)}"
    done < "$work/$config.config"
}
# make's arguments and image of each configuration.
make_args() {
    case "$1" in
    x86_64|kunit-m) echo "ARCH=x86_64" ;;
    um) echo "ARCH=um" ;;
    arm64) echo "ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-" ;;
    alpha) echo "ARCH=alpha CROSS_COMPILE=alpha-linux-gnu-" ;;
    esac
}
targets() {
    case "$1" in x86_64) echo bzImage ;; kunit-m) echo "bzImage modules" ;; um) echo linux ;; arm64) echo Image ;; alpha) echo boot ;; esac
}
configure() {
    local config=$1 build="$work/build-$1" log="$work/config-$1.log"
    [ "$config" != kunit-m ] || kunit_m_config > "$work/kunit-m.config"
    # Kconfig's "override" notes go to a log, not the report: tinyconfig's own fragments override a choice (x86's
    # UNWINDER_GUESS), and the fragment re-sets symbols tinyconfig set.
    : > "$log"
    # shellcheck disable=SC2046
    if [ "$config" = um ] || [ "$config" = alpha ]; then
        # As kunit.py configures UML (and pytest-kunit alpha): the fragment alone, every other symbol at its default.
        mkdir -p "$build" && cp "$work/$config.config" "$build/.config"
    else
        make -s O="$build" $(make_args "$config") tinyconfig >/dev/null 2>>"$log"
        cat "$work/$config.config" >> "$build/.config"
        if [ "$config" = x86_64 ] && debugfs_run; then printf '%s\n' "${rerun_config[@]}" >> "$build/.config"; fi
    fi
    # shellcheck disable=SC2046
    make -s O="$build" $(make_args "$config") olddefconfig >/dev/null 2>>"$log"
    [ "$config" != kunit-m ] || configured kunit-m
}
# With KUnit a module: the mock built into kunit.ko, and the mock suites and the compat (RFC-style) suites as modules
# of their own, or the build checked nothing of them.
modules_built() {
    local build="$work/build-kunit-m" object objects="" missing=""
    if grep -q '^CONFIG_KUNIT_MOCK=y' "$build/.config"; then  # from the mock's patch on
        objects="lib/kunit/kunit.ko lib/kunit/mock.o lib/kunit/kunit-mock-test.ko"
    fi
    if grep -q '^CONFIG_KUNIT_COMPAT_TEST=m' "$build/.config"; then  # from the compat API's first patch on
        # Each compat suite the prefix has, but the string stream's, which KUnit's unexported functions keep built in.
        for object in lib/kunit/compat-*-test.c; do
            [ "$object" = lib/kunit/compat-string-stream-test.c ] || objects="$objects ${object%.c}.ko"
        done
    fi
    for object in $objects; do
        [ -f "$build/$object" ] || missing="$missing $object"
    done
    if [ -n "$missing" ]; then echo "build kunit-m $1: not built:$missing"; return 1; fi
}
status=0
# Boot an image with no init: the kernel runs the built-in suites, then panics for want of a root (panic=-1 with
# -no-reboot ends QEMU; UML halts at kunit_shutdown). Read its console: every top-level KTAP result ok (a skip is
# `ok ... # SKIP`), and as many results as the plans announced, so a suite that crashed the kernel or never ran is a
# failure.
booted=""  # the checksum of the last x86_64 image that booted green: a prefix that changed only documentation reuses it
booted_console=""  # and that boot's console
boot() {
    local config=$1 name=$2 console="$work/console-$1-$2.log" start=$SECONDS image sum
    local build="$work/build-${config%-pvh}"
    case "$config" in
    x86_64) image="$build/arch/x86/boot/bzImage" ;;
    x86_64-pvh) image="$build/vmlinux" ;;
    um) image="$build/linux" ;;
    arm64) image="$build/arch/arm64/boot/Image" ;;
    alpha) image="$build/arch/alpha/boot/vmlinux" ;;
    esac
    [ -f "$image" ] || return 1
    if [ "$config" = x86_64 ]; then
        sum=$(sha256sum < "$image")
        if [ "$sum" = "$booted" ]; then echo "boot $name: the previous prefix's image, already booted"; return 0; fi
    fi
    case "$config" in
    x86_64|x86_64-pvh) timeout 900 qemu-system-x86_64 -m 512 -display none -no-reboot -serial stdio -monitor none \
        -kernel "$image" -append "console=ttyS0 panic=-1 i8042.noaux i8042.nokbd" ;;
    um) timeout 900 "$image" mem=512M console=tty kunit_shutdown=halt ;;
    arm64) timeout 900 qemu-system-aarch64 -machine virt -cpu cortex-a57 -m 1024 -display none -no-reboot \
        -serial stdio -monitor none -kernel "$image" -append "console=ttyAMA0 panic=-1" ;;
    alpha) timeout 900 qemu-system-alpha -m 1024 -display none -no-reboot -serial stdio -monitor none \
        -kernel "$image" -append "console=ttyS0 panic=-1" ;;
    esac > "$console" 2>&1 </dev/null || true
    # Console lines may carry a printk time stamp and a CR; top-level KTAP lines start in the first column.
    local ktap planned results bad
    ktap=$(sed -e 's/\r$//' -e 's/^\[ *[0-9.]*\] //' "$console")
    planned=$(grep -E '^1\.\.[0-9]+$' <<<"$ktap" | awk -F. '{n += $3} END {print n + 0}')
    results=$(grep -cE '^(not )?ok [0-9]+ ' <<<"$ktap" || true)
    bad=$(grep -E '^not ok [0-9]+ ' <<<"$ktap" || true)
    if [ "$planned" -gt 0 ] && [ "$results" -eq "$planned" ] && [ -z "$bad" ]; then
        echo "boot $config $name: ok ($results suites, $(( SECONDS - start )) s)"
        [ "$config" != x86_64 ] || { booted=$sum; booted_console=$console; }
    else
        echo "boot $config $name: FAILED ($results of $planned suites reported; console: $console)"
        [ -z "$bad" ] || sed 's/^/    /' <<<"$bad"
        return 1
    fi
}
final_patch=${patches[-1]}
for patch in "${patches[@]}"; do
    name=$(basename "$patch")
    case "$name" in 0000-*) continue ;; esac
    git -c user.name=check -c user.email=check@invalid am -q "$patch" || { echo "FAIL apply $name"; exit 1; }
    # checkpatch exits 1 on a warning (its summary and the types it names are what count here); a perl error exits
    # above 1 with nothing on stdout, which must not read as a clean patch.
    checked=0
    report=$(perl scripts/checkpatch.pl --strict --terse --show-types "$patch" 2>"$work/checkpatch.err") || checked=$?
    if [ "$checked" -gt 1 ]; then
        echo "checkpatch $name: FAILED to run (exit $checked): $(head -3 "$work/checkpatch.err")"; status=1
    else
        # --terse prints nothing at all for a patch with nothing to report.
        echo "checkpatch $name: $(tail -1 <<<"${report:-clean}")"
    fi
    notes=$(sed -n '/^---$/,/^diff --git /p' "$patch")
    for type in $(grep -o ' \(ERROR\|WARNING\|CHECK\):[A-Z_]*' <<<"$report" | sort -u); do
        case "$type" in
        ERROR:*) echo "checkpatch $name: $type"; status=1 ;;
        *) grep -q "${type#*:}" <<<"$notes" || { echo "checkpatch $name: $type not explained below ---"; status=1; } ;;
        esac
    done
    last=$name
    if [ $last_only = yes ] && [ "$patch" != "$final_patch" ]; then continue; fi
    if [ $((10#${name:0:4})) -lt "$from" ]; then continue; fi
    for config in ${configs//,/ }; do
        # alpha does not build before its fix (patch 2): every prefix from it on is built for alpha.
        # (--grep, not a pipe into grep -q: under pipefail, git log killed by the early exit would read as no match.)
        if [ "$config" = alpha ] && [ -z "$(git log --format=%s --grep='^alpha: add missing address argument')" ]; then
            echo "build alpha $name: skipped (before the series' alpha fix)"; continue
        fi
        configure "$config"
        start=$(date +%s)
        # shellcheck disable=SC2046
        if make -s O="$work/build-$config" $(make_args "$config") -j"$(nproc)" $(targets "$config") \
                > "$work/build-$config-$name.log" 2>&1; then
            echo "build $config $name: ok ($(( $(date +%s) - start )) s)"
        else
            echo "build $config $name: FAILED (log: $work/build-$config-$name.log)"; status=1
        fi
        grep -E "warning:" "$work/build-$config-$name.log" | head -5 || true
        if [ "$config" = kunit-m ]; then modules_built "$name" || status=1; fi
        if [ "$config" = x86_64 ]; then boot x86_64 "$name" || status=1; fi
    done
done
# The whole series on UML, arm64 and alpha: their built-in suites all pass; and on x86_64 through the PVH entry (the
# vmlinux itself, as pytest-kunit boots it), which patch 1 fixes.
for config in ${configs//,/ }; do
    case "$config" in um|arm64|alpha) boot "$config" "$last" || status=1 ;; x86_64) boot x86_64-pvh "$last" || status=1 ;; esac
done
# The whole series booted with kunit.autorun=0 (from the series' autorun patch on), its suites then run through their
# debugfs run files by an initramfs's init, four times over (a suite must run correctly again, as often as it is
# asked to): no suite runs at boot, every suite with a run file runs each time and passes, and the suites without one
# are the device tree unittest's, which kunit_test_init_section_suites() registers (their code is freed once the
# kernel has booted), each of which the boot above ran.
rerun() {
    local build="$work/build-x86_64" root="$work/rerun-root" console="$work/console-rerun.log" start=$SECONDS
    local ktap boot_suites ran without results bad expected
    rm -rf "$root" && mkdir -p "$root/bin"
    cp "$(command -v busybox)" "$root/bin/busybox"
    cat > "$root/init" <<'INIT'
#!/bin/busybox sh
B=/bin/busybox
$B mkdir -p /sys && $B mount -t sysfs sysfs /sys && $B mount -t debugfs debugfs /sys/kernel/debug
echo "rerun: begin"
for dir in /sys/kernel/debug/kunit/*; do
    [ -e "$dir/run" ] || echo "rerun: no run file ${dir##*/}"
done
for pass in 1 2 3 4; do
    for dir in /sys/kernel/debug/kunit/*; do
        if [ -e "$dir/run" ]; then
            echo "rerun: run ${dir##*/}"
            echo 1 > "$dir/run"
        fi
    done
done
echo "rerun: end"
$B reboot -f
INIT
    chmod +x "$root/init"
    (cd "$root" && find . | cpio -o -H newc --quiet) > "$work/rerun.cpio"
    timeout 900 qemu-system-x86_64 -m 512 -display none -no-reboot -serial stdio -monitor none \
        -kernel "$build/arch/x86/boot/bzImage" -initrd "$work/rerun.cpio" \
        -append "console=ttyS0 panic=-1 i8042.noaux i8042.nokbd kunit.autorun=0 rdinit=/init" > "$console" 2>&1 \
        </dev/null || true
    ktap=$(sed -e 's/\r$//' -e 's/^\[ *[0-9.]*\] //' "$console")
    [ -n "$booted_console" ] || { echo "rerun $last: FAILED (no x86_64 boot of the series passed before it)"; return 1; }
    boot_suites=$(sed -e 's/\r$//' -e 's/^\[ *[0-9.]*\] //' "$booted_console" |
        sed -n 's/^    # Subtest: //p' | sort)
    ran=$(sed -n 's/^rerun: run //p' <<<"$ktap" | sort -u)
    runs=$(grep -c '^rerun: run ' <<<"$ktap" || true)
    without=$(sed -n 's/^rerun: no run file //p' <<<"$ktap" | sort)
    expected=$(grep '^of_' <<<"$boot_suites" || true)
    results=$(sed -n '/^rerun: begin$/,/^rerun: end$/p' <<<"$ktap" | grep -cE '^(not )?ok [0-9]+ ' || true)
    bad=$(grep -E '^not ok [0-9]+ ' <<<"$ktap" || true)
    if ! grep -q '^rerun: end$' <<<"$ktap"; then
        echo "rerun $last: FAILED (the init did not reach its end; console: $console)"; return 1
    elif sed -n '1,/^rerun: begin$/p' <<<"$ktap" | grep -qE '^(1\.\.[0-9]+|(not )?ok [0-9]+ )'; then
        echo "rerun $last: FAILED (suites ran at boot under kunit.autorun=0; console: $console)"; return 1
    elif [ -n "$bad" ] || [ "$results" -ne "$runs" ] || [ "$runs" -ne $(( 4 * $(grep -c . <<<"$ran") )) ]; then
        echo "rerun $last: FAILED ($results results for $runs runs of $(grep -c . <<<"$ran") suites; console: $console)"
        [ -z "$bad" ] || sed 's/^/    /' <<<"$bad"
        return 1
    elif [ "$(sort <<<"$ran"$'\n'"$without" | grep .)" != "$boot_suites" ] || [ "$without" != "$expected" ]; then
        echo "rerun $last: FAILED (the suites run and those without a run file are not the boot's, the device tree" \
            "unittest's without; console: $console)"
        return 1
    fi
    echo "rerun x86_64 $last: ok ($(grep -c . <<<"$ran") suites run again four times, none at boot;" \
        "$(grep -c . <<<"$without") of the device tree unittest without a run file; $(( SECONDS - start )) s)"
}
if [[ ",$configs," == *,x86_64,* ]] && autorun; then
    rerun || status=1
fi
# The whole series with KUnit's suites as modules, loaded after boot by pytest-kunit's module mode (--kunit-modules:
# KUnit itself built in, each tristate suite of the framework's fragment a module its initramfs loads), every case
# reported and none failing.
if [[ ",$configs," == *,kunit-m,* ]]; then
    start=$(date +%s)
    if (cd "$repo" && PYTHONPATH="$repo" python3 -m pytest -p no:cacheprovider -q --kunit testsuites/kunit.kunitconfig \
            --kunit-modules --kunit-patches "$repo/kernel-patches") > "$work/modules.log" 2>&1
    then
        echo "modules: $(grep -E '^kunit: .*(module|built in)' "$work/modules.log" | head -3 | tr '\n' ' ')$(tail -1 "$work/modules.log") ($(( $(date +%s) - start )) s)"
    else
        echo "modules: FAILED (log: $work/modules.log)"; tail -5 "$work/modules.log"; status=1
    fi
fi
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
