"""Turning the selected cases into as few boots as possible, and every boot's console into per-case outcomes."""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import ktap
from .build import BuildResult
from .decode import decode_stacktrace
from .errors import BootError
from .options import Accel, Isolate, Settings
from .qemu import KVM_FIRST_OUTPUT, BootRecord, BootRequest, Guest, QemuArch, kvm_usable, watchdog_seconds
from .tree import TreeFeatures

CaseId = tuple[str, str]  # (suite, case)
# A suite never timed before is assumed to take this long per case (TCG runs a typical case in tens of ms).
ESTIMATED_CASE_SECONDS = 0.05
# x86 keeps 2048 bytes of command line; leave room for the arguments the runner always passes.
MAX_FILTER_LENGTH = 1600


@dataclass(frozen=True)
class Kernel:
    """One built image and the cases it holds, in the order the kernel runs them."""

    key: str  # the kunitconfig file's node id: batches never mix kernels
    build: BuildResult
    arch: QemuArch
    features: TreeFeatures
    tree: Path
    cases: tuple[CaseId, ...]


@dataclass(frozen=True)
class Outcome:
    result: ktap.CaseResult
    console: Path
    evidence: tuple[str, ...] = ()
    error: str = ""  # why a case has no result line


@dataclass
class Stats:
    builds: int = 0
    build_seconds: float = 0.0
    boots: int = 0
    boot_seconds: float = 0.0
    filters: list[str] = field(default_factory=list)

    def merge(self, other: Mapping[str, float]) -> None:
        """Add a worker's figures (its `asdict` without the filters, as sent through xdist's workeroutput)."""
        self.builds += int(other.get("builds", 0))
        self.build_seconds += other.get("build_seconds", 0.0)
        self.boots += int(other.get("boots", 0))
        self.boot_seconds += other.get("boot_seconds", 0.0)


def split_nodeid(nodeid: str) -> tuple[str, str, str] | None:
    parts = nodeid.split("::")
    if len(parts) == 3 and parts[0].endswith(".kunitconfig"):
        return parts[0], parts[1], parts[2]
    return None


def plan_batches(
    nodeids: Iterable[str], workers: int, isolate: Isolate, durations: Mapping[str, Mapping[str, float]] | None = None
) -> dict[str, str]:
    """Map each kernel case's node id to its batch: the cases one guest boots for.

    A function of its arguments alone, so the xdist controller and every worker compute the same plan.  Suites are
    never split unless isolate=case; with isolate=none each kernel's suites are dealt into at most `workers`
    batches of about equal run time: a suite's measured seconds (`durations[kernel][suite]`, from earlier runs),
    else an estimate from its number of cases.
    """
    by_kernel: dict[str, dict[str, list[str]]] = {}
    plan: dict[str, str] = {}
    for nodeid in nodeids:
        parts = split_nodeid(nodeid)
        if parts is None:
            continue
        kernel, suite, _ = parts
        if isolate is Isolate.CASE:
            plan[nodeid] = nodeid
        elif isolate is Isolate.SUITE:
            plan[nodeid] = f"{kernel}::{suite}"
        else:
            by_kernel.setdefault(kernel, {}).setdefault(suite, []).append(nodeid)
    for kernel, suites in by_kernel.items():
        measured = (durations or {}).get(kernel, {})
        weights = {suite: measured.get(suite, len(cases) * ESTIMATED_CASE_SECONDS) for suite, cases in suites.items()}
        bins = max(1, min(workers, len(suites)))
        loads = [0.0] * bins
        for suite in sorted(suites, key=lambda name: -weights[name]):  # stable: ties keep collection order
            lightest = loads.index(min(loads))
            loads[lightest] += weights[suite]
            for nodeid in suites[suite]:
                plan[nodeid] = f"{kernel}::batch{lightest}"
    return plan


def _glob_matches(glob: str, case: CaseId) -> bool:
    suite_glob, _, case_glob = glob.partition(".")
    return fnmatch.fnmatchcase(case[0], suite_glob) and fnmatch.fnmatchcase(case[1], case_glob or "*")


def executed_cases(all_cases: Sequence[CaseId], kernel_filter: str | None) -> list[CaseId]:
    """The cases a boot with this kunit.filter_glob runs, in the order it runs them."""
    if kernel_filter is None:
        return list(all_cases)
    globs = kernel_filter.split(",")
    return [case for case in all_cases if any(_glob_matches(glob, case) for glob in globs)]


def list_filter(all_cases: Sequence[CaseId], wanted: Sequence[CaseId]) -> str | None:
    """A comma-separated filter running exactly `wanted` (whole suites named once); None runs everything."""
    wanted_set = set(wanted)
    if wanted_set >= set(all_cases):
        return None
    suites: dict[str, list[CaseId]] = {}
    for case in all_cases:
        suites.setdefault(case[0], []).append(case)
    entries: list[str] = []
    for suite, cases in suites.items():
        chosen = [case for case in cases if case in wanted_set]
        if chosen and len(chosen) == len(cases):
            entries.append(suite)
        else:
            entries.extend(f"{suite}.{case}" for _, case in chosen)
    exact = ",".join(entries)
    if len(exact) <= MAX_FILTER_LENGTH:
        return exact
    # Too long for the command line: run the touched suites whole and report only what was selected.
    return ",".join(dict.fromkeys(case[0] for case in all_cases if case in wanted_set))


