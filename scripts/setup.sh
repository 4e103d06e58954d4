#!/usr/bin/env bash
# The set-up pytest-kunit needs on Debian 12: QEMU, the packaged kernel source, the kernel build tools, and this
# package (editable). With --test, also what the plugin's own tests need: the 6.12 source for the real tier and the
# test tools (hypothesis, mypy, ruff). Safe to run again: it installs only what is missing.
# Usage: scripts/setup.sh [--test]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(qemu-system-x86 linux-source-6.1 build-essential flex bison bc libelf-dev libssl-dev cpio rsync kmod git)
target=.
if [ "${1:-}" = --test ]; then
    packages+=(linux-source-6.12)
    target='.[test]'
elif [ $# -gt 0 ]; then
    echo "usage: scripts/setup.sh [--test]" >&2
    exit 2
fi

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
