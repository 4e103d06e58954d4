"""--kunit-reuse-kernels (on by default) on the fake tree: a fragment never built runs in a kernel built before that
provably covers it, with only its own suites; otherwise it builds its own.

As in test_share_kernels.py, a conftest stands in for membership.py with the fake tree's rule, here with fixdep's
part too: a suite's "tests" lists the symbols its sources test, and a kernel that sets one of them otherwise than the
fragment's own does not serve it."""

from __future__ import annotations

import shutil
import tarfile

import pytest

from pytest_kunit.host.cachelayout import CONFIGS, CacheLayout

from .conftest import FAKE, FakeKernel, no_traceback
from .test_share_kernels import add_suites_a_and_b, builds, outcomes

FAKE_MEMBERSHIP = """
import json

import pytest_kunit.kbuild.membership as membership


def suites_alone(tree, build_dir, union, alone, scratch):
    with open(__file__ + ".calls", "a") as calls:  # how often the reading was made
        calls.write(f"{build_dir}\\n")
    spec = json.loads((tree / "guest.json").read_text())
    for placed in sorted(tree.glob("pytest-kunit/*/fake-suite.json")):  # out-of-tree suites, as fake_make.py links them
        extra = json.loads(placed.read_text())
        spec["suites"] += [dict(suite, config=extra["config"]) for suite in extra["suites"]]
    differing = membership.differing(union, alone)
    mine = [s for s in spec["suites"] if "config" not in s or alone.get("CONFIG_" + s["config"]) == "y"]
    for suite in mine:
        tested = {"CONFIG_" + name for name in suite.get("tests", ())} & differing
        if tested:
            raise membership.Unknown(f"lib/{suite['name']}.o tests {', '.join(sorted(tested))}")
    return {s["name"] for s in mine}


def suite_objects(build_dir):
    image = (build_dir / "vmlinux").read_bytes()  # the fake image: the guest spec in an ELF file, up to its sections
    spec = json.loads(image[64 : int.from_bytes(image[40:48], "little")])
    return [membership.SuiteObject(f"lib/{s['name']}.o", (s["name"],)) for s in spec.get("suites", [])]


ORIGINALS = (membership.suites_alone, membership.suite_objects)


def pytest_configure(config):
    membership.suites_alone, membership.suite_objects = suites_alone, suite_objects


def pytest_unconfigure(config):
    membership.suites_alone, membership.suite_objects = ORIGINALS
"""


