"""What pytest-kunit borrows from pytest's and xdist's internals, where neither offers a public way: each a function
of its own saying which versions need it and why. tests/unit/test_compat.py runs each on the installed versions
(.ci/run on the floors too), and fails if any other module imports from _pytest or xdist or names a borrowed
attribute."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest

# Item.repr_failure's declared return type, which an override must keep (pytest 7.4 to 9.x): pytest exports no
# TerminalRepr (pytest.__all__ has none), and mypy --strict refuses a wider override.
from _pytest._code.code import TerminalRepr

__all__ = [
    "TerminalRepr",
    "add_junit_suite_property",
    "add_junit_testcase_attributes",
    "junit_writer",
    "open_worker_channel",
    "point_crash_line",
    "read_stdin_past_capture",
    "uncaptured",
]


def junit_writer(config: pytest.Config) -> Any | None:
    """The --junitxml report this process writes; None without one (an xdist worker never writes it).

    pytest 7.4 to 9.x: no public handle (its record_* fixtures reach it through this same stash key, and a hook
    cannot request a fixture). Where a pytest no longer has the key, the plugin object junitxml registers, which is
    the same object."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return registered_junit_writer(config)
    return config.stash.get(xml_key, None)


def registered_junit_writer(config: pytest.Config) -> Any | None:
    plugins = config.pluginmanager.get_plugins()
    return next((plugin for plugin in plugins if callable(getattr(plugin, "add_global_property", None))), None)


def add_junit_testcase_attributes(config: pytest.Config, report: pytest.TestReport, attributes: dict[str, str]) -> None:
    """`attributes` on the report's <testcase>, where this process writes --junitxml.

    pytest 7.4 to 9.x: record_xml_attribute does this, but as a fixture, on the worker that runs the case, which
    under xdist writes no JUnit; the controller can only reach the writer's node reporter, as the fixture does."""
    xml = junit_writer(config)
    if xml is None:
        return
    reporter = xml.node_reporter(report)
    for key, value in attributes.items():
        reporter.add_attribute(key, value)


def add_junit_suite_property(config: pytest.Config, name: str, value: str) -> None:
    """A <testsuite> property, where this process writes --junitxml.

    pytest 7.4 to 9.x: record_testsuite_property does this, but as a fixture; the session's own figures are known
    only at its end, in a hook."""
    xml = junit_writer(config)
    if xml is not None:
        xml.add_global_property(name, value)


def point_crash_line(longrepr: object, path: str, lineno: int, message: str) -> bool:
    """Make a failure report's crash line (JUnit's message=, the short summary, --tb=line) `message` at
    `path:lineno`; False where the report has none (a failure represented as plain text).

    pytest 7.4 to 9.x: the crash line is always the raising frame's, and the exception's whole text; no hook or
    public attribute places it elsewhere, and a representation of our own would lose it on its way through xdist."""
    crash = getattr(longrepr, "reprcrash", None)
    if crash is None:
        return False
    crash.path, crash.lineno, crash.message = path, lineno, message
    return True


@contextlib.contextmanager
def uncaptured(config: pytest.Config) -> Iterator[None]:
    """What is written inside reaches the terminal, though pytest captures output around it (collection does).

    pytest 7.4 to 9.x: no public way past the capture outside a test (capsys.disabled() is a test's fixture); the
    capture manager's own context, which pytest's live logging uses. Where a pytest has none, the output stays
    captured and the run goes on."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    disabled = getattr(capture, "global_and_fixture_disabled", None)
    if disabled is None:
        yield
        return
    with disabled():
        yield


def read_stdin_past_capture(config: pytest.Config) -> bytes:
    """All of stdin, read while pytest configures, when its capture holds stdin (as /dev/null).

    pytest 7.4 to 9.x: capture starts before any plugin hook could read stdin, and nothing public lends the real
    one; the capture manager suspends and resumes it."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is None or not capture.is_globally_capturing():
        return sys.stdin.buffer.read()
    capture.suspend_global_capture(in_=True)
    try:
        return sys.stdin.buffer.read()
    finally:
        # Back to the state pytest configures in: stdin captured, stdout and stderr not (the terminal's).
        capture.resume_global_capture()
        capture.suspend_global_capture(in_=False)


def open_worker_channel(node: Any) -> Any:
    """A new execnet channel to the xdist worker `node`, which the worker finds in its workerinput.

    pytest-xdist 3.3 to 3.8: a worker's gateway is an undocumented attribute of its controller; xdist offers no
    channel of a plugin's own (its one channel carries its own messages)."""
    return node.gateway.newchannel()
