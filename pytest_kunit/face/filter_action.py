"""--kunit-filter-action=skip, kunit.py's `--filter_action=skip`: a kernel case the run does not select (deselected
by -k, -m or --deselect, or left out of a fragment by node ids naming others of its cases) is reported skipped,
"filtered out", instead of vanishing from the results; it needs no boot, as no selected case's batch holds it.

kunit.py's filter_action acts on what its attribute filter (--filter, our -m) leaves out, KUnit then printing such a
case `ok N name # SKIP`; here every way pytest has of leaving a case out counts, so that JUnit and KCIDB list each
case of the fragments the run touched.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import pytest

from ..model import CaseId, Settings
from ..options import FilterAction
from .nodes import KunitCase, KunitSuite

REASON = "filtered out"
FILTERED = pytest.StashKey[bool]()  # on a case item reported skipped as filtered out


def filtered_out(item: pytest.Item) -> bool:
    """Whether this case is reported skipped as filtered out: it runs in no boot."""
    return item.stash.get(FILTERED, False)


def register(config: pytest.Config, settings: Settings) -> None:
    if settings.filter_action is FilterAction.SKIP:
        config.pluginmanager.register(FilteredAsSkipped(), "kunit-filter-action")


class FilteredAsSkipped:
    """Keeps the cases pytest deselects (taken out of what the terminal counts as deselected), and at the end of
    collection puts them, and the cases of each collected fragment that no argument named, back among the items,
    each marked skipped."""

    def __init__(self) -> None:
        self.collected: list[pytest.Item] = []  # the items before anything was deselected
        self.deselected: list[KunitCase] = []

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> Generator[None, Any, None]:
        self.collected = list(items)
        yield

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_deselected(self, items: list[pytest.Item]) -> Generator[None, Any, None]:
        # The list every implementation is handed: kernel cases leave it before any of them counts it.
        cases = [item for item in items if isinstance(item, KunitCase)]
        self.deselected.extend(cases)
        items[:] = [item for item in items if not isinstance(item, KunitCase)]
        yield

    @pytest.hookimpl(tryfirst=True)  # before xdist's worker sends its collection to the controller
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        kept = {id(item) for item in session.items} | {id(item) for item in self.deselected}
        ordered = [item for item in self.collected if id(item) in kept]
        seen = {id(item) for item in ordered}
        ordered += [item for item in session.items if id(item) not in seen]  # added after the deselection
        for item in self.deselected:
            _skip(item)
        session.items[:] = _with_unnamed(ordered)


def _skip(item: pytest.Item) -> None:
    item.stash[FILTERED] = True
    item.add_marker(pytest.mark.skip(reason=REASON))


def _fragment(item: pytest.Item) -> pytest.Collector | None:
    """The collector of a kernel case's fragment (its architecture's, in a matrix run): its suite's parent."""
    suite = item.parent if isinstance(item, KunitCase) else None
    parent = suite.parent if suite is not None else None
    return parent if isinstance(parent, pytest.Collector) else None


def _with_unnamed(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """`items` with the cases of each fragment's kernel that are not among them (a node id named others) as new
    items, skipped; each fragment's cases together where its first one was, in the kernel's order."""
    fragments: dict[int, list[KunitCase]] = {}  # by the identity of the fragment's collector
    for item in items:
        fragment = _fragment(item)
        if fragment is not None and isinstance(item, KunitCase):
            fragments.setdefault(id(fragment), []).append(item)
    result: list[pytest.Item] = []
    for item in items:
        fragment = _fragment(item)
        if fragment is None or not isinstance(item, KunitCase):
            result.append(item)
            continue
        cases = fragments.pop(id(fragment), None)
        if cases is None:
            continue  # placed with its fragment's first case
        present = {(case.suite, case.name) for case in cases}
        result.extend(_in_kernel_order([*cases, *_unnamed(fragment, item, present)], item.kernel.cases))
    return result


def _in_kernel_order(cases: list[KunitCase], kernel_cases: Sequence[CaseId]) -> list[KunitCase]:
    order = {case: index for index, case in enumerate(kernel_cases)}
    return sorted(cases, key=lambda case: order.get((case.suite, case.name), len(order)))


def _unnamed(fragment: pytest.Collector, sample: KunitCase, present: set[CaseId]) -> list[KunitCase]:
    """The cases of `sample`'s kernel that belong to `fragment` (its own suites, in a shared kernel) and are not
    `present`, as skipped items under new suite collectors of `fragment`, in the kernel's order."""
    kernel = sample.kernel
    missing: dict[str, list[str]] = {}
    for suite, case in kernel.cases:
        if (kernel.suites is None or suite in kernel.suites) and (suite, case) not in present:
            missing.setdefault(suite, []).append(case)
    made: list[KunitCase] = []
    for suite, cases in missing.items():
        collector = KunitSuite.from_parent(fragment, name=suite, kernel=kernel, cases=cases)
        for case in cases:
            item = KunitCase.from_parent(collector, name=case, kernel=kernel, suite=suite)
            _skip(item)
            made.append(item)
    return made
