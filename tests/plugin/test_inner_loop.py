"""The edit-build-test loop: after an edit, the list boot runs again only when the case list can have changed."""

from __future__ import annotations

import time

import pytest

from .conftest import FakeKernel


def run(project: pytest.Pytester, fake_kernel: FakeKernel) -> tuple[pytest.RunResult, list[str]]:
    """One `-k example_simple_test` run: its result, and what each of its boots did ("list" or "test")."""
    before = len(fake_kernel.boots())
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    result = project.runpytest(*fake_kernel.options("-rA", "-k", "example_simple_test"))
    boots = fake_kernel.boots()[before:]
    return result, ["list" if "kunit.action" in boot["params"] else "test" for boot in boots]


@pytest.fixture
def with_objects(fake_kernel: FakeKernel) -> FakeKernel:
    """The fake build leaves compiled suite objects and vmlinux.a behind, as Kbuild does."""
    spec = fake_kernel.spec()
    spec["objects"] = True
    fake_kernel.write_spec(spec)
    return fake_kernel


def rename(fake_kernel: FakeKernel, old: str, new: str) -> None:
    spec = fake_kernel.spec()
    for suite in spec["suites"]:
        for case in suite["cases"]:
            if case["name"] == old:
                case["name"] = new
    fake_kernel.write_spec(spec)


def test_an_edit_to_what_a_case_does_skips_the_list_boot(project: pytest.Pytester, with_objects: FakeKernel) -> None:
    result, boots = run(project, with_objects)
    result.assert_outcomes(passed=1)
    assert boots == ["list", "test"]
    # Code only: a new image (the case now fails, so it is the rebuilt one that ran), the same case list.
    with_objects.set_case("example", "example_simple_test", outcome="fail")
    result, boots = run(project, with_objects)
    result.stdout.fnmatch_lines(["*kernel builds: 1 *"])
    result.assert_outcomes(failed=1)
    assert boots == ["test"]


def test_a_renamed_or_added_case_is_listed_again(project: pytest.Pytester, with_objects: FakeKernel) -> None:
    run(project, with_objects)[0].assert_outcomes(passed=1)
    rename(with_objects, "example_simple_test", "example_simple_test_renamed")
    result, boots = run(project, with_objects)
    assert boots == ["list", "test"]
    result.stdout.fnmatch_lines(["PASSED *::example::example_simple_test_renamed"])
    spec = with_objects.spec()
    spec["suites"][0]["cases"].append({"name": "example_simple_test_2"})
    with_objects.write_spec(spec)
    result, boots = run(project, with_objects)
    assert boots == ["list", "test"]
    result.assert_outcomes(passed=2)


def test_a_renamed_suite_or_changed_attribute_is_listed_again(
    project: pytest.Pytester, with_objects: FakeKernel
) -> None:
    run(project, with_objects)[0].assert_outcomes(passed=1)
    spec = with_objects.spec()
    spec["suites"][1]["name"] = "renamed"  # a suite the run does not select: still a different list
    with_objects.write_spec(spec)
    assert run(project, with_objects)[1] == ["list", "test"]
    with_objects.set_case("example", "example_simple_test", attributes={"speed": "slow"})
    assert run(project, with_objects)[1] == ["list", "test"]


def test_a_change_to_kunit_itself_is_listed_again(project: pytest.Pytester, with_objects: FakeKernel) -> None:
    """The executor prints the list: a change to KUnit's own code may change it, whatever the suites say."""
    run(project, with_objects)[0].assert_outcomes(passed=1)
    core = with_objects.tree / "lib/kunit/core.c"
    core.write_text(core.read_text().replace('"%s.%s"', '"%s:%s"'))
    result, boots = run(project, with_objects)
    result.assert_outcomes(passed=1)
    assert boots == ["list", "test"]


def test_without_objects_every_new_image_is_listed(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """No vmlinux.a to read (a kernel before 6.1, or an unfamiliar build): each new image gets its list boot."""
    run(project, fake_kernel)
    fake_kernel.set_case("example", "example_simple_test", outcome="fail")
    result, boots = run(project, fake_kernel)
    result.assert_outcomes(failed=1)
    assert boots == ["list", "test"]
