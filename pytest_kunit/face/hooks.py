"""The hooks of a session run with --kunit, registered by plugin.py only then: building, listing, collecting,
planning, timing and summing up kernel test cases."""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Generator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest

from ..arch import Arch
from ..compat import add_junit_suite_property, read_stdin_past_capture
from ..errors import KunitError, KunitWarning
from ..findings.coverage_report import gcovr_command, keep_counters, make_report
from ..fragments.files import collects
from ..fragments.session import STATE, SessionState
from ..guest import initramfs
from ..guest.launch import launcher
from ..guest.planning import PlannedCase
from ..guest.replay import Replayed, ReplayError, read_console
from ..host.cache import load_durations, save_durations
from ..host.cachedir import trusted_cache_dir
from ..host.cachelayout import CacheLayout
from ..host.cacheprune import Bounds, prune, summary
from ..host.progress import FORWARD
from ..model import STDIN, Settings
from ..scaleout.image_service import progress_sender, worker_client
from ..scaleout.protocol import WorkerInput, WorkerOutput, received_input
from ..scaleout.workers import is_worker, run_id, worker_count
from . import alltests, filter_action
from .hints import Hints, check_command_line
from .kcidb import REPORT_KEY, KcidbWriter, case_run
from .kunitpy_json import KunitJsonWriter, attach
from .nodes import ARCH_PROPERTY, CASE_PROPERTY, MARKERS, KunitCase, KunitconfigFile, fragment_nodeid
from .report import JUNIT_NAMES_KEY, JunitNames, junit_names, junit_properties, split_verdicts
from .switch import given
from .tree_root import KernelTreeGround

HANDED = pytest.StashKey[WorkerInput | None]()  # what the xdist controller handed this worker, checked once


def start(config: pytest.Config, settings: Settings, arches: dict[str, Arch]) -> None:
    """Set the session up for `arches` (the run's, in --kunit-arch's order), and register the xdist scheduler where
    xdist runs (plugin.py registers this module)."""
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    check_command_line(config)
    config.pluginmanager.register(KernelTreeGround(), "kunit-kernel-tree")
    config.pluginmanager.register(Hints(), "kunit-hints")
    arches = _runnable(config, settings, arches)
    try:
        settings = replace(settings, cache_dir=trusted_cache_dir(settings.cache_dir))
    except KunitError as error:
        raise pytest.UsageError(error.render()) from None
    first = next(iter(arches.values()))
    state = config.stash[STATE] = SessionState(config, settings, first, arches=arches, session=run_id(config))
    try:
        handed = config.stash[HANDED] = received_input(config)
    except KunitError as error:
        raise pytest.UsageError(error.render()) from None
    if handed is not None:
        config.stash[FORWARD] = progress_sender(handed)
    client = worker_client(handed, settings.cache_dir, state.stats)
    if client is not None:
        state.pipeline.remote = client
        state.runner.decode = client.decode
        state.runner.obtain = client.obtain
    if settings.kcidb is not None and not is_worker(config):
        config.pluginmanager.register(KcidbWriter(config), "kunit-kcidb")
    if config.getoption("xmlpath", None) and not is_worker(config):
        config.pluginmanager.register(JunitNames(config), "kunit-junit-names")
    if settings.kunit_json is not None and not is_worker(config):
        config.pluginmanager.register(KunitJsonWriter(settings.kunit_json), "kunit-json")
    alltests.register(config, settings)
    filter_action.register(config, settings)
    if settings.replay is not None:
        _start_replay(config, state)
        return
    # xdist registers under its entry point's name when autoloaded, under its module's with `-p xdist.plugin`.
    if any(config.pluginmanager.hasplugin(name) for name in ("xdist", "xdist.plugin")):
        from ..scaleout.scheduling import KunitXdist

        config.pluginmanager.register(KunitXdist(config), "kunit-xdist")


