"""The real tier on a tree pytest-kunit was not built around: Debian's linux-source-6.12, unpatched, with the
tree's own fragments given by path from inside the tree, as a kernel developer types them: lib/kunit/.kunitconfig in
the kernel it shares with three more of them (conftest.KERNELS["6.12"]), and those four in one run."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from .conftest import CACHE_6_12, IN_TREE_6_12, KERNELS, TREE_6_12, Kunit, Run

pytestmark = [pytest.mark.real("6.12"), pytest.mark.xdist_group("6.12")]

DATA = Path(__file__).resolve().parents[1] / "data"
IN_CACHE = f"--kunit-cache-dir={CACHE_6_12}"  # where the shared kernel is (conftest.KERNELS["6.12"])
OUTCOMES = {"PASS": "passed", "SKIP": "skipped", "FAIL": "failure"}


@pytest.fixture
def tree_6_12(kunit: Kunit) -> Path:
    """The tarball extracted once, where a developer keeps a tree (outside this project: the tier's own place), and
    the kernel lib/kunit shares with three more in-tree fragments built (conftest.KERNELS["6.12"])."""
    kunit.kernel("6.12")
    return TREE_6_12


def test_lib_kunit_in_a_shared_kernel_gives_kunit_py_s_verdicts_from_its_own(tree_6_12: Path, kunit: Kunit) -> None:
    """The verdict-by-verdict proof that sharing a kernel changes nothing: lib/kunit alone, as a developer types it
    after a shared run, is served by the shared kernel (reuse), and each of its cases ends as it did under kunit.py,
    which built lib/kunit's own kernel (tests/data: recorded on the same tree, fragment and architecture)."""
    run = kunit.run(IN_CACHE, "lib/kunit/", cwd=tree_6_12)
    assert "(the tree the fragment lies in), no patches" in run.stdout, run.report()
    served = re.search(r"runs in the kernel built for (\S+) \(", run.stdout)
    assert served and "drivers/input/tests" in served[1], run.report()
    assert "kernel builds: 0 " in run.stdout, run.report()
    assert run.outcomes == kunit_py_verdicts("lib/kunit"), run.report()
    # lib/kunit's suites only: 6.12's filter takes one glob, so a boot for each suite, none for the input core's.
    boots = re.findall(r"^boot \d+: kunit\.filter_glob=(\S+)$", run.stdout, re.MULTILINE)
    assert boots and not any("input" in glob for glob in boots), run.report()


def kunit_py_verdicts(fragment: str) -> dict[str, str]:
    """kunit.py's verdicts for an in-tree fragment, recorded from its own kernel (tests/data), as JUnit outcomes."""
    recorded = DATA / f"kunitpy-6.12-{fragment.replace('/', '-')}.json"
    return {case: OUTCOMES[status] for case, status in json.loads(recorded.read_text())["cases"].items()}


def test_in_tree_fragments_sharing_one_kernel_each_give_kunit_py_s_verdicts_from_its_own(
    tree_6_12: Path, kunit: Kunit
) -> None:
    """Four of 6.12's own fragments in one run, as the tier built their one kernel: nothing is built, each runs in the
    shared kernel its own suites, and every case ends as it did under kunit.py, which built each fragment's own kernel
    (tests/data: recorded on the same tree and architecture). The 21-fragment form: bench/in_tree_fragments.py."""
    run = kunit.run(*KERNELS["6.12"].args, cwd=tree_6_12)
    assert "kernel builds: 0 " in run.stdout, run.report()
    shared = re.findall(r"^kunit: (\S+)/\.kunitconfig runs in the kernel shared by ", run.stdout, re.MULTILINE)
    assert sorted(shared) == sorted(IN_TREE_6_12), run.report()
    expected: dict[str, str] = {}
    for fragment in IN_TREE_6_12:
        expected |= kunit_py_verdicts(fragment)
    assert run.outcomes == expected, run.report()


def test_the_edit_build_test_loop_lists_again_only_when_names_change(tree_6_12: Path, kunit: Kunit) -> None:
    """Appending a comment to a test source compiles that object alone, finds it as vmlinux holds it and links
    nothing, and boots once; an edit that makes the case fail is built link-only (the object compiled, vmlinux
    linked, no tree walk; the case list read from the objects' suite tables) and seen failing, and putting it back
    passes again; renaming the suite lists again. Five incremental builds of
    the tree the test above built (and one more in the next run, for the source put back)."""
    source = tree_6_12 / "lib/kunit/kunit-example-test.c"
    original = source.read_text()
    link_only = "link-only: 1 object recompiled"

    def run_example_simple_test(tree: Path) -> Run:
        return kunit.run(IN_CACHE, "lib/kunit/", "-k", "example_simple_test", cwd=tree)

    try:
        # A first edit, so these suite tables' list is known whatever ran (and whichever version listed) before.
        source.write_text(original + "// pytest-kunit real tier: an edit\n")
        run_example_simple_test(tree_6_12)
        source.write_text(original + "// pytest-kunit real tier: an edit\n// and another\n")
        edited = run_example_simple_test(tree_6_12)
        report = edited.report()
        assert "kernel builds: 1 " in edited.stdout and "guest boots: 1 " in edited.stdout, report
        assert f"{link_only}, as vmlinux holds it: no link" in edited.stdout and "PASSED" in edited.stdout, report
        # The link-only image is the edited one: a failing expectation fails, and passes once put back.
        failing = original.replace("KUNIT_EXPECT_EQ(test, 1 + 1, 2);", "KUNIT_EXPECT_EQ(test, 1 + 1, 3);", 1)
        assert failing != original
        source.write_text(failing)
        failed = run_example_simple_test(tree_6_12)
        report = failed.report()
        assert link_only in failed.stdout and "no link" not in failed.stdout, report
        assert "the case list of" in failed.stdout and "example_simple_test FAILED" in failed.stdout, report
        assert "Expected 1 + 1 == 3, but" in failed.stdout, report
        source.write_text(original + "// pytest-kunit real tier: an edit\n")
        restored = run_example_simple_test(tree_6_12)
        report = restored.report()
        assert link_only in restored.stdout and "example_simple_test PASSED" in restored.stdout, report
        # A name no earlier run built: lists are kept by suite tables, so a name seen before is rightly not listed.
        suite = f"example_{os.getpid()}_{time.time_ns() % 10**6}"
        source.write_text(original.replace('.name = "example",', f'.name = "{suite}",', 1))
        renamed = run_example_simple_test(tree_6_12)
        report = renamed.report()
        assert "kernel builds: 1 " in renamed.stdout and "guest boots: 2 " in renamed.stdout, report
        assert f"{suite}::example_simple_test PASSED" in renamed.stdout and link_only in renamed.stdout, report
    finally:
        source.write_text(original)
