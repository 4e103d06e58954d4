"""Per-session plugin state, kept in `config.stash`: settings, the prepared tree, kernels, the runner, figures."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .build import BuildRequest, build
from .kconfig import read_fragment
from .locking import cache_lock
from .options import Settings
from .overlay import install, suite_dir_for
from .qemu import ARCHES, QemuArch
from .runner import Kernel, Runner, Stats, list_cases
from .sources import case_locations
from .tree import PreparedTree, prepare

LIST_FORMAT = 2


class Progress:
    """A live status line on a terminal; an occasional plain line elsewhere (CI logs)."""

    def __init__(self, config: pytest.Config) -> None:
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self._last = 0.0

    def __call__(self, message: str) -> None:
        if self.reporter is None:
            return
        now = time.monotonic()
        if self.reporter.isatty():
            if now - self._last >= 0.1:
                width = shutil.get_terminal_size().columns
                self.reporter.rewrite(f"kunit: {message}"[: width - 1], erase=True, flush=True)
                self._last = now
        elif now - self._last >= 15:
            self.reporter.write_line(f"kunit: {message}", flush=True)
            self._last = now

    def done(self, message: str) -> None:
        if self.reporter is None:
            return
        if self.reporter.isatty():
            self.reporter.rewrite("", erase=True)
        self.reporter.write_line(f"kunit: {message}", flush=True)


@dataclass
class SessionState:
    config: pytest.Config
    settings: Settings
    stats: Stats = field(default_factory=Stats)
    runner: Runner = field(init=False)
    locations: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    _trees: dict[bool, PreparedTree] = field(default_factory=dict)
    # xdist gives all workers of one run the same id; a plain run gets its own.
    session: str = field(default_factory=lambda: os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex)

    def __post_init__(self) -> None:
        self.runner = Runner(self.settings, self.stats, self._raw_sink() if self.settings.raw else None)

    def _raw_sink(self) -> Callable[[str], None]:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")

        def sink(line: str) -> None:
            if reporter is not None:
                reporter.write_line(f"[guest] {line}")

        return sink

    @property
    def arch(self) -> QemuArch:
        return ARCHES[self.settings.arch]

    def tree(self, writable: bool) -> PreparedTree:
        """The prepared tree, once per session; `writable` when out-of-tree suites must be placed into it."""
        if writable not in self._trees:
            settings = self.settings
            self._trees[writable] = prepare(settings.kernel_src, settings.patch_dirs, settings.cache_dir, writable)
        return self._trees[writable]

    def kernel_for(self, path: Path, nodeid: str) -> Kernel:
        """Build (at most once) and list the kernel a kunitconfig file describes."""
        fragment = read_fragment(path)
        suite = suite_dir_for(path)
        tree = self.tree(writable=suite is not None)
        if suite is not None:
            with cache_lock(self.settings.cache_dir, f"src-{tree.key}"):
                install(tree.path, suite)
        progress = Progress(self.config)
        request = BuildRequest(
            tree,
            fragment,
            self.arch,
            self.settings.jobs,
            self.settings.cache_dir,
            extra_key=suite.digest() if suite else "",
            session=self.session,
        )
        result = build(request, progress)
        if result.ran_make:
            self.stats.builds += 1
            self.stats.build_seconds += result.seconds
            progress.done(f"built {path.name} in {result.seconds:.1f} s (log: {result.log})")
        cases, locations = self._listing(tree, result.build_dir, result.image, result.image_digest)
        self.locations[nodeid] = locations
        kernel = Kernel(nodeid, result, self.arch, tree.features, tree.path, cases)
        self.runner.kernels[nodeid] = kernel
        return kernel

    def _listing(
        self, tree: PreparedTree, build_dir: Path, image: Path, digest: str
    ) -> tuple[tuple[tuple[str, str], ...], dict[str, tuple[str, int]]]:
        """The image's cases (from a kunit.action=list boot) and their C locations, cached by image hash."""
        cache = self.settings.cache_dir / "lists" / f"{digest}.json"
        with cache_lock(self.settings.cache_dir, f"list-{digest}"):
            if cache.exists():
                data = json.loads(cache.read_text())
                if data.get("format") == LIST_FORMAT:
                    cases = tuple((suite, case) for suite, case in data["cases"])
                    locations = {name: (file, line) for name, (file, line) in data["locations"].items()}
                    return cases, locations
            cases = list_cases(self.runner, image, self.arch)
            locations = case_locations(tree.path, build_dir)
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"format": LIST_FORMAT, "cases": cases, "locations": locations}))
            return cases, locations


Durations = dict[str, dict[str, float]]  # kunitconfig node id -> suite -> seconds


def _durations_file(cache_dir: Path, rootpath: Path) -> Path:
    key = hashlib.sha256(str(rootpath).encode()).hexdigest()[:16]
    return cache_dir / "durations" / f"{key}.json"


def load_durations(cache_dir: Path, rootpath: Path) -> Durations:
    """Suite run times measured by earlier runs of this project: the weights batches are balanced by."""
    try:
        data = json.loads(_durations_file(cache_dir, rootpath).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_durations(cache_dir: Path, rootpath: Path, measured: Durations) -> None:
    """Merge this run's suite times in; only the process that plans for everyone (never an xdist worker) writes."""
    if not measured:
        return
    path = _durations_file(cache_dir, rootpath)
    path.parent.mkdir(parents=True, exist_ok=True)
    with cache_lock(cache_dir, f"durations-{path.stem}"):
        merged = load_durations(cache_dir, rootpath)
        for kernel, suites in measured.items():
            merged.setdefault(kernel, {}).update(suites)
        path.write_text(json.dumps(merged, indent=1, sort_keys=True))


STATE = pytest.StashKey[SessionState]()
