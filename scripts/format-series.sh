#!/usr/bin/env bash
# Write kernel-patches/ from a kernel git tree whose branch holds the series on top of a commit of the pristine
# linux-source-6.1 extract: git format-patch with 9-digit abbreviations, no mail signature, the commits' git notes
# (why a checkpatch warning stays) below each "---", and blank context lines and blank note lines
# as empty lines (checkpatch then finds no trailing whitespace however the patches are fed to it). The cover
# letter's subject and text are kept from the existing 0000-cover-letter.patch; its shortlog and diffstat are new.
# Usage: scripts/format-series.sh TREE BASE   (e.g. /work/series-tree pristine)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$1 base=$2
out=$(mktemp -d)
git -C "$tree" format-patch -q --abbrev=9 --no-signature --notes --cover-letter -o "$out" "$base"
sed -i 's/^ $//' "$out"/*.patch
# git indents notes by four spaces, blank lines too: those would be trailing whitespace to checkpatch.
sed -i '/^---$/,/^diff --git /s/^[[:space:]]\+$//' "$out"/*.patch
python3 - "$repo/kernel-patches/0000-cover-letter.patch" "$out/0000-cover-letter.patch" <<'PY'
import re, sys
old, new = (open(p).read() for p in sys.argv[1:])
subject = re.search(r"^Subject: \[PATCH [0-9]+/[0-9]+\] (.*)$", old, re.M)[1]
start = old.index("\n\n", old.index("Subject:")) + 2
# The blurb ends where git's shortlog begins: its first "Author Name (N):" line.
blurb = old[start : start + re.search(r"(?m)^\S[^\n]* \([0-9]+\):\n  ", old[start:]).start() - 1]
new = re.sub(r"(?m)^(Subject: \[PATCH [0-9]+/[0-9]+\] )\*\*\* SUBJECT HERE \*\*\*$", lambda m: m[1] + subject, new)
new = new.replace("*** BLURB HERE ***\n", blurb)
open(sys.argv[2], "w").write(new)
PY
rm -f "$repo"/kernel-patches/*.patch
cp "$out"/*.patch "$repo/kernel-patches/"
rm -rf "$out"
