"""Names generated at random through the whole plugin, with the fake kernel: every listed case is an item (its node
id the fragment's, its suite's and its own name, whole) with the verdict its own result line gave, or an error when it
printed none, never a pass; and so in JUnit (classname and name whole) and KCIDB (one test per case, found by its
node id, a path the schema takes); a case's node id selects it alone, run by the guest's filter or with its suite
(unless its suite's name holds a `[`, which pytest's node ids on a command line cannot).

Names hold `: ` (read as kernel messages once), a leading `#` (read as comments once), brackets, quotes, dots,
commas, globs and non-ASCII. Left out are the kernel's own ambiguities (tests/unit/test_ktap_names.py says which; and
a case named `-`, whose skip line `ok 2 - # SKIP` is TAP's optional dash and no name, as kunit.py reads it too; a
name beginning `# `, whose result line `ok 2 # x` is TAP's unnamed result and its directive)
and `::` or a `:` at either end, which pytest's node ids cannot tell from their own `::`."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

import kcidb_io
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .conftest import FAKE, FakeKernel
from .test_attributes import EXECUTOR_6_12

NAME = st.text(alphabet="ab é中:#[]'\".,*-()", min_size=1, max_size=8).filter(
    lambda name: name == name.strip() and "::" not in name and not re.search(r"\s#|^#\s|^-( |$)|^:|:$", name)
)
SUITE = NAME.filter(lambda name: "." not in name)  # a dot in a suite is where 6.1's `suite.case` list line splits
# Cases `a` and `a.b` of one suite list as `s.a` and `s.a.b`, which is also a suite `s.a`'s case `b`.
CASES = st.lists(NAME, min_size=1, max_size=3, unique=True).filter(
    lambda cases: not any(case.startswith(other + ".") for case in cases for other in cases)
)
OUTCOMES = st.sampled_from(["pass", "fail", "skip", "noresult"])
# A skipped case named `#x` prints `ok 1 #x # SKIP`, which TAP reads as an unnamed case's directive: no verdict (an
# error), as the kernel's own ambiguity; such a case is drawn with the other outcomes.
HASHED = st.sampled_from(["pass", "fail", "noresult"])
# What each outcome of the fake guest's is, in pytest's words, JUnit's element and KCIDB's status: a case that printed
# no result line is an error and KCIDB's MISS, never a pass.
PYTEST = {"pass": "passed", "fail": "failed", "skip": "skipped", "noresult": "errors"}
JUNIT = {"pass": None, "fail": "failure", "skip": "skipped", "noresult": "error"}
KCIDB = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP", "noresult": "MISS"}


@st.composite
def named_suites(draw: st.DrawFn) -> dict[str, dict[str, str]]:
    """suite -> case -> its outcome."""
    suites = draw(st.lists(SUITE, min_size=1, max_size=3, unique=True))
    return {
        suite: {case: draw(HASHED if case.startswith("#") else OUTCOMES) for case in draw(CASES)} for suite in suites
    }


def outcome_counts(outcomes: Iterable[str]) -> dict[str, int]:
    counted = dict.fromkeys(PYTEST.values(), 0)
    for outcome in outcomes:
        counted[PYTEST[outcome]] += 1
    return counted


def junit_verdict(case: ET.Element) -> str | None:
    return next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), None)


# Few examples, each drawn afresh and never shrunk: an example is three pytest runs and a build of the fake kernel.
@settings(
    max_examples=5,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(named_suites(), st.booleans(), st.data())
def test_every_listed_case_is_an_item_or_an_error_and_reaches_junit_and_kcidb_whole(
    project: pytest.Pytester,
    fake_kernel: FakeKernel,
    suites: dict[str, dict[str, str]],
    lists_suites: bool,
    data: st.DataObject,
) -> None:
    # 6.12's executor lists each suite's own line before its cases (list_attr) and its guest takes one glob, commas
    # and all; 6.1's lists `suite.case` lines and takes several.
    executor = "lib/kunit/executor.c"
    (fake_kernel.tree / executor).write_text(EXECUTOR_6_12 if lists_suites else (FAKE / "tree" / executor).read_text())
    spec = [
        {"name": suite, "cases": [{"name": case, "outcome": outcome} for case, outcome in cases.items()]}
        for suite, cases in suites.items()
    ]
    fake_kernel.write_spec({"suites": spec, "single_glob": lists_suites})
    expected = {
        f"kunit.kunitconfig::{suite}::{case}": outcome
        for suite, cases in suites.items()
        for case, outcome in cases.items()
    }
    listed = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    assert [line for line in listed.outlines if line.startswith("kunit.kunitconfig::")] == list(expected)

    junit = project.path / "junit.xml"
    result = project.runpytest(*fake_kernel.options(f"--junitxml={junit}", "--kunit-kcidb", "kcidb.json"))
    result.assert_outcomes(**outcome_counts(expected.values()))
    in_junit = {
        (case.get("classname"), case.get("name")): junit_verdict(case)
        for case in ET.parse(junit).getroot().iter("testcase")
    }
    assert in_junit == {
        (f"kunit.kunitconfig.{suite}", case): JUNIT[outcome]
        for suite, cases in suites.items()
        for case, outcome in cases.items()
    }
    report = json.loads((project.path / "kcidb.json").read_text())
    kcidb_io.schema.V5_0.validate_exactly(report)
    tests = report["tests"]
    assert len({test["id"] for test in tests}) == len(tests)
    assert {test["misc"]["nodeid"]: test["status"] for test in tests} == {
        nodeid: KCIDB[outcome] for nodeid, outcome in expected.items()
    }
    assert len(tests) == len(expected)

    # pytest reads a command line's node id by `::` only up to its first `[`: a case of a suite with one is selected by
    # -k or its fragment, never by node id (pytest says it found no such node). A node id selects, as pytest's own
    # do, the cases named as it is with `[...]` after (a parametrised test's).
    chosen = data.draw(st.sampled_from([nodeid for nodeid in expected if "[" not in nodeid.split("::")[1]] or [""]))
    if chosen:
        selected = [nodeid for nodeid in expected if nodeid == chosen or nodeid.startswith(chosen + "[")]
        alone = project.runpytest(*fake_kernel.options(chosen))
        alone.assert_outcomes(**outcome_counts(expected[nodeid] for nodeid in selected))