def _runnable(config: pytest.Config, settings: Settings, arches: dict[str, Arch]) -> dict[str, Arch]:
    """`arches` as this run's options have them (--kunit-cross-compile's prefix), once every option is known to
    apply to them: a usage error names one that cannot, a warning one that is ignored."""
    if settings.cross_compile is not None:
        if len(arches) > 1:
            raise pytest.UsageError(
                f"{given(config, 'kunit_cross_compile')} names one compiler prefix, which cannot build "
                f"{' and '.join(arches)} both: leave it out, or run one architecture."
            )
        # The record's package no longer names the compiler: a missing one is named by its prefix.
        arches = {
            name: replace(arch, make=replace(arch.make, cross_compile=settings.cross_compile, compiler_package=""))
            for name, arch in arches.items()
        }
    uml = [arch.name for arch in arches.values() if arch.qemu is None]
    if settings.qemu_args and uml:
        raise pytest.UsageError(
            f"{given(config, 'kunit_qemu_args')}: arch {uml[0]} boots no QEMU (its kernel runs as a host program), "
            "so there is no QEMU command to add to: give the kernel's own arguments with --kunit-kernel-args"
        )
    for arch in arches.values():
        guest = launcher(arch)
        for name in guest.unused_options:
            source = given(config, name)
            if source is not None:
                note = f"pytest-kunit: {source} does not apply to arch {arch.name}, and is ignored: {guest.unused_why}"
                config.issue_config_time_warning(KunitWarning(note), stacklevel=2)
    qemu_guests = [arch.name for arch in arches.values() if arch.qemu is not None]
    if settings.qemu is not None and len(qemu_guests) > 1:
        raise pytest.UsageError(
            f"{given(config, 'kunit_qemu')} names one QEMU binary, which cannot boot {' and '.join(qemu_guests)} "
            "both: leave it out (each architecture's own qemu-system-* is used), or run one architecture."
        )
    for arch in arches.values():
        why = initramfs.unavailable(arch)
        if settings.coverage is not None and why:
            raise pytest.UsageError(f"--kunit-coverage cannot run on arch {arch.name}: {why}")
    if settings.coverage is not None:
        try:
            gcovr_command()  # before any build: a missing gcovr is known at once
        except KunitError as error:
            raise pytest.UsageError(error.render()) from None
    return arches


def _start_replay(config: pytest.Config, state: SessionState) -> None:
    """--kunit-replay: every outcome from the saved console; its cases under the fragment named, else under the
    console file itself (collected in place of the default paths)."""
    if getattr(config.option, "dist", "no") != "no" or is_worker(config):
        raise pytest.UsageError("--kunit-replay reads one console in one process: run it without -n, -d or --dist")
    if state.settings.matrix:
        raise pytest.UsageError(
            "--kunit-replay reads one boot's console, of one architecture: give --kunit-arch one name (or none)"
        )
    try:
        state.replay(read_replay(config, state.settings))
    except KunitError as error:
        raise pytest.UsageError(error.render()) from None


def read_replay(config: pytest.Config, settings: Settings) -> Replayed:
    """The console --kunit-replay names, parsed; one read from stdin is kept in the cache first (its node ids read
    `stdin::suite::case`)."""
    path = settings.replay
    assert path is not None
    if path == STDIN:
        data, shown = read_stdin_past_capture(config), "from stdin"
        path = CacheLayout(settings.cache_dir).replay(hashlib.sha256(data).hexdigest()[:16])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    else:
        data, shown = path.read_bytes(), str(path)
    if b"\0" in data:
        raise ReplayError(
            f"The console {shown} holds binary data (NUL bytes), not a kernel's console.",
            "replay the text file a serial console was saved to (decompress it first).",
        )
    return read_console(path, data.decode(errors="replace"), shown)


def coverage_summary(state: SessionState) -> list[str]:
    """The run's coverage report, made from every boot's counters; its summary, or why there is none."""
    boots, output = [Path(boot) for boot in state.runner.coverage_boots], state.settings.coverage
    if output is None:
        return []
    try:
        return make_report(boots, output).summary()
    except KunitError as error:
        return ["no coverage report: " + error.render()]
    finally:
        keep_counters(boots, output)


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash[STATE]
    settings = state.settings
    if state.replayed is not None:
        return f"kunit: replaying the console {state.replayed.console} (no build, no boot); arch {settings.arch}"
    source = settings.kernel_src or "the kernel tree each fragment lies in, else the packaged tarball"
    header = f"kunit: kernel source {source}; arch {','.join(state.arches)}; cache {settings.cache_dir}"
    knobs = [
        ("kconfig added", settings.kconfig_add),
        ("make options", settings.make_options),
        ("cross compiler", () if settings.cross_compile is None else (repr(settings.cross_compile),)),
        ("kernel arguments added", settings.kernel_args),
        ("QEMU arguments added", settings.qemu_args),
    ]
    return header + "".join(f"; {what} {shlex.join(words)}" for what, words in knobs if words)


