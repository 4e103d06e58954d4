"""The coverage report of a run: each boot's counters kept as they arrive (from any xdist worker), then gcovr once at
the end: HTML, Cobertura and lcov files, and the few lines the terminal shows (line coverage per tested file)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import KunitError
from . import coverage, guest_init
from .archive import UnsafeArchive

META = "boot.json"
# The terminal shows this many files; the HTML report has them all.
SHOWN_FILES = 25


def gcovr_command() -> list[str]:
    """gcovr from the Python pytest runs in (pip install 'pytest-kunit[coverage]'), checked before anything builds."""
    if importlib.util.find_spec("gcovr") is None:
        raise KunitError(
            "--kunit-coverage needs gcovr, which is not installed in the Python that runs pytest.",
            "pip install gcovr (or pip install 'pytest-kunit[coverage]'; scripts/setup.sh --test installs it).",
        )
    return [sys.executable, "-m", "gcovr"]


def save_boot(console: Sequence[str], boot_args: Sequence[str], build_dir: Path, tree: Path, destination: Path) -> None:
    """Keep one boot's counters under `destination` (with what the report needs to read them), or note their
    absence (the guest died before /init: its cases' coverage is missing from the report)."""
    destination.mkdir(parents=True, exist_ok=True)
    files, refused = 0, []
    try:
        tar = coverage.counters(console)
        if tar is not None:
            extracted = coverage.unpack(tar, build_dir, destination / "gcda")
            files, refused = len(extracted.files), extracted.refused
    except UnsafeArchive as error:
        tar, refused = None, [error.what]
    prefix = f"{guest_init.GCOV_ARG}="
    dirs = next((arg.removeprefix(prefix) for arg in boot_args if arg.startswith(prefix)), guest_init.ALL)
    meta = {
        "tree": str(tree),
        "build": str(build_dir),
        "dirs": dirs,
        "files": files,
        "counters": tar is not None,
        "refused": refused,
    }
    (destination / META).write_text(json.dumps(meta))


@dataclass(frozen=True)
class FileCoverage:
    path: str  # relative to the tree
    covered: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.total if self.total else 0.0


@dataclass(frozen=True)
class CoverageReport:
    directory: Path
    files: tuple[FileCoverage, ...]
    boots: int
    missing: int  # boots that died before their counters were copied out
    refused: tuple[str, ...] = ()  # what the guests sent that was not unpacked (archive.py), each "NAME: why"

    def summary(self) -> list[str]:
        """What the terminal shows: the report's path, then each tested file, best covered first."""
        covered = sum(item.covered for item in self.files)
        total = sum(item.total for item in self.files)
        percent = 100.0 * covered / total if total else 0.0
        lines = [
            f"coverage of {self.boots} boot(s): {self.directory / 'index.html'} (also coverage.xml, coverage.lcov, "
            "counters/)",
            f"{percent:6.1f}% {covered:>6}/{total:<6} all tested files",
        ]
        ranked = sorted(self.files, key=lambda item: (-item.percent, item.path))
        lines += [
            f"{item.percent:6.1f}% {item.covered:>6}/{item.total:<6} {item.path}" for item in ranked[:SHOWN_FILES]
        ]
        if len(ranked) > SHOWN_FILES:
            lines.append(f"... and {len(ranked) - SHOWN_FILES} more files in the report")
        if self.missing:
            lines.append(f"{self.missing} boot(s) ended before their counters were copied out (a crash or panic)")
        if self.refused:
            more = f" (and {len(self.refused) - 1} more)" if len(self.refused) > 1 else ""
            lines.append(f"refused from the guests' counters: {self.refused[0]}{more}; see each boot.json in counters/")
        return lines


def keep_counters(boots: Sequence[Path], output: Path) -> None:
    """Each boot's counters moved into the report's `counters/` (the last run's only), for gcov or lcov by hand."""
    kept = output / "counters"
    shutil.rmtree(kept, ignore_errors=True)
    for boot in boots:
        if boot.is_dir():
            kept.mkdir(parents=True, exist_ok=True)
            shutil.move(boot, kept / boot.name)


def _gcovr(arguments: list[str]) -> None:
    result = subprocess.run([*gcovr_command(), *arguments], capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise KunitError(
            f"gcovr failed (exit status {result.returncode}) making the coverage report.",
            "read gcovr's words below; the counters are kept where the command names them.",
            detail=(result.stderr or result.stdout)[-3000:] + f"\nCommand: gcovr {' '.join(arguments)}",
        )


def _refused(metas: list[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(str(entry) for meta in metas for entry in meta.get("refused", []))


def make_report(saved: Sequence[Path], output: Path) -> CoverageReport:
    """The counters of every boot (as `save_boot` kept them), summed by gcovr into one report in `output`, limited
    to the tested directories."""
    boots = [boot for boot in saved if (boot / META).is_file()]
    metas = [json.loads((boot / META).read_text()) for boot in boots]
    with_counters = [(boot, meta) for boot, meta in zip(boots, metas, strict=True) if meta["files"]]
    if not with_counters:
        raise KunitError(
            f"No boot of this run copied GCOV counters out of its guest ({len(boots)} boot(s)).",
            "run again with -v and read the consoles: /init prints the counters after KUnit's last suite.",
            detail="".join(f"refused: {entry}\n" for entry in _refused(metas)[:20]),
        )
    root = Path(with_counters[0][1]["tree"])
    filters: list[str] = []
    tracefiles: list[str] = []
    for boot, meta in with_counters:
        tree = re.escape(meta["tree"].rstrip("/"))
        dirs = meta["dirs"].split(",") if meta["dirs"] != guest_init.ALL else [""]
        filters += [f"{tree}/{re.escape(name)}/" if name else f"{tree}/" for name in dirs]
        tracefile = boot / "coverage.json"
        # gcov runs in the first working directory gcovr tries, and leaves its outputs and gcovr's lock file there:
        # given none, that is --root, the tree, whose changed time would make the next run rebuild the kernel.
        work = boot / "gcov-work"
        work.mkdir(exist_ok=True)
        # Kernel functions named __x are code like any other (gcovr leaves them out as a compiler's own by default).
        _gcovr(
            [
                *("--root", meta["tree"], "--gcov-object-directory", str(work), "--include-internal-functions"),
                *("--json", str(tracefile), str(boot / "gcda")),
            ]
        )
        tracefiles += ["--add-tracefile", str(tracefile)]
    output.mkdir(parents=True, exist_ok=True)
    summary = output / "summary.json"
    _gcovr(
        [
            "--root",
            str(root),
            *tracefiles,
            *(argument for pattern in dict.fromkeys(filters) for argument in ("--filter", pattern)),
            "--html-details",
            str(output / "index.html"),
            "--cobertura",
            str(output / "coverage.xml"),
            "--lcov",
            str(output / "coverage.lcov"),
            "--json-summary",
            str(summary),
        ]
    )
    files = tuple(
        FileCoverage(entry["filename"], int(entry["line_covered"]), int(entry["line_total"]))
        for entry in json.loads(summary.read_text())["files"]
    )
    missing = sum(1 for meta in metas if not meta["counters"])
    return CoverageReport(output, files, len(boots), missing, _refused(metas))