def single_glob_filters(all_cases: Sequence[CaseId], wanted: Sequence[CaseId]) -> list[str]:
    """For trees whose filter_glob takes one glob: one boot per suite (exact when one case is wanted)."""
    suites: dict[str, list[CaseId]] = {}
    for case in wanted:
        suites.setdefault(case[0], []).append(case)
    filters = []
    for suite, cases in suites.items():
        whole = [case for case in all_cases if case[0] == suite]
        filters.append(f"{suite}.{cases[0][1]}" if len(cases) == 1 and len(whole) > 1 else suite)
    return filters


def _boot_failure(record: BootRecord) -> BootError:
    """Why a boot printed no KTAP, with the console's tail."""
    tail = "\n".join(record.console[-25:])
    if any(ktap.is_panic(line) for line in record.console):
        what = "The kernel panicked before KUnit started."
    elif record.timed_out:
        what = "The guest printed nothing for too long before KUnit started and was killed."
    elif not record.console:
        what = f"QEMU exited (status {record.exit_status}) without printing anything."
    else:
        what = "The guest's console has no KTAP output at all: KUnit did not run."
    remedy = (
        "check the kunitconfig enables CONFIG_KUNIT and a serial console, that the image boots under "
        "QEMU, and read the console below."
    )
    return BootError(what, remedy, detail=f"Console tail:\n{tail}")