def pytest_collection(session: pytest.Session) -> bool | None:
    """--kunit-replay with no path named: the saved console is collected, in place of the default paths."""
    replayed = session.config.stash[STATE].replayed
    if replayed is None or session.config.args_source is pytest.Config.ArgsSource.ARGS:
        return None
    session.perform_collect([str(replayed.console)])
    return True


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    replayed = parent.config.stash[STATE].replayed
    if replayed is not None and file_path == replayed.console:
        stdin = parent.config.stash[STATE].settings.replay == STDIN
        nodeid = "stdin" if stdin else fragment_nodeid(parent.config, file_path)
        if nodeid is None:
            return KunitconfigFile.from_parent(parent, path=file_path)
        return KunitconfigFile.from_parent(parent, path=file_path, nodeid=nodeid)
    if collects(parent.config, file_path):
        nodeid = fragment_nodeid(parent.config, file_path)
        if nodeid is None:
            return KunitconfigFile.from_parent(parent, path=file_path)
        return KunitconfigFile.from_parent(parent, path=file_path, nodeid=nodeid)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    config = session.config
    cases = [
        PlannedCase(item.nodeid, item.kernel.key, item.suite, item.name)
        for item in session.items
        if isinstance(item, KunitCase) and not filter_action.filtered_out(item)
    ]
    handed = config.stash[HANDED]
    durations = handed.durations if handed else load_durations(state.settings.cache_dir, config.rootpath)
    state.pipeline.plan(cases, worker_count(config), durations)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    made = yield
    if isinstance(item, KunitCase):
        report = made.get_result()
        item.finish_report(report, call)
        if item.config.getoption("xmlpath", None) and item.parent is not None:
            setattr(report, JUNIT_NAMES_KEY, junit_names(item.parent.nodeid, item.name))
        if item.config.stash[STATE].settings.kcidb is not None:
            run = case_run(item, report)
            if run is not None:
                # On the report, xdist carries it to the controller, which writes the file.
                setattr(report, REPORT_KEY, asdict(run))
        if item.config.stash[STATE].settings.kunit_json is not None:
            attach(item, report)


@pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    if is_worker(session.config):
        runner, kernels = state.runner, list(state.kernels.values())
        output = WorkerOutput.of(
            state.stats, runner.suite_seconds, runner.outside.dump(), kernels, runner.coverage_boots
        )
        session.config.workeroutput.update(output.to_dict())  # type: ignore[attr-defined]
    else:
        save_durations(state.settings.cache_dir, session.config.rootpath, state.runner.suite_seconds)
        state.run_failures = state.runner.outside.by_kernel()
        if state.run_failures and session.exitstatus == pytest.ExitCode.OK:
            # The run's own failure, no test's: --lf has nothing to rerun, and the terminal summary says why.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        state.coverage = coverage_summary(state)
        # At the end, when this run's own entries have just been used and its consoles are the latest.
        bounds = Bounds(state.settings.cache_max_age, state.settings.cache_keep_consoles)
        removed = prune(state.settings.cache_dir, bounds)
        if removed:
            state.pruned = f"kunit cache: {summary(removed)}; see --kunit-cache-max-age, --kunit-cache-keep-consoles"
    for name, value in junit_properties(state.stats):
        add_junit_suite_property(session.config, name, value)
    for kernel, text in state.run_failures.items():
        add_junit_suite_property(session.config, "kunit_run_failure", f"{kernel}: {text}")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash[STATE]
    stats = state.stats
    terminalreporter.write_sep("-", "kunit")
    terminalreporter.write_line(
        f"kernel builds: {stats.builds} ({stats.build_seconds:.1f} s); "
        f"guest boots: {stats.boots} ({stats.boot_seconds:.1f} s)"
        + (f"; batches on a kept guest: {stats.kept_batches}" if stats.kept_batches else "")
    )
    if stats.fetches:
        terminalreporter.write_line(
            f"kernel images fetched from the controller by hosts that share no cache with it: {stats.fetches} "
            f"({stats.fetched_bytes / 1e6:.1f} MB)"
        )
    if stats.reruns:
        terminalreporter.write_line(
            f"cases run again in a fresh guest: {stats.reruns} (an earlier crash in their guest, a signal from "
            "outside, or a silence with later cases to run; each case's report says which)"
        )
    for line in state.coverage:
        terminalreporter.write_line(line)
    if state.pruned:
        terminalreporter.write_line(state.pruned)
    if config.option.verbose > 0:
        for number, kernel_filter in enumerate(stats.filters, 1):
            terminalreporter.write_line(f"boot {number}: {kernel_filter}")
    if state.settings.matrix:
        reports = [report for kind in ("passed", "failed", "error") for report in terminalreporter.stats.get(kind, [])]
        split = split_verdicts(reports, ARCH_PROPERTY, CASE_PROPERTY)
        if split:
            terminalreporter.write_sep("-", "kunit: cases failing on some architectures only")
            for line in split:
                terminalreporter.write_line(line)
    for kernel, text in state.run_failures.items():
        terminalreporter.write_sep("=", f"kunit: the run failed: {kernel}: kernel reports outside any case", red=True)
        terminalreporter.write_line(text)
