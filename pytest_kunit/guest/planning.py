"""Which selected cases go into which boot, and the kunit.filter_glob each boot gets: pure functions.

Every process computes the same plan from the same inputs (the collected cases, the number of workers, the stored
suite durations the controller hands to workers), so the xdist scheduler and the workers agree without talking.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..findings.guest_init import modules_arg
from ..model import Attributes, CaseId, kernel_key
from ..options import Isolate
from ..versions import ALLTESTS
from .prefix_groups import covering_globs, literal, prefix_groups

# A suite never timed before is assumed to take this long per case (TCG runs a typical case in tens of ms).
ESTIMATED_CASE_SECONDS = 0.05
# `*.kunitconfig` and in-tree `.kunitconfig` files alike, and --kunit-alltests' fragment (fragments/alltests.py)
FRAGMENT_SUFFIXES = ("kunitconfig", str(ALLTESTS))


@dataclass(frozen=True)
class PlannedCase:
    """One selected kernel test case, as planning sees it."""

    nodeid: str
    kernel: str  # the key of the kernel that holds it (its fragment's node id): batches never mix kernels
    suite: str
    case: str


def case_from_nodeid(nodeid: str, matrix: Collection[str] = ()) -> PlannedCase | None:
    """A kunit case from its node id, for the xdist controller, which is given node ids and never items.

    pytest-kunit builds every case's node id as `<fragment node id>::<suite>::<case>`, where the fragment's node id
    ends in `kunitconfig`; in a run over several architectures (`matrix`, the run's own names) as
    `<fragment node id>::<arch>::<suite>::<case>`, whose kernel is `<fragment node id>::<arch>`. Every other process
    takes these fields from the items themselves.
    """
    fragment, _, rest = nodeid.partition("::")
    if matrix:
        arch, _, rest = rest.partition("::")
        if arch not in matrix:
            return None
        fragment = kernel_key(fragment, arch)
    suite, _, case = rest.partition("::")
    if not fragment.partition("::")[0].endswith(FRAGMENT_SUFFIXES) or not suite or not case or "::" in case:
        return None
    return PlannedCase(nodeid, fragment, suite, case)


def plan_batches(
    cases: Iterable[PlannedCase],
    workers: int,
    isolate: Isolate,
    durations: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, str]:
    """Map each case's node id to its batch: the cases one guest boots for.

    Suites are never split unless isolate=case; with isolate=none each kernel's suites are dealt into at most
    `workers` batches of about equal run time: a suite's measured seconds (`durations[kernel][suite]`, from earlier
    runs), else an estimate from its number of cases. They are dealt in groups that share a name prefix, so that on a
    tree whose filter takes one glob a batch still boots a few times, not once per suite.
    """
    by_kernel: dict[str, dict[str, list[str]]] = {}
    plan: dict[str, str] = {}
    for case in cases:
        if isolate is Isolate.CASE:
            plan[case.nodeid] = case.nodeid
        elif isolate is Isolate.SUITE:
            plan[case.nodeid] = f"{case.kernel}::{case.suite}"
        else:
            by_kernel.setdefault(case.kernel, {}).setdefault(case.suite, []).append(case.nodeid)
    for kernel, suites in by_kernel.items():
        measured = (durations or {}).get(kernel, {})
        weights = {suite: measured.get(suite, len(ids) * ESTIMATED_CASE_SECONDS) for suite, ids in suites.items()}
        bins = max(1, min(workers, len(suites)))
        # Whole groups of suites that share a name prefix, each at most half a batch's share unless one suite: a
        # batch of them is named by a few globs on a tree whose filter takes one (prefix_groups.py).
        groups = prefix_groups(weights, sum(weights.values()) / (2 * bins), bins)
        loads = [0.0] * bins
        for group in sorted(groups, key=lambda names: -sum(weights[name] for name in names)):  # ties: stable
            lightest = loads.index(min(loads))
            loads[lightest] += sum(weights[name] for name in group)
            for suite in group:
                for nodeid in suites[suite]:
                    plan[nodeid] = f"{kernel}::batch{lightest}"
    return plan


NOT_SLOW = "speed>slow"  # kunit.filter (6.6+) keeping only the cases that are not slow


def is_slow(attributes: Attributes) -> bool:
    return dict(attributes).get("speed", "normal") in ("very_slow", "slow")


# What kunit.filter_glob can and cannot say. The kernel splits each entry at its first `.` (a suite name holding one
# cannot be named), our series' list at each `,` (a name holding one cannot be named in a list), and its command line
# parser ends a quoted value at a `"` (a name holding one cannot be named at all). Such a case runs in a boot of its
# whole suite, or, if the suite cannot be named either, in an unfiltered boot; only the wanted cases are reported.
_UNSAYABLE = '"'


def suite_glob(suite: str, in_list: bool) -> str | None:
    """The glob naming exactly `suite`, or None if kunit.filter_glob cannot name it."""
    if not suite or _UNSAYABLE in suite or "." in suite or (in_list and "," in suite):
        return None
    return literal(suite)


def case_glob(case: CaseId, in_list: bool) -> str | None:
    """The glob naming exactly one case, or None if kunit.filter_glob cannot name it."""
    suite = suite_glob(case[0], in_list)
    if suite is None or not case[1] or _UNSAYABLE in case[1] or (in_list and "," in case[1]):
        return None
    return f"{suite}.{literal(case[1])}"


def _quoted(value: str) -> str:
    """A kernel parameter's value as the kernel's own parser (lib/cmdline.c) reads it: quoted when it holds
    whitespace, or bytes beyond ASCII (its isspace() takes 0xA0, which UTF-8 uses, for a space)."""
    return f'"{value}"' if any(char.isspace() or not char.isascii() for char in value) else value


@dataclass(frozen=True)
class BootFilter:
    """What one boot runs: kunit.filter_glob (None: every suite) and, on kernels with attributes, kunit.filter.

    `glob` is a comma-separated list of globs unless `single` (a tree whose filter takes one glob, where a comma is
    only a character).
    """

    glob: str | None = None
    attributes: str | None = None
    single: bool = False
    modules: tuple[str, ...] | None = None  # --kunit-modules: the modules /init loads (module_boots.py)

    def kernel_args(self) -> tuple[str, ...]:
        args = [f"kunit.filter_glob={_quoted(self.glob)}"] if self.glob is not None else []
        if self.attributes is not None:
            args.append(f"kunit.filter={self.attributes}")
        if self.modules is not None:
            args.append(modules_arg(self.modules))
        return tuple(args)

    def describe(self) -> str:
        return " ".join(self.kernel_args()) or "(none: every case)"


def _glob_matches(glob: str, case: CaseId) -> bool:
    suite_part, _, case_part = glob.partition(".")
    return fnmatch.fnmatchcase(case[0], suite_part) and fnmatch.fnmatchcase(case[1], case_part or "*")


def executed_cases(
    all_cases: Sequence[CaseId], boot: BootFilter | str | None, attributes: Mapping[CaseId, Attributes] | None = None
) -> list[CaseId]:
    """The cases a boot with this filter runs, in the order it runs them."""
    boot = boot if isinstance(boot, BootFilter) else BootFilter(boot)
    cases = list(all_cases)
    if boot.glob is not None:
        globs = [boot.glob] if boot.single else boot.glob.split(",")
        cases = [case for case in cases if any(_glob_matches(glob, case) for glob in globs)]
    if boot.attributes == NOT_SLOW:
        cases = [case for case in cases if not is_slow((attributes or {}).get(case, ()))]
    return cases


def list_filters(all_cases: Sequence[CaseId], wanted: Sequence[CaseId], room: int) -> list[str | None]:
    """Comma-separated filters, each at most `room` bytes, whose boots run exactly `wanted` (whole suites named once);
    [None]: one boot of everything. A case the filter cannot name runs with its whole suite; one whose suite cannot be
    named, unfiltered.

    An exact filter too long for the kernel's command line becomes one naming the touched suites whole; if that is
    too long too, those suites are dealt, in the kernel's order, into as many boots as their names need.
    """
    wanted_set = set(wanted)
    if wanted_set >= set(all_cases):
        return [None]
    suites: dict[str, list[CaseId]] = {}
    for case in all_cases:
        suites.setdefault(case[0], []).append(case)
    entries: list[str] = []
    touched: list[str] = []
    for suite, cases in suites.items():
        chosen = [case for case in cases if case in wanted_set]
        if not chosen:
            continue
        whole = suite_glob(suite, in_list=True)
        exact = [case_glob(case, in_list=True) for case in chosen]
        if whole is None and None in exact:
            return [None]
        touched.extend([whole] if whole is not None else [glob for glob in exact if glob is not None])
        if whole is not None and (len(chosen) == len(cases) or None in exact):
            entries.append(whole)
        else:
            entries.extend(glob for glob in exact if glob is not None)
    for names in (entries, touched):
        if filter_bytes(names) <= room:
            return [",".join(names)]
    boots: list[list[str]] = [[]]
    for glob in touched:
        if filter_bytes([glob]) > room:
            return [None]  # a name that alone does not fit: the one boot that needs no filter
        if boots[-1] and filter_bytes([*boots[-1], glob]) > room:
            boots.append([])
        boots[-1].append(glob)
    return [",".join(names) for names in boots]


def filter_bytes(globs: Sequence[str]) -> int:
    """The bytes a list of globs takes on the command line (names may hold UTF-8)."""
    return len(",".join(globs).encode())


def single_case_filters(wanted: Sequence[CaseId]) -> list[BootFilter]:
    """For trees whose filter_glob takes one glob: a boot per case, or per suite for a case that cannot be named,
    or a single unfiltered boot when a suite cannot be named either."""
    filters: list[BootFilter] = []
    for case in wanted:
        glob = case_glob(case, in_list=False) or suite_glob(case[0], in_list=False)
        if glob is None:
            return [BootFilter()]
        filters.append(BootFilter(glob, single=True))
    return list(dict.fromkeys(filters))


def single_glob_filters(
    all_cases: Sequence[CaseId],
    wanted: Sequence[CaseId],
    attributes: Mapping[CaseId, Attributes] | None = None,
) -> list[BootFilter]:
    """For trees whose filter_glob takes one glob: one boot when everything is wanted (or, on a kernel with
    attributes, everything that is not slow); else a boot for each suite of which one case is wanted (when the filter
    can name it) or the cases that are not slow, and the other suites run whole, in as few boots as the prefixes of
    their names allow (a batch dealt by plan_batches: a few); one unfiltered boot when a suite cannot be named."""
    wanted_set = set(wanted)
    if wanted_set >= set(all_cases):
        return [BootFilter()]

    def not_slow(cases: Iterable[CaseId]) -> set[CaseId]:
        return {case for case in cases if not is_slow(attributes.get(case, ()))} if attributes else set()

    if attributes and wanted_set == not_slow(all_cases):
        return [BootFilter(attributes=NOT_SLOW)]
    suites: dict[str, list[CaseId]] = {}
    for case in wanted:
        suites.setdefault(case[0], []).append(case)
    filters: list[BootFilter | None] = []  # None: where the boots of whole suites go, in the wanted cases' order
    whole_suites: list[str] = []
    for suite, cases in suites.items():
        whole = [case for case in all_cases if case[0] == suite]
        suite_only = suite_glob(suite, in_list=False)
        one = case_glob(cases[0], in_list=False) if len(cases) == 1 and len(whole) > 1 else None
        if suite_only is None:
            # The filter cannot name this suite: one unfiltered boot runs it, and every other suite wanted.
            return [BootFilter()]
        if one is not None:
            filters.append(BootFilter(one, single=True))
        elif attributes and set(cases) != set(whole) and set(cases) == not_slow(whole):
            filters.append(BootFilter(suite_only, NOT_SLOW, single=True))
        else:
            if not whole_suites:
                filters.append(None)
            whole_suites.append(suite)
    # The suites that run whole, in as few boots as globs of their names' prefixes can name exactly.
    covering = covering_globs([case[0] for case in all_cases], whole_suites)
    boots = [BootFilter(glob, single=True) for glob in covering]
    return [boot for entry in filters for boot in ([entry] if entry is not None else boots)]
