#!/usr/bin/env bash
# The set-up pytest-kunit needs on Debian 12, installing only what is missing (safe to run again):
# - with apt-get (as root, or through sudo): QEMU and the compiler of each chosen guest architecture, the packaged
#   kernel source (/usr/src/linux-source-6.1.tar.xz), the kernel build tools, ccache, and python3-venv when python3
#   cannot make a virtual environment;
# - with pip, into a virtual environment of the checkout's own, .venv (never the system's site-packages): this package,
#   editable, and its dependencies (pytest, pluggy, pytest-xdist, pexpect, filelock).
# With --test, also what the plugin's own tests need: the 6.12 source and more architectures for the real tier, and
# into .venv the test and coverage extras (hypothesis, mypy, ruff, build, twine, gcovr, ...); and the real tier's
# second host, a user of its own (kunit-remote) with a Python environment of its own holding pytest-kunit.
# The commands then run .venv/bin/python -m pytest. python3 (the first on PATH) must be Python 3.11 or later.
# Usage: scripts/setup.sh [--test] [--arch NAME[,NAME]...]...   (NAMEs as --kunit-arch takes them; default x86_64)
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "setup: pytest-kunit needs Python 3.11 or later; python3 here is $(python3 -V 2>&1) ($(command -v python3))." >&2
    echo "setup: put a Python 3.11+ first on PATH (Debian 12's own /usr/bin/python3 is 3.11)." >&2
    exit 1
}

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
remote_host=""
while (($#)); do
    case "$1" in
    --test)
        # distcc: the real tier compiles through a distccd of its own on localhost. busybox-static and gcovr (the
        # coverage extra): --kunit-coverage's guest /init and report. Debian's sh4 compiler: the real tier proves it is
        # refused for the miscompilation its record asks about. Debian's own python3 and its venv: the second host's.
        packages+=(linux-source-6.12 distcc busybox-static gcc-sh4-linux-gnu python3 python3-venv)
        arches+=(x86_64 arm64 i386 powerpc)
        target='.[test,coverage]'
        remote_host=kunit-remote
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

# Debian's python3 makes a virtual environment only with python3-venv (its ensurepip): without it, `python3 -m venv`
# fails halfway.
python3 -c 'import ensurepip, venv' 2>/dev/null || packages+=(python3-venv)

sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The checkout's own environment, made anew when it is missing, its python no longer runs (its python3 was removed) or
# it has no pip (a venv made before python3-venv was installed).
venv=.venv
if ! "$venv/bin/python" -c 'import pip, sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup: making the virtual environment $PWD/$venv"
    python3 -m venv --clear "$venv" || {
        echo "setup: '$(command -v python3) -m venv' failed; install its venv module (Debian: apt-get install python3-venv)." >&2
        exit 1
    }
fi
# pip's notes about an index this machine lacks are noise here; its errors are not (its exit status stands).
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$target" \
    2> >(grep -v -e 'is ignored: it is neither' >&2)

# The real tier's second host (tests/real/test_two_hosts.py): a user of this machine with its own HOME (so its own
# cache), reached as xdist workers are on another machine, over execnet's socket server. Its Python is the system's
# (a python3 under another user's home, pyenv's, is not its to run), in a virtual environment of its own holding
# pytest-kunit and its dependencies (pytest-xdist among them) as `pip install pytest-kunit` puts them on any host: a
# wheel of this checkout, built here (that user cannot read the checkout). Made once; the workers run the controller's
# pytest-kunit, which xdist's --rsyncdir sends them on each run.
if [ -n "$remote_host" ]; then
    id -u "$remote_host" >/dev/null 2>&1 || {
        echo "setup: adding the user $remote_host, the real tier's second host"
        $sudo useradd --create-home --shell /bin/bash "$remote_host"
    }
    remote_home=$(getent passwd "$remote_host" | cut -d: -f6)
    remote_python="$remote_home/.venv/bin/python"
    if ! $sudo runuser -u "$remote_host" -- "$remote_python" -c 'import pytest_kunit, xdist' 2>/dev/null; then
        echo "setup: installing pytest-kunit into $remote_host's virtual environment $remote_home/.venv"
        wheels=$(mktemp -d /tmp/pytest-kunit-wheel.XXXXXX)
        "$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$wheels" . \
            2> >(grep -v -e 'is ignored: it is neither' >&2)
        chmod -R a+rX "$wheels"
        $sudo runuser -u "$remote_host" -- /usr/bin/python3 -m venv --clear "$remote_home/.venv"
        $sudo runuser -u "$remote_host" -- "$remote_python" -m pip install -q --disable-pip-version-check "$wheels"/*.whl
        rm -rf "$wheels"
    fi
fi
