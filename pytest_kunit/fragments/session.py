"""A --kunit session's state (in `config.stash[STATE]`): what it keeps (its kernels' records, their cases' C
locations, what its summary says) and its pipeline (pipeline.py), which it sets up; or --kunit-replay's console."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..arch import Arch
from ..guest.caselists import CaseLists
from ..guest.replay import Replayed, ReplayError, ReplayRunner
from ..guest.runner import BootEdits, Runner
from ..host.progress import Progress
from ..kernel.requests import Requests
from ..kernel.treechoice import Trees
from ..model import BuildResult, BuiltKernel, Kernel, Settings, Stats
from ..versions import TreeFeatures
from .additions import run_additions
from .pipeline import Pipeline
from .reuse import Reuse
from .sharing import Sharing


def _boot_edits(config: pytest.Config, settings: Settings) -> BootEdits:
    """--kunit-kernel-args and --kunit-qemu-args, then the pytest_kunit_kernel_args and pytest_kunit_qemu_command
    hooks (which see the options' words, and may change them), as the runner calls them."""
    hook = config.hook

    def kernel_args(kernel: Kernel, args: list[str]) -> None:
        args.extend(settings.kernel_args)
        hook.pytest_kunit_kernel_args(config=config, kernel=kernel, args=args)

    def qemu_command(kernel: Kernel, command: list[str]) -> None:
        command.extend(settings.qemu_args)
        hook.pytest_kunit_qemu_command(config=config, kernel=kernel, command=command)

    return BootEdits(kernel_args, qemu_command)


def _raw_sink(config: pytest.Config) -> Callable[[str], None]:
    def sink(line: str) -> None:
        # Looked up per line: the state is made before the terminal reporter is registered.
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"[guest] {line}")

    return sink


@dataclass
class SessionState:
    """A --kunit session's state: its records, and the pipeline each fragment's kernel comes through."""

    config: pytest.Config
    settings: Settings
    arch: Arch  # the first of settings.arches's records, from the table the hooks and --kunit-arch-config completed
    # Every architecture the run builds for (--kunit-arch x86_64,arm64): the cases of each collected once per arch.
    arches: dict[str, Arch] = field(default_factory=dict)
    session: str = ""  # the run's id: xdist workers of one run share it, so they build once between them
    stats: Stats = field(default_factory=Stats)
    kernels: dict[str, BuiltKernel] = field(default_factory=dict)  # by fragment node id; xdist workers' too
    locations: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    coverage: list[str] = field(default_factory=list)  # what the terminal summary says of the coverage report
    # What failed the run while no case ran, per kernel (node id): the terminal summary's and JUnit's, not a test's.
    run_failures: dict[str, str] = field(default_factory=dict)
    pruned: str = ""  # what the cache's bounds removed at the session's end (cacheprune.py), for the summary
    replayed: Replayed | None = None  # --kunit-replay's console, which every outcome comes from
    replayed_as: str | None = None  # the node id the replayed console's cases were collected under
    trees: Trees = field(init=False)
    pipeline: Pipeline = field(init=False)

    def __post_init__(self) -> None:
        config, settings = self.config, self.settings
        self.arches = self.arches or {self.arch.name: self.arch}

        progress = functools.partial(Progress, config)

        def announce(message: str) -> None:
            # In a log only: a terminal shows pytest's own progress while cases run.
            progress().phase(message, terminal=False)

        sink = _raw_sink(config) if settings.raw else None
        runner = Runner(settings, self.stats, sink, _boot_edits(config, settings), announce, self.session)
        additions = run_additions(config, settings)
        self.trees = Trees(settings.cache_dir, ",".join(self.arches), progress)
        self.pipeline = Pipeline(
            settings=settings,
            rootpath=config.rootpath,
            additions=additions,
            requests=Requests(settings, self.trees, additions, self.session),
            case_lists=CaseLists(settings.cache_dir, progress),
            runner=runner,
            stats=self.stats,
            progress=progress,
            kernels=self.kernels,
            locations=self.locations,
        )
        if settings.share_kernels:
            self.pipeline.sharing = {name: Sharing(self.pipeline, config, arch) for name, arch in self.arches.items()}
        # A kernel built before has no modules, nor what a kept guest needs to run its built-in suites again.
        if settings.reuse_kernels and not settings.modules and not settings.keep_guest:
            self.pipeline.reuse = Reuse(self.pipeline, config)

    @property
    def runner(self) -> Runner:
        """What boots the guests and judges their consoles (a replay's: reads one saved console)."""
        return self.pipeline.runner

    def kernel_for(self, path: Path, key: str, arch: Arch | None = None) -> Kernel:
        """The listed kernel a kunitconfig file describes for `arch` (default: the run's first); `key` is the node id
        its suites are collected under. With --kunit-replay, the replayed console's."""
        if self.replayed is not None:
            return self._replayed_kernel(key)
        return self.pipeline.kernel(path, key, arch or self.arch)

    def replay(self, replayed: Replayed) -> None:
        """Take every outcome from `replayed`, a saved console, instead of building and booting."""
        self.replayed = replayed
        self.pipeline.runner = ReplayRunner(self.settings, self.stats, replayed)

    def _replayed_kernel(self, key: str) -> Kernel:
        """The replayed console as the kernel of `key` (a fragment, or the console file): one console is one boot of
        one kernel, so it serves one node."""
        replayed = self.replayed
        assert replayed is not None
        if self.replayed_as not in (None, key):
            raise ReplayError(
                f"--kunit-replay: the console {replayed.console} is one boot's, and its cases were collected under "
                f"{self.replayed_as} already; {key} cannot have them too.",
                "name the one fragment the console belongs to (pytest --kunit --kunit-replay LOG x.kunitconfig), or "
                "no path at all to collect them under the console file.",
            )
        self.replayed_as, console = key, replayed.console
        build = BuildResult(console, replayed.digest, console.parent, ran_make=False, seconds=0.0, log=console)
        self.locations[key] = {}
        tree_key = f"replay-{replayed.digest}"
        what = f"the console {console}, replayed (no build)"
        self.kernels[key] = BuiltKernel(key, tree_key, what, "", replayed.digest, self.arch.name, "", None)
        features = TreeFeatures(filter_list=False, case_timeout=False)
        return Kernel(key, build, self.arch, features, console.parent, replayed.cases)


STATE = pytest.StashKey[SessionState]()
