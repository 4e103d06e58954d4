"""The edit-build-test loop: after an edit, the list boot runs again only when the case list can have changed."""

from __future__ import annotations

import json
import tarfile
import time
from pathlib import Path

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
    # An incremental build's step count is not the cold build's: no estimate drawn from it.
    result.stdout.fnmatch_lines(
        ["kunit: building kernel: make -j* vmlinux (incremental; not link-only: guest.json is not a C *"]
    )
    result.stdout.no_fnmatch_line("*left: *")


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


def test_an_edit_to_the_extracted_packaged_tree_is_built(
    project: pytest.Pytester, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    """The packaged tarball's tree in the cache is a tree like any other: an edit there is built and run, never the
    image of the tree as it was extracted."""
    tarball = tmp_path / "linux-source.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(fake_kernel.tree, arcname="linux-source")
    options = [
        f"--kunit-kernel-src={tarball}" if o.startswith("--kunit-kernel-src") else o for o in fake_kernel.options()
    ]
    first = project.runpytest(*options, "-k", "example_simple_test")
    first.assert_outcomes(passed=1)
    (extracted,) = fake_kernel.cache.glob("src/*/guest.json")
    spec = json.loads(extracted.read_text())
    spec["suites"][0]["cases"][0]["outcome"] = "fail"
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    extracted.write_text(json.dumps(spec))
    edited = project.runpytest(*options, "-k", "example_simple_test")
    edited.stdout.fnmatch_lines(["*kernel builds: 1 *"])
    edited.assert_outcomes(failed=1)
    again = project.runpytest(*options, "-k", "example_simple_test")
    again.stdout.fnmatch_lines(["*kernel builds: 0 *"])
    again.assert_outcomes(failed=1)


def test_configuration_is_completed_again_only_after_a_kconfig_change(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    """An edit to a source leaves the configuration as it is (no syncconfig); an edit to a Kconfig file Kbuild
    lists as read completes the fragment again, and a symbol it no longer allows is reported."""
    run(project, fake_kernel)[0].assert_outcomes(passed=1)
    (make_runs,) = fake_kernel.cache.glob("build/*/make-runs")
    assert make_runs.read_text().split() == ["olddefconfig", "syncconfig", "vmlinux"]
    fake_kernel.set_case("example", "example_simple_test", outcome="fail")
    run(project, fake_kernel)[0].assert_outcomes(failed=1)
    assert make_runs.read_text().split() == ["olddefconfig", "syncconfig", "vmlinux", "vmlinux"]
    kconfig = fake_kernel.tree / "Kconfig"
    kconfig.write_text(
        kconfig.read_text().replace("config KUNIT_EXAMPLE_TEST\n", "config KUNIT_EXAMPLE_TEST\n\tdepends on NET\n")
    )
    result = run(project, fake_kernel)[0]
    assert make_runs.read_text().split() == [
        "olddefconfig",
        "syncconfig",
        "vmlinux",
        "vmlinux",
        "olddefconfig",
        "syncconfig",
    ]
    result.stdout.fnmatch_lines(["*CONFIG_KUNIT_EXAMPLE_TEST*NET*"])
    assert result.ret != 0