@pytest.fixture
def fragments(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> FakeKernel:
    """a and b each enable a suite of their own; ab enables both (a kernel that covers each)."""
    add_suites_a_and_b(fake_kernel)
    pytester.makefile(
        ".kunitconfig",
        a="CONFIG_KUNIT=y\nCONFIG_SHARE_A=y\n",
        b="CONFIG_KUNIT=y\nCONFIG_SHARE_B=y\n",
        ab="CONFIG_KUNIT=y\nCONFIG_SHARE_A=y\nCONFIG_SHARE_B=y\n",
    )
    pytester.makeconftest(FAKE_MEMBERSHIP)
    return fake_kernel


def test_a_fragment_never_built_runs_in_a_kernel_that_covers_it(
    pytester: pytest.Pytester, fragments: FakeKernel
) -> None:
    covering = pytester.runpytest_inprocess(*fragments.options("-v", "ab.kunitconfig"))
    assert len(builds(fragments)) == 1
    served = pytester.runpytest_inprocess(*fragments.options("-v", "a.kunitconfig"))
    assert len(builds(fragments)) == 1, served.stdout.str()
    served.stdout.fnmatch_lines(["*a.kunitconfig runs in the kernel built for ab.kunitconfig (*): 3 suites of its own"])
    assert "kernel builds: 0 " in served.stdout.str()
    # Its own cases only (not suite_b's), with the verdicts the covering kernel gave them.
    mine = {node.replace("a.kunitconfig", "ab.kunitconfig"): outcome for node, outcome in outcomes(served).items()}
    theirs = outcomes(covering)
    assert mine and mine == {node: theirs[node] for node in mine}
    assert not any("suite_b" in node for node in mine) and any("suite_a" in node for node in mine)
    assert all(
        "suite_b" not in (boot["params"].get("kunit.filter_glob") or "suite_b") for boot in fragments.test_boots()[-1:]
    )


def test_with_no_build_before_no_configuration_is_completed_alone(
    pytester: pytest.Pytester, fragments: FakeKernel
) -> None:
    """The first build in a cache has nothing to reuse: it configures its own build directory, and no other (the
    configuration alone is what an earlier kernel would be compared with)."""
    pytester.runpytest_inprocess(*fragments.options("a.kunitconfig"))
    assert len(builds(fragments)) == 1
    assert not list(CacheLayout(fragments.cache).area(CONFIGS).glob("*/.config"))


def test_its_verdicts_are_those_of_its_own_kernel(pytester: pytest.Pytester, fragments: FakeKernel) -> None:
    pytester.runpytest_inprocess(*fragments.options("ab.kunitconfig"))
    served = outcomes(pytester.runpytest_inprocess(*fragments.options("-v", "a.kunitconfig")))
    own = outcomes(pytester.runpytest_inprocess(*fragments.options("-v", "--kunit-reuse-kernels=no", "a.kunitconfig")))
    assert len(builds(fragments)) == 2  # with reuse off, a built its own
    assert served == own and own


def test_a_kernel_whose_suites_test_a_symbol_set_otherwise_does_not_serve(
    pytester: pytest.Pytester, fragments: FakeKernel
) -> None:
    """suite_a's sources test SHARE_B (say, a header's #ifndef): in ab's kernel it is not the suite a's kernel runs."""
    spec = fragments.spec()
    spec["suites"][-2]["tests"] = ["SHARE_B"]
    fragments.write_spec(spec)
    pytester.runpytest_inprocess(*fragments.options("ab.kunitconfig"))
    result = pytester.runpytest_inprocess(*fragments.options("a.kunitconfig"))
    result.stdout.fnmatch_lines(["*a.kunitconfig does not run in the kernel in *: lib/suite_a.o tests CONFIG_SHARE_B"])
    assert len(builds(fragments)) == 2
    result.assert_outcomes(passed=3 + 1, failed=2, skipped=1)


def test_a_kernel_lacking_a_setting_of_the_fragment_does_not_serve(
    pytester: pytest.Pytester, fragments: FakeKernel
) -> None:
    pytester.runpytest_inprocess(*fragments.options("a.kunitconfig"))
    result = pytester.runpytest_inprocess(*fragments.options("b.kunitconfig"))
    assert len(builds(fragments)) == 2
    assert "runs in the kernel built for" not in result.stdout.str()


def test_a_kernel_that_must_be_built_starts_from_a_copy_of_the_nearest_and_is_configured_as_its_own(
    pytester: pytest.Pytester, fragments: FakeKernel
) -> None:
    pytester.runpytest_inprocess(*fragments.options("a.kunitconfig"))
    result = pytester.runpytest_inprocess(*fragments.options("-v", "b.kunitconfig"))
    result.stdout.fnmatch_lines(["*seeded * from * (2 symbols set otherwise): make compiles what they change*"])
    # b's own cases and verdicts: the example suite, suite_b's b_case and b_fails; nothing of a's.
    result.assert_outcomes(passed=3 + 1, failed=2 + 1, skipped=1)
    assert not any("suite_a" in node for node in outcomes(result))
    configs = {path.parent.name: path.read_text() for path in (fragments.cache / "build").glob("*/.config")}
    assert sorted(("CONFIG_SHARE_A=y" in text, "CONFIG_SHARE_B=y" in text) for text in configs.values()) == [
        (False, True),
        (True, False),
    ]
    assert not list((fragments.cache / "build").glob("*/.pytest-kunit-modules.json"))


@pytest.mark.parametrize("source", ["flag", "ini"])
def test_reuse_can_be_turned_off(pytester: pytest.Pytester, fragments: FakeKernel, source: str) -> None:
    pytester.runpytest_inprocess(*fragments.options("ab.kunitconfig"))
    if source == "ini":
        pytester.makeini("[pytest]\nkunit_reuse_kernels = no\n")
        extra: tuple[str, ...] = ()
    else:
        extra = ("--kunit-reuse-kernels=no",)
    result = pytester.runpytest_inprocess(*fragments.options(*extra, "a.kunitconfig"))
    assert len(builds(fragments)) == 2
    assert "seeded" not in result.stdout.str()  # and a kernel that must be built starts from an empty directory


def test_a_bad_value_is_a_usage_error(pytester: pytest.Pytester, fragments: FakeKernel) -> None:
    result = pytester.runpytest_inprocess(*fragments.options("--kunit-reuse-kernels=maybe", "a.kunitconfig"))
    result.stderr.fnmatch_lines(["*--kunit-reuse-kernels: 'maybe' is not yes or no*"])
    no_traceback(result)


def test_out_of_tree_suites_share_a_kernel_and_serve_alone(pytester: pytest.Pytester, fragments: FakeKernel) -> None:
    """An out-of-tree suite joins a shared kernel with in-tree fragments (its folder placed into the tree), and the
    kernel serves it alone afterwards; a changed suite folder is not served by a kernel built from the old one."""
    tarball = pytester.path / "linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:  # a tarball: one extracted tree for both (a directory would be
        archive.add(fragments.tree, arcname="linux-fake")  # built in place, and copied for out-of-tree suites)
    shutil.copytree(FAKE / "outoftree/mysuite", pytester.path / "mysuite")

    def options(*extra: str) -> list[str]:
        return [*fragments.options(*extra), f"--kunit-kernel-src={tarball}"]

    shared = pytester.runpytest_inprocess(
        *options("--kunit-share-kernels", "-v", "a.kunitconfig", "mysuite/mysuite.kunitconfig")
    )
    assert len(builds(fragments)) == 1, shared.stdout.str()
    shared.stdout.fnmatch_lines(
        ["*mysuite.kunitconfig runs in the kernel shared by a.kunitconfig+mysuite/mysuite.kunitconfig*"]
    )
    alone = pytester.runpytest_inprocess(*options("-v", "mysuite/mysuite.kunitconfig"))
    assert len(builds(fragments)) == 1
    assert outcomes(alone) == {node: outcome for node, outcome in outcomes(shared).items() if "mysuite" in node}
    (pytester.path / "mysuite/Kconfig").write_text((pytester.path / "mysuite/Kconfig").read_text() + "\n")
    pytester.runpytest_inprocess(*options("mysuite/mysuite.kunitconfig"))
    assert len(builds(fragments)) == 2


def test_a_suite_placed_for_another_kernel_leaves_this_one_built(
    pytester: pytest.Pytester, fragments: FakeKernel
) -> None:
    """Two out-of-tree suites' kernels of one extracted tree: placing the second suite's folder (a new directory in
    the tree's overlay, its Kconfig and Makefile listing it) is no edit of the first kernel, whose next run makes
    nothing."""
    tarball = pytester.path / "linux.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(fragments.tree, arcname="linux-fake")
    shutil.copytree(FAKE / "outoftree/mysuite", pytester.path / "mysuite")
    other = pytester.path / "othersuite"
    shutil.copytree(FAKE / "outoftree/mysuite", other)
    for name in ("Kconfig", "Makefile", "fake-suite.json", "mysuite.kunitconfig"):
        text = (other / name).read_text().replace("MY_SUITE", "OTHER_SUITE").replace("my-suite", "other-suite")
        (other / name).write_text(text)
    (other / "mysuite.kunitconfig").rename(other / "othersuite.kunitconfig")

    def run(fragment: str) -> str:
        options = [*fragments.options(fragment), f"--kunit-kernel-src={tarball}"]
        return str(pytester.runpytest_inprocess(*options).stdout.str())

    assert "kernel builds: 1 " in run("mysuite/mysuite.kunitconfig")
    assert "kernel builds: 1 " in run("othersuite/othersuite.kunitconfig")
    again = run("mysuite/mysuite.kunitconfig")
    assert "kernel builds: 0 " in again, again


def readings(pytester: pytest.Pytester) -> int:
    calls = pytester.path / "conftest.py.calls"
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def test_a_kernel_found_serving_a_fragment_is_not_read_again_while_its_image_stays(
    pytester: pytest.Pytester, fragments: FakeKernel
) -> None:
    pytester.runpytest_inprocess(*fragments.options("ab.kunitconfig"))
    first = pytester.runpytest_inprocess(*fragments.options("a.kunitconfig"))
    first.stdout.fnmatch_lines(["*a.kunitconfig runs in the kernel built for ab.kunitconfig (*): 3 suites of its own"])
    read = readings(pytester)
    assert read >= 1
    # The answer kept for this image and configuration serves the next run: membership's reading of the build (a
    # second of Kbuild's records on a real tree) is not made again.
    again = pytester.runpytest_inprocess(*fragments.options("a.kunitconfig"))
    again.stdout.fnmatch_lines(["*a.kunitconfig runs in the kernel built for ab.kunitconfig (*): 3 suites of its own"])
    assert readings(pytester) == read
