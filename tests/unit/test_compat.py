"""What pytest-kunit borrows from pytest's and xdist's internals: each borrowing in pytest_kunit/compat.py does its
job on the installed versions (.ci/run runs these on the oldest ones too), and no module but compat.py borrows."""

from __future__ import annotations

import ast
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pytest_kunit.compat import TerminalRepr, junit_writer, registered_junit_writer, uncaptured

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_kunit"
# Internals of pytest (its capture manager, its JUnit writer, its report representations) and of xdist, by name.
BORROWED = {
    *("xml_key", "node_reporter", "add_global_property", "add_attribute", "reprcrash"),
    *("global_and_fixture_disabled", "suspend_global_capture", "resume_global_capture", "is_globally_capturing"),
    *("newchannel", "report_collection_diff"),
}
PRIVATE_PACKAGES = ("_pytest", "xdist")


def borrowings(path: Path) -> list[str]:
    """Where a module imports from pytest's or xdist's modules, names a borrowed attribute (as an attribute or a
    getattr string), assigns pytest's arguments, or passes unknown attributes on with __getattr__."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
        else:
            modules = []
        found += [f"import {module}" for module in modules if module.split(".")[0] in PRIVATE_PACKAGES]
        if isinstance(node, ast.Attribute) and node.attr in BORROWED:
            found.append(f".{node.attr}")
        if isinstance(node, ast.Constant) and node.value in BORROWED:
            found.append(repr(node.value))
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += ["= .args" for target in targets if isinstance(target, ast.Attribute) and target.attr == "args"]
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            found.append("def __getattr__")
    return found


def test_no_module_but_compat_borrows_an_internal() -> None:
    paths = [path for path in sorted(PACKAGE.rglob("*.py")) if path.name != "compat.py"]
    found = [f"{path.relative_to(PACKAGE.parent)}: {what}" for path in paths for what in borrowings(path)]
    assert found == []


def test_the_scan_finds_each_kind_of_borrowing(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "from _pytest.junitxml import xml_key\n"
        "import xdist.report\n"
        "crash = getattr(report, 'reprcrash', None)\n"
        "node.gateway.newchannel()\n"
        "config.args = []\n"
        "class View:\n"
        "    def __getattr__(self, name): ...\n"
    )
    assert sorted(borrowings(module)) == sorted(
        ["import _pytest.junitxml", "import xdist.report", "'reprcrash'", ".newchannel", "= .args", "def __getattr__"]
    )


@pytest.mark.parametrize("junit", [True, False])
def test_the_junit_writer_is_found_with_and_without_pytests_key(pytester: pytest.Pytester, junit: bool) -> None:
    """This pytest's stash key, and the registered plugin that stands in where a pytest has none, find one writer."""
    config = pytester.parseconfigure("-p", "no:cacheprovider", *(["--junitxml=junit.xml"] if junit else []))
    assert junit_writer(config) is registered_junit_writer(config)
    assert (junit_writer(config) is not None) is junit


def test_junit_gets_a_testcases_attributes_and_the_suites_properties(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from pytest_kunit.compat import add_junit_suite_property, add_junit_testcase_attributes

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_logreport(report):
            add_junit_testcase_attributes(pytest_config, report, {"classname": "suite", "name": "case"})

        def pytest_configure(config):
            global pytest_config
            pytest_config = config

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(session):
            add_junit_suite_property(session.config, "kunit_boots", "3")
        """
    )
    pytester.makepyfile(test_one="def test_one(): pass")
    pytester.runpytest("-p", "no:cacheprovider", "--junitxml=junit.xml").assert_outcomes(passed=1)
    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    case = suite.find("testcase")
    assert case is not None and (case.get("classname"), case.get("name")) == ("suite", "case")
    assert [(p.get("name"), p.get("value")) for p in suite.iter("property")] == [("kunit_boots", "3")]


def test_a_crash_line_is_pointed_where_it_is_told(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from pytest_kunit.compat import point_crash_line

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            made = yield
            report = made.get_result()
            if report.failed:
                assert point_crash_line(report.longrepr, "lib/case.c", 9, "the headline")
                assert not point_crash_line("a failure as plain text", "lib/case.c", 9, "the headline")
        """
    )
    pytester.makepyfile(test_one="def test_one():\n    raise AssertionError('first\\nsecond')")
    result = pytester.runpytest("-p", "no:cacheprovider", "--tb=line", "-rf", "--junitxml=junit.xml")
    result.stdout.fnmatch_lines(["lib/case.c:9: the headline", "FAILED test_one.py::test_one - the headline"])
    failure = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite/testcase/failure")
    assert failure is not None and failure.get("message") == "the headline"


def test_an_items_failure_representation_is_the_borrowed_type(pytester: pytest.Pytester) -> None:
    item = pytester.getitem("def test_func(): pass")
    try:
        raise AssertionError("failed")
    except AssertionError:
        excinfo = pytest.ExceptionInfo.from_current()
    assert isinstance(item.repr_failure(excinfo), TerminalRepr)


def test_uncaptured_output_reaches_the_terminal_while_pytest_captures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_one="""
        from pytest_kunit.compat import uncaptured

        def test_one(request):
            with uncaptured(request.config):
                print("through the capture")
            print("held by the capture")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "through the capture" in result.stdout.str()
    assert "held by the capture" not in result.stdout.str()


def test_a_capture_manager_without_its_context_leaves_the_output_captured(capsys: pytest.CaptureFixture[str]) -> None:
    """A pytest whose capture manager lacks the context: what is written stays captured, and nothing fails."""
    plugins = SimpleNamespace(get_plugin=lambda name: object())
    with uncaptured(cast(pytest.Config, SimpleNamespace(pluginmanager=plugins))):
        print("held by the capture")
    assert capsys.readouterr().out == "held by the capture\n"


def test_stdin_is_read_at_configure_time_and_captured_again_after(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        from pathlib import Path
        from pytest_kunit.compat import read_stdin_past_capture

        def pytest_configure(config):
            Path("stdin.bin").write_bytes(read_stdin_past_capture(config))
        """
    )
    pytester.makepyfile(test_one="import sys\n\ndef test_one():\n    print('held by the capture')\n")
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", stdin=b"a console\n")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "stdin.bin").read_bytes() == b"a console\n"
    assert "held by the capture" not in result.stdout.str()


def test_a_channel_of_our_own_reaches_an_xdist_worker(pytester: pytest.Pytester) -> None:
    """The channel opened for a worker, handed over in its workerinput, carries the worker's message back."""
    pytester.makeconftest(
        """
        from pathlib import Path
        from pytest_kunit.compat import open_worker_channel

        received = []

        def pytest_configure_node(node):
            channel = open_worker_channel(node)
            channel.setcallback(received.append)
            node.workerinput["test_channel"] = channel

        def pytest_configure(config):
            workerinput = getattr(config, "workerinput", None)
            if workerinput is not None:
                workerinput["test_channel"].send("hello from " + workerinput["workerid"])

        def pytest_testnodedown(node, error):
            Path("received.txt").write_text(",".join(received))
        """
    )
    pytester.makepyfile(test_one="def test_one(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "received.txt").read_text() == "hello from gw0"