class Runner:
    """Boots guests for batches of cases on demand and remembers every case's outcome."""

    def __init__(self, settings: Settings, stats: Stats, sink: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.stats = stats
        self.sink = sink
        self.plan: dict[str, str] = {}
        self.kernels: dict[str, Kernel] = {}
        self.suite_seconds: dict[str, dict[str, float]] = {}
        self.outcomes: dict[str, dict[CaseId, Outcome]] = {}
        self.accel = self._initial_accel()
        self._boot_number = 0

    def _initial_accel(self) -> str:
        accel = self.settings.accel
        if accel is Accel.AUTO:
            return "kvm" if kvm_usable() else "tcg"
        return str(accel.value)

    def outcome(self, nodeid: str) -> Outcome:
        parts = split_nodeid(nodeid)
        assert parts is not None, nodeid
        kernel_key, suite, case = parts
        known = self.outcomes.setdefault(kernel_key, {})
        if (suite, case) not in known:
            batch = self.plan.get(nodeid, nodeid)
            wanted = [split_nodeid(other) for other, key in self.plan.items() if key == batch]
            cases = [(p[1], p[2]) for p in wanted if p is not None and (p[1], p[2]) not in known]
            if (suite, case) not in cases:
                cases.append((suite, case))
            self.run(self.kernels[kernel_key], cases)
        return known[(suite, case)]

    def run(self, kernel: Kernel, wanted: Sequence[CaseId]) -> None:
        """Boot until every wanted case has an outcome: one boot, plus one more for each guest that dies."""
        order = {case: index for index, case in enumerate(kernel.cases)}
        known = self.outcomes.setdefault(kernel.key, {})
        crashed_before = False
        for _ in range(len(wanted) + 1):
            remaining = sorted((case for case in wanted if case not in known), key=lambda case: order.get(case, 0))
            if not remaining:
                return
            for kernel_filter in self._filters(kernel, remaining, crashed_before):
                crashed_before = self._boot(kernel, kernel_filter, set(remaining)) or crashed_before
        for case in wanted:
            known.setdefault(case, self._no_result(case, Path(os.devnull), "The runner gave up booting again."))

    @staticmethod
    def _filters(kernel: Kernel, remaining: list[CaseId], crashed_before: bool) -> list[str | None]:
        if kernel.features.filter_list:
            return [list_filter(kernel.cases, remaining)]
        if crashed_before:
            # A single glob can only leave out the case that crashed by naming the others one by one.
            return [f"{suite}.{case}" for suite, case in remaining]
        return list(single_glob_filters(kernel.cases, remaining))

    def _no_result(self, case: CaseId, console: Path, why: str) -> Outcome:
        return Outcome(ktap.CaseResult(case[0], case[1], ktap.Status.NO_RESULT), console, error=why)

    def _kernel_args(self, kernel: Kernel, kernel_filter: str | None) -> tuple[str, ...]:
        args = []
        if kernel_filter is not None:
            args.append(f"kunit.filter_glob={kernel_filter}")
        if kernel.features.case_timeout:
            args.append(f"kunit.timeout={int(self.settings.timeout)}")
        return tuple(args)

    def guest(self, image: Path, arch: QemuArch, kernel_args: tuple[str, ...]) -> tuple[BootRecord, list[ktap.Event]]:
        """Boot once to the end; under KVM, a guest that hangs or aborts before KUnit starts is rerun under TCG."""
        while True:
            request = BootRequest(
                image=image,
                arch=arch,
                kernel_args=kernel_args,
                accel=self.accel,
                silence_timeout=watchdog_seconds(self.settings.timeout),
                qemu=self.settings.qemu,
            )
            kvm = self.accel == "kvm"
            record, events = boot(request, self.sink, first_output_timeout=KVM_FIRST_OUTPUT if kvm else None)
            if kvm and not record.ktap_started and (record.timed_out or record.exit_status not in (0, None)):
                # KVM is unusable here: everything from now on runs under TCG.
                self.accel = "tcg"
                continue
            self.stats.boots += 1
            self.stats.boot_seconds += record.seconds
            return record, events

    def _boot(self, kernel: Kernel, kernel_filter: str | None, wanted: set[CaseId]) -> bool:
        """Boot once; record outcomes for `wanted`; return whether the guest died part-way."""
        self.stats.filters.append(kernel_filter or "")
        record, events = self.guest(kernel.build.image, kernel.arch, self._kernel_args(kernel, kernel_filter))
        self.suite_seconds.setdefault(kernel.key, {}).update(record.suite_seconds)
        console = self._save_console(kernel, record)
        known = self.outcomes.setdefault(kernel.key, {})

        if not record.ktap_started:
            # Nothing ran: every case of this boot carries the same explanation, and no further boot is tried.
            why = f"{_boot_failure(record).render()}\nWhole console: {console}"
            for case in wanted:
                known.setdefault(case, self._no_result(case, console, why))
            return False

        for event in events:
            if isinstance(event, ktap.CaseResult) and (event.suite, event.case) in wanted:
                # Only a case that did not pass needs its crash report decoded (some passing cases oops on purpose).
                failed = event.status not in (ktap.Status.PASSED, ktap.Status.SKIPPED)
                crash_report = self._crash_report(kernel, ktap.fault_lines(event.diagnostics)) if failed else ()
                known[(event.suite, event.case)] = Outcome(event, console, crash_report)

        unfinished = [event for event in events if isinstance(event, ktap.Unfinished)]
        died = record.timed_out or bool(unfinished)
        executed = executed_cases(kernel.cases, kernel_filter)
        reported = {(e.suite, e.case) for e in events if isinstance(e, ktap.CaseResult)}
        in_flight = next((case for case in executed if case not in reported), None)
        if not died or in_flight is None:
            for case in executed:
                if case in wanted and case not in known:
                    known[case] = self._no_result(
                        case, console, "The kernel ran this boot to the end without printing this case's result."
                    )
            return False

        # Evidence for the case that was running: only what the console said after the last result line.
        log = list(unfinished[0].log) if unfinished else ktap.since_last_result(record.console)
        evidence = ktap.fault_lines(log)
        # Killed by the watchdog with no crash report: a hang. Anything else that ended mid-suite crashed.
        status = ktap.Status.TIMED_OUT if record.timed_out and not evidence else ktap.Status.CRASHED
        if in_flight in wanted:
            diagnostics = tuple(log) or tuple(record.console[-25:])
            result = ktap.CaseResult(in_flight[0], in_flight[1], status, "", diagnostics)
            known[in_flight] = Outcome(result, console, self._crash_report(kernel, evidence))
        return True

    def _crash_report(self, kernel: Kernel, lines: list[str]) -> tuple[str, ...]:
        return decode_stacktrace(tuple(lines), kernel.build.build_dir, kernel.tree)

    def _save_console(self, kernel: Kernel, record: BootRecord) -> Path:
        self._boot_number += 1
        directory = self.settings.cache_dir / "consoles" / kernel.build.image_digest
        directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = directory / f"{stamp}-{os.getpid()}-{self._boot_number}.log"
        header = f"# {' '.join(record.command)}\n"
        path.write_text(header + "\n".join(record.console) + "\n")
        return path


def boot(
    request: BootRequest, sink: Callable[[str], None] | None = None, first_output_timeout: float | None = None
) -> tuple[BootRecord, list[ktap.Event]]:
    """Boot one guest to the end, parsing its console as it streams."""
    parser = ktap.KtapParser()
    events: list[ktap.Event] = []
    started: dict[str, float] = {}
    with Guest(request, sink) as guest:
        for line in guest.lines(first_output_timeout):
            for event in parser.feed(line):
                events.append(event)
                if isinstance(event, ktap.SuiteStarted):
                    started[event.suite] = time.monotonic()
                elif isinstance(event, ktap.SuiteFinished) and event.suite in started:
                    guest.record.suite_seconds[event.suite] = time.monotonic() - started[event.suite]
    events.extend(parser.finish())
    guest.record.ktap_started = parser.started
    return guest.record, events


def list_cases(runner: Runner, image: Path, arch: QemuArch) -> tuple[CaseId, ...]:
    """Boot with kunit.action=list and read the cases the image holds, in the order the kernel runs them."""
    record, events = runner.guest(image, arch, ("kunit.action=list",))
    cases = ktap.listed_cases(events)
    if not cases and not record.ktap_started:
        raise _boot_failure(record)
    return tuple(cases)
