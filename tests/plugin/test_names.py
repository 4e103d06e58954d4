"""Names KUnit allows but few print (6.12's net/handshake suite is `Handshake API tests`): every one collected,
selectable by -k and node id, filtered exactly in the guest where kunit.filter_glob can say it (else run with its
suite, or unfiltered), and reported in JUnit and KCIDB."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from .conftest import FakeKernel
from .test_attributes import EXECUTOR_6_12

HANDSHAKE = "Handshake API tests"
ODD = "odd names"
NAMES = {
    HANDSHAKE: ["req_alloc API fuzzing", "req_alloc excessive privsize", "naïve café"],
    ODD: ["star*case", "c,d", "say (hi)!"],
}


def named_suites(fake_kernel: FakeKernel, **spec: Any) -> None:
    """The fake kernel holds only suites whose names have spaces, punctuation and non-ASCII."""
    crashing = NAMES[HANDSHAKE][1]
    suites = [
        {
            "name": suite,
            "cases": [{"name": case, **({"outcome": "crash"} if case == crashing else {})} for case in cases],
        }
        for suite, cases in NAMES.items()
    ]
    fake_kernel.write_spec({"suites": suites, **spec})


def test_every_name_is_collected_and_run(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    named_suites(fake_kernel)
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    result.stdout.fnmatch_lines(
        [
            "kunit.kunitconfig::Handshake API tests::req_alloc API fuzzing",
            "kunit.kunitconfig::Handshake API tests::req_alloc excessive privsize",
            "kunit.kunitconfig::Handshake API tests::naïve café",
            "kunit.kunitconfig::odd names::star*case",
            "kunit.kunitconfig::odd names::c,d",
            "kunit.kunitconfig::odd names::say (hi)!",
        ]
    )
    xml = project.path / "junit.xml"
    result = project.runpytest(*fake_kernel.options(f"--junitxml={xml}", "--kunit-kcidb", "kcidb.json"))
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["*Handshake API tests.req_alloc excessive privsize CRASHED*"])
    junit = {case.get("name"): case.get("classname") for case in ET.parse(xml).getroot().iter("testcase")}
    assert junit["req_alloc API fuzzing"] == "kunit.kunitconfig.Handshake API tests"
    assert junit["naïve café"] == "kunit.kunitconfig.Handshake API tests"
    report = json.loads((project.path / "kcidb.json").read_text())
    assert len(report["tests"]) == 6
    statuses = {test["path"]: test["status"] for test in report["tests"]}
    assert statuses["kunit.Handshake_API_tests.req_alloc_API_fuzzing"] == "PASS"


def test_k_and_node_ids_select_names_with_spaces_and_the_guest_runs_exactly_them(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    named_suites(fake_kernel)
    project.runpytest(*fake_kernel.options("-k", "fuzzing")).assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["Handshake API tests.req_alloc API fuzzing"]
    assert 'kunit.filter_glob="Handshake API tests.req_alloc API fuzzing"' in fake_kernel.test_boots()[0]["append"]
    fake_kernel.qemu_log.unlink()
    nodeid = "kunit.kunitconfig::Handshake API tests::naïve café"
    project.runpytest(*fake_kernel.options(nodeid)).assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["Handshake API tests.naïve café"]
    fake_kernel.qemu_log.unlink()
    project.runpytest(*fake_kernel.options("kunit.kunitconfig::odd names::star*case")).assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["odd names.star[*]case"]


def test_a_case_the_filter_cannot_name_runs_with_its_suite(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    named_suites(fake_kernel)
    # A comma splits our series' list of globs: the case's whole suite runs, and only it is reported.
    project.runpytest(*fake_kernel.options("kunit.kunitconfig::odd names::c,d")).assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["odd names"]


def test_a_suite_with_a_dot_is_listed_by_its_own_line_and_boots_unfiltered(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """kunit.action=list_attr (6.6+) names each suite alone first; the kernel splits a glob at its first dot, so
    no filter can name such a suite."""
    (fake_kernel.tree / "lib/kunit/executor.c").write_text(EXECUTOR_6_12)
    named_suites(fake_kernel, single_glob=True)
    spec = fake_kernel.spec()
    spec["suites"].append({"name": "v1.2 suite", "cases": [{"name": "first case"}, {"name": "second"}]})
    fake_kernel.write_spec(spec)
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    result.stdout.fnmatch_lines(["kunit.kunitconfig::v1.2 suite::first case", "kunit.kunitconfig::v1.2 suite::second"])
    project.runpytest(*fake_kernel.options("-k", "first and case")).assert_outcomes(passed=1)
    assert fake_kernel.filters() == [None]


def test_single_glob_trees_name_a_comma_and_quote_spaces(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    (fake_kernel.tree / "lib/kunit/executor.c").write_text("/* one glob only */\n")
    named_suites(fake_kernel, single_glob=True)
    project.runpytest(*fake_kernel.options("-k", "fuzzing")).assert_outcomes(passed=1)
    project.runpytest(*fake_kernel.options("kunit.kunitconfig::odd names::c,d")).assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["Handshake API tests.req_alloc API fuzzing", "odd names.c,d"]


def test_a_list_line_that_names_no_case_is_an_error_not_an_empty_run(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    named_suites(fake_kernel, printk_list=["a line that names no case"])
    result = project.runpytest(*fake_kernel.options())
    assert result.ret != 5  # never "no tests ran"
    result.stdout.fnmatch_lines(
        ["*kunit.action=list boot*reached its end, but 1 of its lines name no case*", "*'a line that names no case'*"]
    )


# Suites and cases whose lines read as kernel messages (`net: core`), comments (`#hash`), or hold brackets, quotes,
# dots and non-ASCII: the failing `bad: suite` sits between two passing suites, where it once vanished from a green run.
MESSAGE_LIKE = {
    "net: core": ["first", "v1.2 dotted"],
    "bad: suite": ["fails"],
    # Not `[` in a suite's name: pytest's JUnit writer splits a node id at its first `[` (a parameter's id).
    "#hash (x) 'q'": ["c [1]", "naïve: café", 'say "hi"'],
}


def message_like_suites(fake_kernel: FakeKernel, **spec: Any) -> None:
    suites = [
        {"name": suite, "cases": [{"name": case, **({"outcome": "fail"} if case == "fails" else {})} for case in cases]}
        for suite, cases in MESSAGE_LIKE.items()
    ]
    fake_kernel.write_spec({"suites": suites, **spec})


@pytest.mark.parametrize("list_attr", [False, True], ids=["suite.case lines", "suite lines first"])
def test_names_that_read_as_kernel_messages_or_comments_round_trip(
    project: pytest.Pytester, fake_kernel: FakeKernel, list_attr: bool
) -> None:
    if list_attr:
        (fake_kernel.tree / "lib/kunit/executor.c").write_text(EXECUTOR_6_12)
    message_like_suites(fake_kernel)
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q"))
    result.stdout.fnmatch_lines(
        [
            "kunit.kunitconfig::net: core::first",
            "kunit.kunitconfig::net: core::v1.2 dotted",
            "kunit.kunitconfig::bad: suite::fails",
            "kunit.kunitconfig::#hash (x) 'q'::c [[]1]",
            "kunit.kunitconfig::#hash (x) 'q'::naïve: café",
            "kunit.kunitconfig::#hash (x) 'q'::say \"hi\"",
        ]
    )
    xml = project.path / "junit.xml"
    result = project.runpytest(*fake_kernel.options(f"--junitxml={xml}", "--kunit-kcidb", "kcidb.json"))
    result.assert_outcomes(passed=5, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*bad: suite.fails FAILED*"])
    junit = {(case.get("classname"), case.get("name")) for case in ET.parse(xml).getroot().iter("testcase")}
    assert ("kunit.kunitconfig.#hash (x) 'q'", "naïve: café") in junit
    assert ("kunit.kunitconfig.#hash (x) 'q'", "c [1]") in junit
    assert ("kunit.kunitconfig.bad: suite", "fails") in junit
    assert len(json.loads((project.path / "kcidb.json").read_text())["tests"]) == 6
    # -k and node ids select them, and the guest's filter names exactly them (quoted, brackets made literal).
    fake_kernel.qemu_log.unlink()
    project.runpytest(*fake_kernel.options("-k", "fails")).assert_outcomes(failed=1)
    assert fake_kernel.filters() == ["bad: suite"]  # the suite's only case: its suite's glob
    fake_kernel.qemu_log.unlink()
    project.runpytest(*fake_kernel.options("kunit.kunitconfig::#hash (x) 'q'::c [1]")).assert_outcomes(passed=1)
    assert fake_kernel.filters() == ["#hash (x) 'q'.c [[]1]"]


def test_a_suite_listed_with_no_cases_is_skipped_as_kunit_py_reports_it(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """6.12's all_tests.config on UML lists kunit_fault with no cases (its case needs CONFIG_KUNIT_FAULT_TEST): the
    fragment once ended in a collection error, 0 of 599 cases run. The suite is one item, skipped as kunit.py reports
    it, from the list boot alone; the rest run, and a cached list keeps it."""
    (fake_kernel.tree / "lib/kunit/executor.c").write_text(EXECUTOR_6_12)
    message_like_suites(fake_kernel)
    spec = fake_kernel.spec()
    spec["suites"].insert(1, {"name": "kunit_fault", "cases": []})
    fake_kernel.write_spec(spec)
    junit = project.path / "junit.xml"
    for _ in range(2):  # the first run lists the kernel, the second reads its cached list
        result = project.runpytest(*fake_kernel.options("-rs", f"--junitxml={junit}"))
        result.assert_outcomes(passed=5, failed=1, skipped=1)
        result.stdout.fnmatch_lines(["SKIPPED * kunit.kunitconfig: suite kunit_fault has no cases in this kernel*"])
        skipped = [case for case in ET.parse(junit).getroot().iter("testcase") if case.find("skipped") is not None]
        assert [case.get("name") for case in skipped] == ["kunit_fault"]
    assert all("kunit_fault" not in (glob or "") for glob in fake_kernel.filters())  # it boots nowhere
    selected = project.runpytest(*fake_kernel.options("-k", "kunit_fault"))
    selected.assert_outcomes(skipped=1)


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_brackets_in_names_reach_junit_whole(
    project: pytest.Pytester, fake_kernel: FakeKernel, workers: tuple[str, ...]
) -> None:
    """pytest reads a `[` in a node id as the start of parameters: JUnit named the case `punctuation [brackets] &
    more` as `... & more]` on pytest 9.2, and a suite `a [b] c`'s cases under a classname cut at its `[`."""
    spec = fake_kernel.spec()
    spec["suites"] = [
        {"name": "a [b] c", "cases": [{"name": "punctuation [brackets] & more"}, {"name": "plain"}]},
        {"name": "other", "cases": [{"name": "x[1]"}]},
    ]
    fake_kernel.write_spec(spec)
    junit = project.path / "junit.xml"
    result = project.runpytest_subprocess(*fake_kernel.options(f"--junitxml={junit}", *workers))
    result.assert_outcomes(passed=3)
    named = {(case.get("classname"), case.get("name")) for case in ET.parse(junit).getroot().iter("testcase")}
    assert named == {
        ("kunit.kunitconfig.a [b] c", "punctuation [brackets] & more"),
        ("kunit.kunitconfig.a [b] c", "plain"),
        ("kunit.kunitconfig.other", "x[1]"),
    }
