"""--kunit-share-kernels on the fake tree: one build for a run's fragments, each running its own suites alone.

Which suites a fragment's own kernel would hold is Kbuild's business (membership.py, tested on its own and on real
builds); here a conftest stands in for it with the fake tree's rule (a suite with a "config" is built only when
that symbol is y), so what is tested is the session around it: the union, the boots, the fall-backs."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import FakeKernel, no_traceback
from .test_remote import remote_options

# The fake Kbuild's rule, as membership.suites_alone would read it from the union's objects.
FAKE_MEMBERSHIP = """
import json
import os

import pytest_kunit.kbuild.membership as membership


def suites_alone(tree, build_dir, union, alone, scratch):
    if os.environ.get("FAKE_MEMBERSHIP_UNKNOWN"):
        raise membership.Unknown("lib/kunit/Makefile: the fake says it cannot tell")
    spec = json.loads((tree / "guest.json").read_text())
    return {s["name"] for s in spec["suites"] if "config" not in s or alone.get("CONFIG_" + s["config"]) == "y"}


def suite_objects(build_dir):
    image = (build_dir / "vmlinux").read_bytes()  # the fake image: the guest spec in an ELF file, up to its sections
    spec = json.loads(image[64 : int.from_bytes(image[40:48], "little")])
    return [membership.SuiteObject(f"lib/{s['name']}.o", (s["name"],)) for s in spec.get("suites", [])]


ORIGINALS = (membership.suites_alone, membership.suite_objects)


def pytest_configure(config):
    membership.suites_alone, membership.suite_objects = suites_alone, suite_objects


def pytest_unconfigure(config):  # in-process runs share the test process's module: put it back
    membership.suites_alone, membership.suite_objects = ORIGINALS
