#!/usr/bin/env bash
# The set-up pytest-kunit needs on Debian 12: QEMU and the compiler of each chosen guest architecture, the packaged
# kernel source, the kernel build tools, and this package (editable). With --test, also what the plugin's own tests
# need: the 6.12 source and both architectures for the real tier, and the test tools (hypothesis, mypy, ruff).
# Safe to run again: it installs only what is missing.
# Usage: scripts/setup.sh [--test] [--arch NAME[,NAME]...]...   (NAMEs as --kunit-arch takes them; default x86_64)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/setup.sh [--test] [--arch NAME[,NAME]...]... (NAME: $(arch_packages --names))" >&2
    exit 2
}

# The Debian packages of one architecture's guests, from its record in pytest_kunit/arch.py (which imports nothing
# that needs installing): its QEMU (none for UML, a host program) and, for a cross build, its compiler.
arch_packages() {
    python3 - "$@" <<'PY'
import sys
sys.path.insert(0, ".")
from pytest_kunit.arch import ARCHES
if sys.argv[1] == "--names":
    print(", ".join(sorted(ARCHES)))
elif sys.argv[1] in ARCHES:
    arch = ARCHES[sys.argv[1]]
    print(arch.qemu.package if arch.qemu else "", arch.make.compiler_package)
else:
    sys.exit(1)
PY
}

# ccache: --kunit-wrapper's default (auto) puts it in front of the compiler, so the main job's fragments share compiles.
packages=(linux-source-6.1 build-essential flex bison bc libelf-dev libssl-dev cpio rsync kmod git ccache)
arches=()
target=.
while (($#)); do
    case "$1" in
    --test)
        # distcc: the real tier compiles through a distccd of its own on localhost. busybox-static and gcovr (the
        # coverage extra): --kunit-coverage's guest /init and report. Debian's sh4 compiler: the real tier proves it is
        # refused for the miscompilation its record asks about.
        packages+=(linux-source-6.12 distcc busybox-static gcc-sh4-linux-gnu)
        arches+=(x86_64 arm64 i386 powerpc)
        target='.[test,coverage]'
        ;;
    --arch)
        (($# > 1)) || usage
        IFS=, read -ra named <<<"$2"
        arches+=("${named[@]}")
        shift
        ;;
    *) usage ;;
    esac
    shift
done
((${#arches[@]})) || arches=(x86_64)
for arch in "${arches[@]}"; do
    found=$(arch_packages "$arch") || {
        echo "setup: unknown architecture '$arch'" >&2
        usage
    }
    read -ra words <<<"$found"
    packages+=("${words[@]}")
done

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# pip's notes about running as root, or about an index this machine lacks, are noise here; its errors are not (its
# exit status stands).
python3 -m pip install -q --disable-pip-version-check -e "$target" \
    2> >(grep -v -e '^WARNING: Running pip as' -e 'is ignored: it is neither' >&2)
