"""Streaming parser for the KTAP / TAP output KUnit prints on the kernel console.

The parser is a pure function of the lines it is fed: it never raises on bad input and it only reports a case as
passed when that case's own ``ok`` line at its suite's depth was seen.  What it reads (line grammar in
``ktap_lines``; a ``kunit.action=list`` boot's lines in ``ktap_list``):

* ``TAP version 14`` and ``KTAP version N`` headers, results with or without ``- `` before the name, any
  indentation (including none), printk prefixes (``[    1.234]``, ``[    1.234][    T1]``, ``[    1.234][    C0]``)
  and unrelated printk lines anywhere.
* Suites opened by ``# Subtest: name`` (with or without their own version line, before or after it), and suites
  opened by an indented version line alone, as Documentation/dev-tools/ktap.rst nests them.  Such a suite's name is
  only known from its closing line, so no event names it before then: its ``SuiteStarted``, its cases and its
  ``SuiteFinished`` are all emitted when that line arrives.  A nested block with neither indentation nor
  ``# Subtest:`` cannot be told from a repeated header and is not read.
* Parameterised cases in every form 5.11..6.12 print: ``# case: ok 1 - param`` diagnostics (5.11-5.15), a nested
  ``# Subtest: case`` block (5.16+), with ``KTAP version 1`` (6.0+) and ``1..N`` (later).  Such a case fails if any
  parameter failed; a nested block that ran no parameter is skipped, like pytest's empty parameter set.
* Attributes (6.6+): ``# speed: slow`` / ``# module: m`` / ``# is_init: true`` after a suite's header, and
  ``# case.speed: slow`` before a case's result, recorded as each case's effective attributes (its own, else its
  suite's: how KUnit filters on them); the same lines after ``kunit.action=list_attr``'s ``suite.case`` lines.
* Directives: ``# SKIP`` skips (even on ``not ok``); ``# XFAIL``, and ``# TODO`` on ``not ok``, are expected
  failures (XFAIL), while ``ok ... # TODO`` passed; ``# TIMEOUT`` times out and ``# ERROR`` fails whatever the
  result word says.  Text after ``#`` that opens with no directive is only a reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from . import ktap_lines as grammar
from . import ktap_results as results
from .ktap_list import ListReader
from .ktap_results import (
    CaseResult,
    EmptySuite,
    Event,
    KtapStarted,
    Listed,
    Location,
    ParamResult,
    Status,
    SuiteFinished,
    SuiteStarted,
    Unfinished,
    Unread,
)

# The parser's vocabulary, for its readers: what it yields is ktap_results.py's.
__all__ = [
    "CaseResult",
    "EmptySuite",
    "Event",
    "KtapParser",
    "KtapStarted",
    "Listed",
    "Location",
    "ParamResult",
    "Status",
    "SuiteFinished",
    "SuiteStarted",
    "Unfinished",
    "Unread",
    "parse",
    "since_last_result",
]


# KUnit nests four levels: the root, a suite, a parameterised case, its parameters; a few more are allowed for KTAP's
# own nesting. Deeper `# Subtest:` and version lines are plain text, so every result line looks at a bounded stack
# (16,000 headers at one indentation once made each result line scan them all: minutes for 380 KiB).
MAX_DEPTH = 8
# The most tests one plan line is believed to announce (KUnit's largest suites hold hundreds): a larger `1..N` is no
# plan, so a console's few bytes cannot stand for millions of unfinished cases.
MAX_PLAN = 10_000


@dataclass
class _Group:
    """An open block: the root, a suite, a parameterised case, or a parameter with parameters of its own."""

    name: str | None  # None until a `# Subtest:` or the closing line names it
    indent: int
    indent_known: bool  # deeper than its parent, so a shallower result line closes it
    versioned: bool = False  # its own version line was seen
    pending: list[str] = field(default_factory=list)
    params: list[ParamResult] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)  # held back while the suite has no name
    attributes: dict[str, str] = field(default_factory=dict)
    planned: int | None = None
    results: int = 0
    verdicts: dict[str, Status] = field(default_factory=dict)  # a suite's: each case's, from its result line

    @property
    def fresh(self) -> bool:
        """Nothing but its header yet: its name, version line or attributes may still follow."""
        return self.planned is None and not self.results


class KtapParser:
    """Feed console lines one at a time; each call returns the events that line completed."""

    def __init__(self, list_boot: bool = False) -> None:
        self._stack: list[_Group] = []
        self._list = ListReader(list_boot)
        self._list_boot = list_boot  # a kunit.action=list boot: its lines at the top level are all the list's
        self.started = False

    def feed(self, raw: str) -> list[Event]:
        line = grammar.clean(raw)
        content = line.lstrip(" \t")
        indent = len(line) - len(content)
        events = self._list.before(content)
        if events is None:
            return []  # the listed case's own attribute line

        if grammar.is_version(content):
            if not self.started:
                self.started = True
                events.append(KtapStarted())
            self._version(indent)
            return events
        if not self._stack:
            return events
        if self._list_boot and len(self._stack) == 1 and grammar.plan(content) is None:
            # A list boot runs no test: a line that looks like KTAP (`ok 1 x.y`, `# Subtest: s.c`) is a name too.
            return events + self._list.line(content)

        name = grammar.subtest(content)
        if name is not None and len(self._stack) < MAX_DEPTH:
            return events + self._subtest(name, indent)
        count = grammar.plan(content)
        if count is not None and count <= MAX_PLAN:
            top = self._stack[-1]
            if top.planned is None and not top.results:
                top.planned = count
            return events
        result = grammar.result(content)
        if result is not None:
            taken = self._result(result, indent)
            if taken is not None:
                return events + taken
            # Not where this block's next result goes (another depth, out of sequence, a second verdict): a
            # printk of any text can look like a result line, and only KUnit's own one counts.
        if len(self._stack) == 1:
            return events + self._list.line(content)

        top = self._stack[-1]
        suite_attribute = grammar.suite_attribute(content)
        if suite_attribute and len(self._stack) == 2 and top.fresh:
            top.attributes[suite_attribute[0]] = suite_attribute[1]
            return events
        # Dedent by the suite's indentation, so nested lines keep their own steps.
        top.pending.append(line[min(indent, self._stack[1].indent) :])
        return events

    def finish(self) -> list[Event]:
        """The console ended: report the innermost open suite, if any, as unfinished."""
        events = self._list.finish()
        if len(self._stack) >= 2:
            suite = self._stack[1]
            log = [line for group in self._stack[1:] for line in group.pending]
            events.append(Unfinished(suite.name or "", tuple(log), suite.planned, suite.results))
        self._stack.clear()
        return events

    def _version(self, indent: int) -> None:
        if not self._stack:
            self._stack.append(_Group("", indent, indent_known=False, versioned=True))
            return
        top = self._stack[-1]
        if len(self._stack) > 1 and top.name is not None and not top.versioned and top.fresh:
            # `# Subtest: name` came first and this is the same block's own version line.
            top.versioned = True
            if indent > top.indent:
                top.indent, top.indent_known = indent, indent > self._stack[-2].indent
            return
        if indent > top.indent and len(self._stack) < MAX_DEPTH:
            self._stack.append(_Group(None, indent, indent_known=True, versioned=True))
        # Otherwise a repeated header (a module's tests starting, an echo): nothing opens.

    def _subtest(self, name: str, indent: int) -> list[Event]:
        top = self._stack[-1]
        if len(self._stack) > 1 and top.fresh and top.indent == indent and top.name in (None, name):
            if top.name is None:  # the version line that opened this block is followed by its name
                top.name = name
                return [SuiteStarted(name)] if len(self._stack) == 2 else []
            return []  # the same header echoed twice
        self._stack.append(_Group(name, indent, indent_known=indent > top.indent))
        return [SuiteStarted(name)] if len(self._stack) == 2 else []

    def _closing_depth(self, result: grammar.Result, indent: int) -> int | None:
        """Index in the stack of the open group this result line closes, if it closes one."""
        name = result.name
        for depth in range(len(self._stack) - 1, 0, -1):
            group = self._stack[depth]
            parent = self._stack[depth - 1]
            if name in parent.verdicts:
                continue  # a test judged already: this line closes nothing
            if group.name is None:
                # Unnamed: closed by the first result at its parent's level, whatever it is called.
                if indent == parent.indent:
                    return depth
                continue
            if group.name != name or (group.indent_known and indent != parent.indent):
                continue  # a suite's own closing line is printed at its parent's depth, and only there
            if not group.indent_known and group.planned is not None and group.results < group.planned:
                continue  # without indentation, a same-named leaf is told apart by the unmet plan
            return depth
        return None

    def _result(self, result: grammar.Result, indent: int) -> list[Event] | None:
        """The events of a result line, or None when it is no result of the open blocks (it is then a plain line)."""
        depth = self._closing_depth(result, indent)
        if depth is not None:
            return self._close(depth, result)
        top = self._stack[-1]
        if len(self._stack) == 1:
            return []  # a result outside any suite is no case (kselftest's plain tests, a suite that failed to init)
        if indent != top.indent:
            # Only at the block's own depth: a test's printk can print anything, at any depth, while the case runs;
            # KUnit prints its results at the block's.
            return None
        if len(self._stack) == 2 and result.name in top.verdicts:
            return self._second_verdict(top, result)
        top.results += 1
        diagnostics, top.pending = top.pending, []
        if len(self._stack) == 2:
            return self._case(top, result, diagnostics, [])
        status = results.verdict(result.ok, result.directive, diagnostics)
        top.params.append(ParamResult(result.name, status, result.reason, tuple(diagnostics)))
        return []

    def _close(self, depth: int, result: grammar.Result) -> list[Event]:
        closed = self._stack[depth]
        del self._stack[depth:]
        parent = self._stack[-1]
        parent.results += 1
        if depth == 1:
            return self._suite_finished(closed, result)
        # Lines logged before the block opened, then each parameter's, then those after the last parameter.
        diagnostics = [*parent.pending, *(line for param in closed.params for line in param.diagnostics)]
        diagnostics += closed.pending
        parent.pending = []
        if depth == 2:
            return self._case(parent, result, diagnostics, closed.params, nested=True)
        status = results.with_params(results.verdict(result.ok, result.directive, diagnostics), closed.params)
        parent.params.append(ParamResult(result.name, status, result.reason, tuple(diagnostics)))
        return []

    def _case(
        self, suite: _Group, result: grammar.Result, lines: list[str], params: list[ParamResult], nested: bool = False
    ) -> list[Event]:
        attributes = dict(suite.attributes)
        diagnostics: list[str] = []
        for line in lines:
            attribute = grammar.case_attribute(line.strip())
            if attribute and attribute[0] == result.name:
                attributes[attribute[1]] = attribute[2]
            else:
                diagnostics.append(line)
        if not nested:
            params = results.old_params(result.name, diagnostics)
        status = results.with_params(results.verdict(result.ok, result.directive, diagnostics), params)
        reason = result.reason
        if nested and not params and status is Status.PASSED:
            status, reason = Status.SKIPPED, reason or "no parameter ran"
        case = CaseResult(
            suite.name or "", result.name, status, reason, tuple(diagnostics), tuple(params), tuple(attributes.items())
        )
        suite.verdicts[case.case] = case.status
        if suite.name is None:
            suite.cases.append(case)
            return []
        return [case]

    def _second_verdict(self, suite: _Group, result: grammar.Result) -> list[Event] | None:
        """A second result line for a case of `suite`: only text, unless the first said it passed and this one says
        it did not. Then the first was not its own (a test can printk any line): the case is reported again, not
        passed, so a crash after a forged `ok` line is never hidden."""
        if (
            suite.verdicts[result.name] is not Status.PASSED
            or results.verdict(result.ok, result.directive, []) is Status.PASSED
        ):
            return None
        diagnostics, suite.pending = suite.pending, []
        note = f"an earlier line said {result.name} passed; its own result line says it did not"
        return self._case(suite, result, [note, *diagnostics], [])

    def _suite_finished(self, closed: _Group, result: grammar.Result) -> list[Event]:
        status = results.verdict(result.ok, result.directive, closed.pending)
        name = result.name if closed.name is None else closed.name
        finished = SuiteFinished(name, status, tuple(closed.attributes.items()))
        if closed.name is not None:
            return [finished]
        # A suite opened by its version line alone: its closing line has just named it.
        return [SuiteStarted(finished.suite), *(replace(case, suite=finished.suite) for case in closed.cases), finished]


def parse(lines: Iterable[str]) -> Iterator[Event]:
    """Parse a whole console (or a live stream of lines) into events."""
    parser = KtapParser()
    for line in lines:
        yield from parser.feed(line)
    yield from parser.finish()


def since_last_result(lines: list[str]) -> list[str]:
    """The lines after the last `ok`/`not ok` line (all of them if there is none)."""
    for index in range(len(lines) - 1, -1, -1):
        if grammar.result(grammar.clean(lines[index]).strip()):
            return lines[index + 1 :]
    return list(lines)
