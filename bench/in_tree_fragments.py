#!/usr/bin/env python3
"""Every in-tree fragment of a kernel tree (each `.kunitconfig` in it; 21 in 6.12), both tools, case by case.

kunit.py runs each fragment as its documentation says, `kunit.py run --kunitconfig=DIR --json` on its default
architecture (UML), one after another in one build directory, as a developer's `.kunit/` is reused; pytest-kunit
runs all of them in ONE session from inside the tree (`pytest --kunit DIR/.kunitconfig ... --kunit-share-kernels`),
so fragments share a kernel where its rule allows, started beside kunit.py's first run (two builds at most at once).
After every kunit.py run and at the session's end the table is written again, so a long run can be read as it goes:

    bench/in_tree_fragments.py --tree ~/src/linux-6.12 [--work /work/fragments-bench] [--arch um] [--table-only]

In --work: results.md (the table), kunitpy/DIR.json and .log per fragment, kunitpy-seconds.json, pytest-kunit.log,
pk.json (--kunit-json: a group per kernel key, the fragment's node id). --table-only writes the table again from
those files. A parameterised case is one entry on both sides (its parameters' worst), as bench/kunitpy_alltests.py
reads them. Exit 0 when every fragment is equal on both sides (or refused by both).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kunitpy_alltests import ENV, Verdicts, group_verdicts, verdicts

FRAGMENT = ".kunitconfig"
# A fragment pytest-kunit refused: its collection error's section, "___ ERROR collecting DIR/.kunitconfig ___", up to
# the next section's rule.
REFUSED = re.compile(rf"^_+ ERROR collecting (\S+/{re.escape(FRAGMENT)}) _+$\n(.*?)(?=^_{{3}}|^={{3}})", re.M | re.S)
BUILT = re.compile(r"kunit: built (\S+) in ([\d.]+) s")
# Where kunit.py says why it ran nothing, most telling first: the symbols its configuration check missed, then any
# error line (a failed build, no KTAP).
KUNITPY_ERRORS = (("Missing:",), ("ERROR:", "Error:", "error:", "Could not find any KTAP output"))


@dataclass(frozen=True)
class Side:
    """One tool's result for one fragment."""

    verdicts: Verdicts
    refused: str = ""  # why it ran nothing; "" when it ran
    pending: bool = False  # not run yet

    def shown(self) -> str:
        if self.pending:
            return "(not yet)"
        if self.refused:
            return "refused"
        if not self.verdicts:
            return "0"
        counts = Counter(self.verdicts.values())
        return f"{len(self.verdicts)}: " + ", ".join(f"{counts[status]} {status}" for status in sorted(counts))


def in_tree_fragments(tree: Path) -> list[str]:
    """Each fragment's directory relative to the tree, sorted."""
    found = []
    for directory, _, files in os.walk(tree):
        if FRAGMENT in files:
            found.append(os.path.relpath(directory, tree))
    return sorted(found)


def slug(fragment: str) -> str:
    return fragment.replace("/", "_")


def kunitpy_side(work: Path, fragment: str) -> Side:
    report, log = work / "kunitpy" / f"{slug(fragment)}.json", work / "kunitpy" / f"{slug(fragment)}.log"
    if not log.exists():
        return Side({}, pending=True)
    found = verdicts(report) if report.exists() else {}
    if found:
        return Side(found)
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    said = [line for starts in KUNITPY_ERRORS for line in lines if line.startswith(starts)]
    return Side({}, refused=(said[0] if said else (lines[-1] if lines else "no output"))[:300])


def pytest_kunit_sides(work: Path, fragments: list[str]) -> dict[str, Side]:
    """Each fragment's verdicts from the session's --kunit-json (a group per kernel key when it ran several, else
    the suites at the top, their `defconfig` the key), or its collection error from the log."""
    report, log = work / "pk.json", work / "pytest-kunit.log"
    if not report.exists():
        return {fragment: Side({}, pending=True) for fragment in fragments}
    document: dict[str, Any] = json.loads(report.read_text())
    groups = document["sub_groups"]
    by_key: dict[str, Verdicts] = {}
    if groups and all(group["name"] == group["defconfig"] for group in groups):
        by_key = {group["name"]: group_verdicts(group) for group in groups}
    elif groups:
        by_key[groups[0]["defconfig"]] = group_verdicts(document)
    refusals = {  # the error's first two lines: what is wrong, and the first symbol or file it names
        key: " ".join([line.strip() for line in section.splitlines() if line.strip()][:2]) or "a collection error"
        for key, section in (REFUSED.findall(log.read_text(errors="replace")) if log.exists() else [])
    }
    sides = {}
    for fragment in fragments:
        key = f"{fragment}/{FRAGMENT}"
        sides[fragment] = Side(by_key.get(key, {}), refused=refusals.get(key, "")[:300])
    return sides


def agreement(theirs: Side, mine: Side) -> str:
    if theirs.pending or mine.pending:
        return "pending"
    if theirs.refused and mine.refused:
        return f"both refuse. kunit.py: `{theirs.refused}`; pytest-kunit: `{mine.refused}`"
    if theirs.refused or mine.refused:
        who, why = ("kunit.py", theirs.refused) if theirs.refused else ("pytest-kunit", mine.refused)
        return f"DIFFERENT: only {who} refuses: `{why}`"
    if not mine.verdicts and not theirs.verdicts:
        return "equal (no cases on either side)"
    differing = sorted(
        case
        for case in theirs.verdicts.keys() | mine.verdicts.keys()
        if theirs.verdicts.get(case) != mine.verdicts.get(case)
    )
    if not differing:
        return "equal"
    shown = "; ".join(
        f"{suite}.{case} {theirs.verdicts.get((suite, case), '-')}/{mine.verdicts.get((suite, case), '-')}"
        for suite, case in differing[:4]
    )
    return f"DIFFERENT in {len(differing)} (kunit.py/pytest-kunit): {shown}"