"""
# Each fragment runs the fake tree's own suites (3 passed, 2 failed, 1 skipped), a its a_case, b its b_case and b_fails.
AUTO_CONF = "include/config/auto.conf"
A_AND_B = {"passed": 3 * 2 + 1 + 1, "failed": 2 * 2 + 1, "skipped": 2}
SYMBOLS = "".join(f'\nconfig {name}\n\tbool "{name}"\n\tdepends on KUNIT\n' for name in ("SHARE_A", "SHARE_B"))


def add_suites_a_and_b(fake_kernel: FakeKernel) -> None:
    """suite_a, built with CONFIG_SHARE_A, and suite_b (one case failing), with CONFIG_SHARE_B, in the fake tree."""
    with (fake_kernel.tree / "Kconfig").open("a") as stream:
        stream.write(SYMBOLS)
    spec = fake_kernel.spec()
    spec["suites"] += [
        {"name": "suite_a", "config": "SHARE_A", "cases": [{"name": "a_case"}]},
        {"name": "suite_b", "config": "SHARE_B", "cases": [{"name": "b_case"}, {"name": "b_fails", "outcome": "fail"}]},
    ]
    fake_kernel.write_spec(spec)


@pytest.fixture
def two_fragments(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> FakeKernel:
    """Fragments a and b: each enables one suite of its own; the example suite is in both."""
    add_suites_a_and_b(fake_kernel)
    pytester.makefile(".kunitconfig", a="CONFIG_KUNIT=y\nCONFIG_SHARE_A=y\n", b="CONFIG_KUNIT=y\nCONFIG_SHARE_B=y\n")
    pytester.makeconftest(FAKE_MEMBERSHIP)
    return fake_kernel


def builds(fake_kernel: FakeKernel) -> list[str]:
    return sorted(path.parent.name for path in (fake_kernel.cache / "build").glob("*/vmlinux"))


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    return {
        report.nodeid: report.outcome
        for report in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
        if report.when == "call"
    }


def test_fragments_of_one_tree_build_one_kernel_and_each_runs_only_its_own_suites(
    pytester: pytest.Pytester, two_fragments: FakeKernel
) -> None:
    result = pytester.runpytest_inprocess(*two_fragments.options("--kunit-share-kernels", "-v"))
    result.assert_outcomes(**A_AND_B)
    assert len(builds(two_fragments)) == 1
    result.stdout.fnmatch_lines(["*a.kunitconfig runs in the kernel shared by a.kunitconfig+b.kunitconfig*"])
    suites = {nodeid.split("::")[0] + "::" + nodeid.split("::")[1] for nodeid in outcomes(result)}
    assert {suite for suite in suites if "suite_" in suite} == {"a.kunitconfig::suite_a", "b.kunitconfig::suite_b"}
    # Every boot names what it runs: a boot of a's never runs b's suite, though the image holds it.
    filters = two_fragments.filters()
    assert len(filters) == 2 and all(glob is not None for glob in filters), filters
    assert {("suite_a" in glob, "suite_b" in glob) for glob in filters if glob} == {(True, False), (False, True)}


def test_verdicts_are_those_of_each_fragment_built_alone(pytester: pytest.Pytester, two_fragments: FakeKernel) -> None:
    alone = pytester.runpytest_inprocess(*two_fragments.options("-v"))
    assert len(builds(two_fragments)) == 2
    shared = pytester.runpytest_inprocess(*two_fragments.options("--kunit-share-kernels", "-v"))
    assert len(builds(two_fragments)) == 3
    assert outcomes(shared) == outcomes(alone) and outcomes(alone)


def test_a_fragment_that_sets_a_symbol_otherwise_builds_alone(
    pytester: pytest.Pytester, two_fragments: FakeKernel
) -> None:
    pytester.makefile(".kunitconfig", c="CONFIG_KUNIT=y\n# CONFIG_SHARE_A is not set\n")
    # Reuse off: the union would otherwise serve c after all, as reuse.py proves it may (test_reuse.py).
    result = pytester.runpytest_inprocess(*two_fragments.options("--kunit-share-kernels", "--kunit-reuse-kernels=no"))
    result.assert_outcomes(passed=3 * 3 + 1 + 1, failed=3 * 2 + 1, skipped=3)
    assert len(builds(two_fragments)) == 2  # a + b shared, c alone


def test_a_fragment_whose_suites_cannot_be_told_builds_alone_and_says_why(
    pytester: pytest.Pytester, two_fragments: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MEMBERSHIP_UNKNOWN", "1")
    result = pytester.runpytest_inprocess(*two_fragments.options("--kunit-share-kernels"))
    result.assert_outcomes(**A_AND_B)
    assert len(builds(two_fragments)) == 3  # the union, then each alone
    result.stdout.fnmatch_lines(
        ["*a.kunitconfig builds alone, not in the kernel shared by *the fake says it cannot tell*"]
    )
    no_traceback(result)


def run_with_an_unconfigurable_member(pytester: pytest.Pytester, two_fragments: FakeKernel) -> pytest.RunResult:
    """a, b and c, which asks for a symbol the fake tree lacks (as 6.12's drivers/gpu/drm/vc4 asks UML for ARCH_BCM):
    a and b run, c is a collection error."""
    pytester.makefile(".kunitconfig", c="CONFIG_KUNIT=y\nCONFIG_NO_SUCH_OPTION=y\n")
    options = ("--kunit-share-kernels", "--continue-on-collection-errors")
    result = pytester.runpytest_inprocess(*two_fragments.options(*options))
    result.assert_outcomes(**A_AND_B, errors=1)
    return result


def test_a_fragment_this_architecture_cannot_configure_is_refused_and_the_others_still_share(
    pytester: pytest.Pytester, two_fragments: FakeKernel
) -> None:
    result = run_with_an_unconfigurable_member(pytester, two_fragments)
    assert len(builds(two_fragments)) == 1
    result.stdout.fnmatch_lines(
        [
            "*a.kunitconfig runs in the kernel shared by a.kunitconfig+b.kunitconfig*",
            "*ERROR collecting c.kunitconfig*",
            "*The kernel configuration does not hold what the kunitconfig asks for*",
        ]
    )
    no_traceback(result)


def test_a_refused_member_stays_refused_when_a_make_run_there_completed_its_configuration_unchecked(
    pytester: pytest.Pytester, two_fragments: FakeKernel
) -> None:
    # The top Makefile run in a configuration directory without include/config/auto.conf writes one (syncconfig);
    # completed_config once trusted any directory that had one.
    run_with_an_unconfigurable_member(pytester, two_fragments)
    unfinished = [path for path in (two_fragments.cache / "configs").iterdir() if not (path / AUTO_CONF).exists()]
    assert unfinished
    for directory in unfinished:
        (directory / AUTO_CONF).write_text("CONFIG_KUNIT=y\n")
    result = run_with_an_unconfigurable_member(pytester, two_fragments)
    result.stdout.fnmatch_lines(["*ERROR collecting c.kunitconfig*", "*CONFIG_NO_SUCH_OPTION=y*"])
    assert len(builds(two_fragments)) == 1


def test_members_whose_lines_exclude_one_another_share_what_kconfig_keeps(
    pytester: pytest.Pytester, two_fragments: FakeKernel
) -> None:
    # As 6.12's in-tree fragments on UML: drivers/clk turns PCI off, which DRM's fragments need there. The union
    # keeps what d needs (c's line turning it off yields), and c, asking for less, is read from it.
    with (two_fragments.tree / "Kconfig").open("a") as stream:
        stream.write('\nconfig SHARE_D\n\tbool "SHARE_D"\n\tdepends on KUNIT && FAKE_SYSFS\n')
    spec = two_fragments.spec()
    spec["suites"].append({"name": "suite_d", "config": "SHARE_D", "cases": [{"name": "d_case"}]})
    two_fragments.write_spec(spec)
    pytester.makefile(
        ".kunitconfig",
        c="CONFIG_KUNIT=y\n# CONFIG_FAKE_SYSFS is not set\n",
        d="CONFIG_KUNIT=y\nCONFIG_SHARE_D=y\n",
    )
    result = pytester.runpytest_inprocess(*two_fragments.options("--kunit-share-kernels"))
    # c and d each hold the example suite (3 passed, 2 failed, 1 skipped), d its own passing case too.
    result.assert_outcomes(
        passed=A_AND_B["passed"] + 3 + 4, failed=A_AND_B["failed"] + 2 + 2, skipped=A_AND_B["skipped"] + 1 + 1
    )
    assert len(builds(two_fragments)) == 1
    shared = "the kernel shared by a.kunitconfig+b.kunitconfig+c.kunitconfig+d.kunitconfig"
    result.stdout.fnmatch_lines([f"*c.kunitconfig runs in {shared}: 2 suites*", f"*d.kunitconfig runs in {shared}: 3*"])
    no_traceback(result)


def test_a_fragment_whose_debugging_would_change_every_other_kernel_builds_apart_and_the_others_share(
    pytester: pytest.Pytester, two_fragments: FakeKernel
) -> None:
    # As 6.12's in-tree fragments: drivers/gpu/drm/xe turns on LOCKDEP, which turns off the spinlock inlining
    # (INLINE_*, on by default) every other fragment's kernel has: a union of all could stand for none of the others.
    with (two_fragments.tree / "Kconfig").open("a") as stream:
        stream.write('\nconfig SHARE_LOCKDEP\n\tbool "SHARE_LOCKDEP"\n\tdepends on KUNIT\n')
        stream.write('\nconfig SHARE_INLINE\n\tbool "SHARE_INLINE"\n\tdefault y\n\tdepends on !SHARE_LOCKDEP\n')
    pytester.makefile(".kunitconfig", e="CONFIG_KUNIT=y\nCONFIG_SHARE_LOCKDEP=y\n")
    result = pytester.runpytest_inprocess(*two_fragments.options("--kunit-share-kernels"))
    # e holds the example suite (3 passed, 2 failed, 1 skipped).
    result.assert_outcomes(passed=A_AND_B["passed"] + 3, failed=A_AND_B["failed"] + 2, skipped=A_AND_B["skipped"] + 1)
    assert len(builds(two_fragments)) == 2  # a and b's kernel, e's alone: no union that stands for nobody
    result.stdout.fnmatch_lines(
        [
            "*e.kunitconfig does not join the kernel of a.kunitconfig+b.kunitconfig: for a.kunitconfig, the union "
            "kernel cannot stand for this configuration: CONFIG_SHARE_INLINE=y (union: not set)*",
            "*a.kunitconfig runs in the kernel shared by a.kunitconfig+b.kunitconfig: *",
        ]
    )
    no_traceback(result)


def test_one_fragment_alone_on_the_command_line_is_not_shared(
    pytester: pytest.Pytester, two_fragments: FakeKernel
) -> None:
    result = pytester.runpytest_inprocess(*two_fragments.options("--kunit-share-kernels", "a.kunitconfig"))
    result.assert_outcomes(passed=3 + 1, failed=2, skipped=1)
    assert len(builds(two_fragments)) == 1
    assert "runs in the kernel shared" not in result.stdout.str()


def test_xdist_workers_share_the_one_build(pytester: pytest.Pytester, two_fragments: FakeKernel) -> None:
    result = pytester.runpytest_subprocess(*two_fragments.options("--kunit-share-kernels", "-n", "2"))
    result.assert_outcomes(**A_AND_B)
    assert len(builds(two_fragments)) == 1


def test_workers_on_other_hosts_get_each_fragment_s_suites_from_the_controller(
    pytester: pytest.Pytester, two_fragments: FakeKernel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller, workers = tmp_path / "controller", tmp_path / "workers"
    monkeypatch.setenv("XDG_CACHE_HOME", str(controller))
    result = pytester.runpytest_subprocess(*remote_options(two_fragments, workers, "--kunit-share-kernels"))
    result.assert_outcomes(**A_AND_B)  # b's suite never collected for a, nor a's for b, on the workers too
    result.stdout.fnmatch_lines(["kernel builds: 1 (*"])
    assert len(list((controller / "pytest-kunit" / "build").glob("*/vmlinux"))) == 1
