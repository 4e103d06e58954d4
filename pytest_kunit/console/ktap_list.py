"""Reading a `kunit.action=list` boot's lines (6.1: `suite.case`; 6.12, and list_attr since 6.6: each suite's name
on a line of its own first, then its cases, with list_attr's attribute lines after each).

Names may hold spaces, dots, `: ` (as kernel messages do) and a leading `#` (as comments do): a list is read line by
line, and a line is judged by the lines after it where one alone cannot tell (a suite line holding a dot reads as a
case line until its own cases follow it; a line that reads as a kernel message is a suite's only when its cases or
attributes follow). A suite line no case followed is an empty suite, where the kernel names each suite, else a line
pytest-kunit could not read (Unread) — both only for lines before the list's last case: what follows it is the
kernel's own (its reboot, `Run /init as init process`), which nothing tells from a suite line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ktap_lines as grammar
from .ktap_results import EmptySuite, Event, Listed, Unread


@dataclass
class _Listing:
    suite: str
    case: str
    attributes: dict[str, str]
    line: str  # as printed: a suite line of list_attr when the lines after it start with it and a dot


@dataclass
class _ListedSuite:
    """The suite line a list printed last, and what followed it."""

    name: str
    attributes: dict[str, str] = field(default_factory=dict)
    cases: int = 0


class ListReader:
    """The list a boot prints outside any suite, fed the lines the KTAP parser finds at its top level."""

    def __init__(self, list_boot: bool) -> None:
        self._pending: _Listing | None = None  # a case line, until the lines after it show it was one
        self._suite: _ListedSuite | None = None
        self._list_boot = list_boot  # a kunit.action=list boot: a line naming no case is reported
        # Suite lines no case followed, held until a later line names a case (then they were in the list).
        self._held: list[_ListedSuite] = []
        # Whether this list names each suite on a line of its own before its cases (6.12+): None until a case line
        # shows it, after its suite's line (True) or with none before it (False, as 6.1 lists).
        self._suite_lines: bool | None = None
        self._tentative: str | None = None  # a list line that reads as a kernel message: a suite's if a case follows

    def before(self, content: str) -> list[Event] | None:
        """Any line, before the parser reads it: it may end the case line held, or show it was a suite's; None when
        it was that case's attribute line, which is then read."""
        if self._pending is None:
            return []
        attribute = grammar.case_attribute(content)
        if attribute and attribute[0] == self._pending.case:
            self._pending.attributes[attribute[1]] = attribute[2]
            return None
        held = self._pending
        named_by_it = content.startswith(held.line + ".") and len(content.rstrip()) > len(held.line) + 1
        if (
            not held.attributes
            and self._suite_lines is not False
            and (named_by_it or grammar.suite_attribute(content) is not None)
        ):
            # What looked like `suite.case` was the line of a suite whose name holds a dot.
            self._pending = None
            self._new_listed_suite(held.line)
            return []
        return self._listed()

    def finish(self) -> list[Event]:
        """The console ended: the case line held, if any."""
        events = self._listed() if self._pending else []
        # What followed the list's last case: the kernel's own lines (with an initramfs, `Run /init as init process`
        # and what /init prints), which nothing tells from a suite line; an empty suite there is no case lost.
        self._suite = None
        self._held.clear()
        return events

    def _listed(self) -> list[Event]:
        """The held case line, now known to be one; what named no case before it was in the list."""
        assert self._pending is not None
        listing, self._pending = self._pending, None
        if self._suite is not None and self._suite.name == listing.suite:
            self._suite.cases += 1
        elif self._suite_lines is None:
            self._suite_lines = False  # a case no suite line came before
        return [*self._release_held(), Listed(listing.suite, listing.case, tuple(listing.attributes.items()))]

    def _new_listed_suite(self, name: str | None) -> None:
        """Open the suite a suite line names (None: none is open); one that no case followed is held (list boots)."""
        previous = self._suite
        self._suite = _ListedSuite(name) if name is not None else None
        if self._list_boot and previous is not None and not previous.cases:
            self._held.append(previous)

    def _release_held(self) -> list[Event]:
        held, self._held = self._held, []
        if self._suite_lines:
            return [EmptySuite(suite.name, tuple(suite.attributes.items())) for suite in held]
        return [Unread(suite.name) for suite in held]

    def line(self, content: str) -> list[Event]:
        """A line outside any suite: a `kunit.action=list` boot's suite, case and attribute lines, or noise."""
        stripped = content.rstrip()
        if not stripped:
            return []
        tentative, self._tentative = self._tentative, None
        attribute = grammar.suite_attribute(content)
        if tentative is not None and (
            attribute is not None or (stripped.startswith(tentative + ".") and len(stripped) > len(tentative) + 1)
        ):
            self._new_listed_suite(tentative)  # its attributes or its cases follow: it named a suite
        suite = self._suite
        suite_name = suite.name if suite is not None else None
        if attribute:
            if suite is not None:
                suite.attributes[attribute[0]] = attribute[1]
            return []
        listed = grammar.listed(content, suite.name if suite is not None else "")
        if listed and self._suite_lines and listed[0] != suite_name:
            listed = None  # this list names every suite before its cases: a line of no suite's is a suite's own
        case_attribute = grammar.case_attribute(content)
        if case_attribute and case_attribute[1] in grammar.SUITE_ATTRIBUTES and (not listed or listed[0] != suite_name):
            return []  # another case's attribute line (list_attr): no name
        if listed:
            if suite is not None and listed[0] == suite.name:
                self._suite_lines = True
            elif suite is not None:
                self._new_listed_suite(None)
            inherited = dict(suite.attributes) if suite is not None and listed[0] == suite.name else {}
            self._pending = _Listing(listed[0], listed[1], inherited, stripped)
            return []
        if grammar.looks_like_message(content):
            self._tentative = stripped
        else:
            self._new_listed_suite(stripped)
        return []
