#!/usr/bin/env bash
# All set-up pytest-kunit needs on Debian 12: QEMU, the packaged kernel sources (6.1 for the main job, 6.12 for the
# real tier), the kernel build tools, and
# this package (editable, with its test tools). Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(qemu-system-x86 linux-source-6.1 linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev cpio rsync kmod git)
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

python3 -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v -e '^WARNING: Running pip as' -e 'is ignored: it is neither' || true
