"""Booting guests for batches of selected cases and recovering after a dead guest, until each case has an outcome
(outcomes.py says what a boot's console means for its cases)."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..console import ktap, oops
from ..console.decode import decode_stacktrace
from ..console.transcript import BootRecord
from ..errors import KunitError
from ..findings import guest_init
from ..findings.coverage_report import save_boot
from ..findings.outcomes import Outcome, case_outcomes
from ..findings.sanitizer_verdicts import OutsideReports
from ..host.cachelayout import CacheLayout
from ..model import CaseId, Kernel, Settings, Stats
from ..options import BOOT_ALLOWANCE
from . import module_boots, recovery
from .accel import Accelerator, kvm_failure
from .boot import (
    KVM_FIRST_OUTPUT,
    BootRequest,
    boot,
    boot_deadline,
    kernel_command_line,
    watchdog_seconds,
)
from .boot_failure import boot_failure
from .cmdline import SMALLEST_COMMAND_LINE, check_fits, command_line_size, line_length
from .kept import kept_guest
from .kept_protocol import servable
from .planning import (
    BootFilter,
    PlannedCase,
    executed_cases,
    filter_bytes,
    list_filters,
    single_case_filters,
    single_glob_filters,
)
from .recovery import Action, Cause, Decision, Stop, outside_kill_error


def decode_locally(kernel: Kernel, lines: tuple[str, ...]) -> tuple[str, ...]:
    return decode_stacktrace(lines, kernel.build.build_dir, kernel.tree, kernel.arch.make.cross_compile)


def _unchanged(kernel: Kernel, words: list[str]) -> None:
    """No edit."""


@dataclass(frozen=True)
class _EndedBoot:
    """One boot as the runner judges what it left: the kernel booted, what the guest did, where its console was kept,
    the cases it ran and which of them were wanted, every outcome known for the kernel, and how guests stopped before
    (None: before KUnit), which the judging adds to."""

    kernel: Kernel
    record: BootRecord
    console: Path
    executed: list[CaseId]
    wanted: set[CaseId]
    known: dict[CaseId, Outcome]
    stops: dict[CaseId | None, list[Stop]]

    def unrun(self) -> list[CaseId]:
        """The wanted cases of this boot that have no outcome yet."""
        return [case for case in self.executed if case in self.wanted and case not in self.known]


@dataclass(frozen=True)
class BootEdits:
    """What conftest.py files and plugins change in each boot (the pytest_kunit_* hooks, bound by the session): each
    takes the kernel being booted and edits a list of words in place."""

    kernel_args: Callable[[Kernel, list[str]], None] = _unchanged
    qemu_command: Callable[[Kernel, list[str]], None] = _unchanged


class Runner:
    """Boots guests for batches of cases on demand and remembers every case's outcome."""

    def __init__(
        self,
        settings: Settings,
        stats: Stats,
        sink: Callable[[str], None] | None = None,
        edits: BootEdits = BootEdits(),
        announce: Callable[[str], None] = lambda message: None,
        run_id: str = "",
    ) -> None:
        self.settings = settings
        self.run_id = run_id  # the pytest run's id: its consoles are kept or evicted together (cacheprune.py)
        self.stats = stats
        self.sink = sink
        self.edits = edits
        self.batch_of: dict[str, str] = {}  # node id -> batch
        self.batches: dict[str, list[PlannedCase]] = {}
        self.suite_seconds: dict[str, dict[str, float]] = {}
        self.outcomes: dict[str, dict[CaseId, Outcome]] = {}
        # Per kernel, why it could not be booted at all: its other cases get the same word, not another try.
        self.failed: dict[str, tuple[KunitError, str]] = {}  # the error raised, and the node id it was reported on
        self.unbootable: dict[str, tuple[Path, str]] = {}  # a boot that never reached KUnit: its console and why
        self.accel = Accelerator(settings)
        self.outside = OutsideReports()  # sanitizer reports printed while no case ran
        # Where crash reports are decoded: here, or (image_service.py) on the host that built the kernel and has its
        # tree.
        self.decode: Callable[[Kernel, tuple[str, ...]], tuple[str, ...]] = decode_locally
        # What puts a kernel's image in place before it boots: it is there already, or (image_service.py) it is fetched
        # from the xdist controller, so that an image travels only to a host that boots it.
        self.obtain: Callable[[Kernel], None] = lambda kernel: None
        self.coverage_runs: Path | None = None  # where each boot's GCOV counters go, with --kunit-coverage
        if settings.coverage is not None:
            self.coverage_runs = CacheLayout(settings.cache_dir).coverage_run(run_id)
        self.coverage_boots: list[str] = []  # the boots whose counters were kept (this process's; a controller's too)
        self._boot_number = 0
        self.announce = announce  # told when a kernel's first test boot starts
        self._announced: set[str] = set()

    def set_plan(self, cases: Sequence[PlannedCase], plan: Mapping[str, str]) -> None:
        """Group the selected cases by the batch `plan` (node id -> batch) puts them in."""
        self.batch_of = dict(plan)
        self.batches = {}
        for case in cases:
            self.batches.setdefault(plan.get(case.nodeid, case.nodeid), []).append(case)

    def outcome(self, kernel: Kernel, suite: str, case: str, nodeid: str) -> Outcome:
        """The outcome of one case, booting its whole batch the first time one of the batch's cases asks."""
        known = self.outcomes.setdefault(kernel.key, {})
        if (suite, case) not in known:
            if kernel.key in self.failed:
                error, first = self.failed[kernel.key]
                raise error.repeated(first)
            batch = self.batches.get(self.batch_of.get(nodeid, nodeid), [])
            cases = [(c.suite, c.case) for c in batch if c.kernel == kernel.key and (c.suite, c.case) not in known]
            if (suite, case) not in cases:
                cases.append((suite, case))
            if kernel.key in self.unbootable:
                console, why = self.unbootable[kernel.key]
                for wanted in cases:
                    known[wanted] = Outcome.no_result(wanted, console, why)
                return known[(suite, case)]
            try:
                self.run(kernel, cases)
            except KunitError as error:
                self.failed[kernel.key] = (error, nodeid)
                raise
        return known[(suite, case)]

    def run(self, kernel: Kernel, wanted: Sequence[CaseId]) -> None:
        """Boot until every wanted case has an outcome: one boot, plus one more for each guest that stops early."""
        order = {case: index for index, case in enumerate(kernel.cases)}
        known = self.outcomes.setdefault(kernel.key, {})
        stops: dict[CaseId | None, list[Stop]] = {}  # how guests stopped with a case in flight (None: before KUnit)
        named_singly = False
        if kernel.key not in self._announced:
            self._announced.add(kernel.key)
            image = kernel.build.image
            self.announce(f"booting the kernel of {kernel.key} ({image}): {len(wanted)} cases in its first boot")
        # Each boot gives a case an outcome or a rerun, and a case is rerun at most twice.
        for _ in range(3 * len(wanted) + 2):
            remaining = sorted((case for case in wanted if case not in known), key=lambda case: order.get(case, 0))
            if not remaining:
                return
            # A case whose guest went silent runs again alone: no later case's hang can hide its result line then.
            rerun = next((case for case in remaining if case in stops and stops[case][-1].may_hide_a_result), None)
            filters = self._filters(kernel, [rerun], True) if rerun else self._filters(kernel, remaining, named_singly)
            for boot_filter in filters:
                named_singly = self._boot(kernel, boot_filter, set(remaining), stops) or named_singly
        for case in wanted:
            known.setdefault(case, Outcome.no_result(case, Path(os.devnull), "The runner gave up booting again."))

    def _filters(self, kernel: Kernel, remaining: list[CaseId], named_singly: bool) -> list[BootFilter]:
        if kernel.features.filter_list:
            filters = [BootFilter(glob) for glob in self._list_filters(kernel, remaining)]
        elif named_singly:
            # A single glob can only leave out the cases a stopped guest did run by naming the others one by one.
            filters = single_case_filters(remaining)
        else:
            # Module suites' attributes are not listed (their tables give names only): no kunit.filter on them.
            known = kernel.features.attributes and not kernel.modules
            filters = single_glob_filters(kernel.cases, remaining, kernel.attributes if known else None)
        return [module_boots.loading(kernel, boot) for boot in filters] if kernel.modules else filters

    def _list_filters(self, kernel: Kernel, remaining: list[CaseId]) -> list[str | None]:
        """The globs of as many boots as the kernel's command line needs to name `remaining` (one, unless it is
        short: m68k and alpha keep 256 bytes)."""
        modules = tuple(module.name for module in kernel.modules) if kernel.modules else None
        # Every other argument of the boot, with the most modules it can load; 2 for the quotes a glob may need.
        others = line_length(self._command_line(kernel, BootFilter("", modules=modules))) + 2
        globs = list_filters(kernel.cases, remaining, sys.maxsize)
        if others + filter_bytes([globs[0] or ""]) <= SMALLEST_COMMAND_LINE:
            return globs
        self.obtain(kernel)  # a worker on another host reads the size from the image it fetches
        return list_filters(kernel.cases, remaining, command_line_size(kernel) - others)

    def _command_line(self, kernel: Kernel, boot_filter: BootFilter) -> list[str]:
        return kernel_command_line(kernel.arch, (*kernel.boot_args, *self._kernel_args(kernel, boot_filter)))

    def _executed(self, kernel: Kernel, boot_filter: BootFilter, wanted: set[CaseId]) -> list[CaseId]:
        if boot_filter.modules is None:
            return executed_cases(kernel.cases, boot_filter, kernel.attributes)
        executed = module_boots.executed(kernel, boot_filter, kernel.attributes)
        ignored = [case for case in executed if case not in wanted and case not in self.outcomes.get(kernel.key, {})]
        if ignored and not kernel.features.module_filter:
            self.announce(
                f"{len(ignored)} cases of the modules {', '.join(boot_filter.modules)} run too, as this kernel filters "
                "no module's suites: their results are ignored (they were not selected)"
            )
        return executed

    def _kernel_args(self, kernel: Kernel, boot_filter: BootFilter) -> tuple[str, ...]:
        args = list(boot_filter.kernel_args())
        if kernel.features.case_timeout:
            args.append(f"kunit.timeout={self.settings.timeout}")
        return tuple(args)

    def guest(
        self,
        kernel: Kernel,
        kernel_args: tuple[str, ...],
        cases: int = 0,
        stop_after_crash: bool = False,
        boot_filter: BootFilter | None = None,
    ) -> tuple[BootRecord, list[ktap.Event]]:
        """Boot once to the end (or, with `stop_after_crash`, to the result line of the first case after a crash; or
        to the deadline of a boot running `cases` cases); under KVM, a guest that hangs or aborts before KUnit starts
        is rerun under TCG. A test boot (`boot_filter`) of a kernel kept.py serves runs on a kept guest."""
        deadline, source = self.settings.boot_timeout, "--kunit-boot-timeout"
        if deadline is None:
            deadline = boot_deadline(self.settings.timeout, cases)
            source = (
                f"{BOOT_ALLOWANCE:g} s and {self.settings.timeout} s for each of its {cases} cases; "
                "--kunit-boot-timeout sets it"
            )
        self.obtain(kernel)
        args = kernel_command_line(kernel.arch, (*kernel.boot_args, *kernel_args))
        self.edits.kernel_args(kernel, args)
        check_fits(kernel, args)
        while True:
            request = BootRequest(
                image=kernel.build.image,
                arch=kernel.arch,
                kernel_args=tuple(args),
                accel=self.accel.current(kernel.arch),
                silence_timeout=watchdog_seconds(self.settings.timeout),
                qemu=self.settings.qemu,
                deadline=deadline,
                deadline_source=source,
                edit_command=functools.partial(self.edits.qemu_command, kernel),
                initrd=kernel.initrd,
            )
            kvm = request.accel == "kvm"
            kept = None
            if boot_filter is not None and servable(kernel, self.settings.keep_guest):
                kept = kept_guest(self.settings.cache_dir, kernel, request, boot_filter, self.sink)
            record, events = boot(
                request,
                self.sink,
                first_output_timeout=KVM_FIRST_OUTPUT if kvm else None,
                stop_after_crash=stop_after_crash,
                guest=kept,
            )
            if kept is not None and kept.replaced_why:
                self.announce(f"the kept guest of {kernel.key} could not serve ({kept.replaced_why}): booted afresh")
            if kept is not None and kept.ended_why and kept.done:
                self.announce(f"the kept guest of {kernel.key} was ended ({kept.ended_why}): the next run boots afresh")
            if kept is not None and kept.resumed:
                self.stats.kept_batches += 1
            else:
                self.stats.boots += 1
            self.stats.boot_seconds += record.seconds
            why = kvm_failure(record) if kvm else ""
            if not why:
                return record, events
            self.accel.failed(kernel.arch, why)  # and boot again, under TCG

    def _boot(
        self, kernel: Kernel, boot_filter: BootFilter, wanted: set[CaseId], stops: dict[CaseId | None, list[Stop]]
    ) -> bool:
        """Boot once; record outcomes for `wanted`; return whether the guest stopped part-way."""
        self.stats.filters.append(boot_filter.describe())
        executed = self._executed(kernel, boot_filter, wanted)
        record, events = self.guest(
            kernel,
            self._kernel_args(kernel, boot_filter),
            len(executed),
            stop_after_crash=self.settings.reboot_after_crash,
            boot_filter=boot_filter,
        )
        self.suite_seconds.setdefault(kernel.key, {}).update(record.suite_seconds)
        console = self._keep(kernel, record)
        known = self.outcomes.setdefault(kernel.key, {})
        ended = _EndedBoot(kernel, record, console, executed, wanted, known, stops)
        if not record.ktap_started:
            self._never_started(ended)
            return False

        results = [event for event in events if isinstance(event, ktap.CaseResult)]
        earlier = {case: _described(stopped) for case, stopped in stops.items() if case is not None}
        read = case_outcomes(
            kernel.key, record, results, console, wanted, functools.partial(self.decode, kernel), earlier
        )
        known.update(read.outcomes)
        for report in read.outside:
            self.outside.add(report)

        unfinished = [event for event in events if isinstance(event, ktap.Unfinished)]
        reported = {(result.suite, result.case) for result in results}
        in_flight = next((case for case in executed if case not in reported), None)
        if record.stopped:
            return True  # ended on purpose after a crash: what it did not run is booted again
        stopped_early = record.timed_out or bool(unfinished) or record.outside_signal is not None
        unscanned = guest_init.unfinished_scan(kernel.key, kernel.boot_args, record.console, record.killed_for, console)
        if in_flight is None and unscanned is not None:
            self.outside.add(unscanned)  # every case ran, but not the final scan that would show their leaks
        if in_flight is None or not stopped_early:
            unloaded = guest_init.unloaded_modules(record.console)
            module_of = {suite: module.name for module in kernel.modules for suite, _ in module.suites}
            for case in executed:
                if case in wanted and case not in known:
                    why = "The kernel ran this boot to the end without printing this case's result."
                    module = module_of.get(case[0], "")
                    if module in unloaded:
                        said = "".join(f"\n  {line}" for line in unloaded[module][-10:])
                        why = f"/init could not load the module {module}, which holds this case's suite:{said}"
                    known[case] = Outcome.no_result(case, console, why, _case_lines(record, case))
            return False
        # Evidence for the case that was running: only what the console said after the last result line.
        log = list(unfinished[0].log) if unfinished else ktap.since_last_result(record.console)
        stop = _stop(record, console, results, log, silent_with_cases_left=in_flight != executed[-1])
        if in_flight in wanted:
            self._judge_in_flight(ended, stop, in_flight, log)
        return True  # what did not run (the case in flight, unless it was judged) is booted again

    def _keep(self, kernel: Kernel, record: BootRecord) -> Path:
        """Keep the boot's console in the cache (its path, for reports), and its GCOV counters with coverage."""
        console = self._save_console(kernel, record)
        if kernel.initrd is not None and self.coverage_runs is not None:
            destination = self.coverage_runs / f"{os.getpid()}-{self._boot_number}"
            save_boot(record.console, kernel.boot_args, kernel.build.build_dir, kernel.tree, destination)
            self.coverage_boots.append(str(destination))
        return console

    def _never_started(self, ended: _EndedBoot) -> None:
        """A boot that never reached KUnit: killed from outside (a rerun), or a kernel that cannot run any case."""
        record, console = ended.record, ended.console
        if record.outside_signal is not None:
            # Killed from outside before KUnit began: not the kernel's fault either.
            stop = Stop(Cause.KILLED, str(console), signal=record.outside_signal, program=record.program)
            self._stopped(ended, stop, None)
            return
        # Nothing ran: every case of this boot carries the same explanation, and no further boot is tried.
        why = f"{boot_failure(record).render()}\nWhole console: {console}"
        self.unbootable[ended.kernel.key] = (console, why)
        for case in ended.wanted:
            ended.known.setdefault(case, Outcome.no_result(case, console, why))

    def _judge_in_flight(self, ended: _EndedBoot, stop: Stop, in_flight: CaseId, log: list[str]) -> None:
        """The case running when the guest stopped: a verdict, a rerun, or (given up) an error for what is left."""
        decision = self._stopped(ended, stop, in_flight)
        if decision.status is None:
            return
        record = ended.record
        diagnostics = tuple(log) or tuple(record.console[-25:])
        result = ktap.CaseResult(in_flight[0], in_flight[1], decision.status, "", diagnostics)
        ended.known[in_flight] = Outcome(
            result,
            ended.console,
            self.decode(ended.kernel, stop.evidence),
            error=record.killed_for,
            earlier=_described(ended.stops.get(in_flight, [])),
            lines=_case_lines(record, in_flight),
            own_line=False,
        )

    def _stopped(self, ended: _EndedBoot, stop: Stop, in_flight: CaseId | None) -> Decision:
        """Decide about the case in flight; a rerun is noted, giving up is an error for every case left unrun."""
        earlier = ended.stops.get(in_flight, [])
        decision = recovery.decide(stop, earlier)
        if decision.action is Action.RERUN:
            ended.stops.setdefault(in_flight, []).append(stop)
            self.stats.reruns += 1
        elif decision.action is Action.GIVE_UP:
            error = outside_kill_error([*earlier, stop]).render()
            for case in ended.unrun():
                ended.known[case] = Outcome.no_result(case, Path(stop.console), error)
        return decision

    def _save_console(self, kernel: Kernel, record: BootRecord) -> Path:
        self._boot_number += 1
        directory = CacheLayout(self.settings.cache_dir).console_dir(kernel.build.image_digest)
        directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = directory / CacheLayout.console_name(stamp, self.run_id, os.getpid(), self._boot_number)
        header = f"# {' '.join(record.command)}\n"
        path.write_text(header + "\n".join(record.console) + "\n")
        return path


def _described(stops: list[Stop]) -> tuple[str, ...]:
    return tuple(stop.describe() for stop in stops)


def _case_lines(record: BootRecord, case: CaseId) -> tuple[str, ...]:
    return record.console_map.case_lines(record.console, case)


def _stop(
    record: BootRecord, console: Path, results: list[ktap.CaseResult], log: list[str], silent_with_cases_left: bool
) -> Stop:
    """How a guest that stopped part-way stopped, with what the console said after its last result line."""
    before = record.console[: len(record.console) - len(ktap.since_last_result(record.console))]
    return Stop(
        recovery.cause_of(record.timed_out, record.outside_signal),
        str(console),
        evidence=tuple(oops.fault_lines(log)),
        earlier_crash=recovery.earlier_crash(results, before),
        signal=record.outside_signal,
        program=record.program,
        silent_with_cases_left=record.silent and silent_with_cases_left,
    )