def write_table(work: Path, fragments: list[str]) -> bool:
    """results.md from what is on disk; whether every fragment agrees."""
    seconds_file, session_file = work / "kunitpy-seconds.json", work / "pytest-kunit-seconds"
    seconds: dict[str, float] = json.loads(seconds_file.read_text()) if seconds_file.exists() else {}
    pytest_seconds = float(session_file.read_text()) if session_file.exists() else None
    mine = pytest_kunit_sides(work, fragments)
    log = work / "pytest-kunit.log"
    built = BUILT.findall(log.read_text(errors="replace")) if log.exists() else []
    rows = [
        "| fragment | kunit.py cases: verdicts | s | pytest-kunit cases: verdicts | agreement |",
        "|---|---|---|---|---|",
    ]
    agreed = True
    for fragment in fragments:
        theirs = kunitpy_side(work, fragment)
        said = agreement(theirs, mine[fragment])
        agreed = agreed and (said.startswith(("equal", "both refuse")))
        took = f"{seconds[fragment]:.0f}" if fragment in seconds else ""
        rows.append(f"| `{fragment}` | {theirs.shown()} | {took} | {mine[fragment].shown()} | {said} |")
    lines = [
        f"kunit.py: {len(seconds)} of {len(fragments)} fragments run, {sum(seconds.values()):.0f} s in all.",
        "pytest-kunit: one session"
        + (f", {pytest_seconds:.0f} s" if pytest_seconds is not None else " (running)")
        + f"; kernels built: {len(built)}"
        + (" (" + "; ".join(f"{name} {float(took):.0f} s" for name, took in built) + ")" if built else "")
        + ".",
        "",
        *rows,
    ]
    (work / "results.md").write_text("\n".join(lines) + "\n")
    return agreed


def run_kunitpy(copy: Path, work: Path, fragment: str, arch: str) -> float:
    report, log = work / "kunitpy" / f"{slug(fragment)}.json", work / "kunitpy" / f"{slug(fragment)}.log"
    report.unlink(missing_ok=True)
    command = [sys.executable, "tools/testing/kunit/kunit.py", "run", f"--kunitconfig={fragment}", f"--arch={arch}"]
    command += ["--jobs=2", f"--build_dir={work / f'kunitpy-{arch}-build'}", f"--json={report}"]
    started = time.monotonic()
    with log.open("w") as out:
        subprocess.run(command, cwd=copy, env=ENV, stdout=out, stderr=subprocess.STDOUT, check=False)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the kernel tree")
    parser.add_argument("--work", type=Path, default=Path("/work/fragments-bench"), help="caches, copy and results")
    parser.add_argument("--arch", default="um", help="kunit.py's default, um")
    parser.add_argument("--table-only", action="store_true", help="write results.md again from --work's files")
    args = parser.parse_args()
    tree, work = args.tree.resolve(), args.work.resolve()
    fragments = in_tree_fragments(tree)
    if args.table_only:
        return 0 if write_table(work, fragments) else 1
    shutil.rmtree(work / "kunitpy", ignore_errors=True)  # an earlier run's logs would read as this one's
    (work / "kunitpy").mkdir(parents=True)
    copy = work / "tree-kunitpy"
    if not copy.exists():
        subprocess.run(["cp", "-al", str(tree), str(copy)], check=True)
    ours = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--kunit", f"--kunit-arch={args.arch}"]
    ours += ["--kunit-share-kernels", "--continue-on-collection-errors", f"--kunit-cache-dir={work / 'cache'}"]
    ours += [f"--kunit-json={work / 'pk.json'}", f"--junitxml={work / 'pk.xml'}", "-rfEs"]
    ours += [f"{fragment}/{FRAGMENT}" for fragment in fragments]
    for stale in ("pk.json", "pytest-kunit-seconds", "kunitpy-seconds.json"):
        (work / stale).unlink(missing_ok=True)
    table = threading.Lock()  # the session's thread and the kunit.py loop both write the table

    def session() -> None:
        started = time.monotonic()
        with (work / "pytest-kunit.log").open("w") as out:
            environment = ENV | {"COLUMNS": "1000"}  # a refused fragment's summary line whole
            subprocess.run(ours, cwd=tree, env=environment, stdout=out, stderr=subprocess.STDOUT, check=False)
        (work / "pytest-kunit-seconds").write_text(f"{time.monotonic() - started:.1f}\n")
        with table:
            write_table(work, fragments)

    pytest_kunit = threading.Thread(target=session)
    pytest_kunit.start()
    seconds: dict[str, float] = {}
    for fragment in fragments:
        seconds[fragment] = run_kunitpy(copy, work, fragment, args.arch)
        with table:
            (work / "kunitpy-seconds.json").write_text(json.dumps(seconds, indent=1))
            write_table(work, fragments)
    pytest_kunit.join()
    agreed = write_table(work, fragments)
    print((work / "results.md").read_text())
    return 0 if agreed else 1


if __name__ == "__main__":
    sys.exit(main())
