"""A warm run looks only at what the last full make read, by Kbuild's records (kbuild/read_dirs.py): an edit
anywhere the build read makes again; an edit to a file no step of the build read changes nothing, as it changes
nothing Kbuild would make. The fake make writes fixdep's list of each object it compiles, as Kbuild does."""

from __future__ import annotations

import time

import pytest

from .conftest import FakeKernel

SCOPE = ".pytest-kunit-read"


def run(project: pytest.Pytester, kernel: FakeKernel) -> pytest.RunResult:
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    return project.runpytest(*kernel.options("-k", "example_simple_test"))


def walks(kernel: FakeKernel) -> int:
    (record,) = kernel.cache.glob("build/*/walks")
    return record.read_text().count("\n")


def append(kernel: FakeKernel, path: str) -> None:
    with (kernel.tree / path).open("a") as stream:
        stream.write("/* an edit */\n")


@pytest.fixture
def built(project: pytest.Pytester, fake_kernel: FakeKernel) -> FakeKernel:
    """The fake tree with objects (lib/kunit/kunit-example-test.c compiled, including <kunit/test.h>), built once."""
    spec = fake_kernel.spec()
    spec["objects"] = True
    fake_kernel.write_spec(spec)
    run(project, fake_kernel).assert_outcomes(passed=1)
    assert walks(fake_kernel) == 1
    assert list(fake_kernel.cache.glob(f"build/*/{SCOPE}"))
    return fake_kernel


def test_an_edit_where_no_step_of_the_build_read_makes_nothing(project: pytest.Pytester, built: FakeKernel) -> None:
    append(built, "scripts/kconfig/README")  # no Makefile of the build is there, no compile or Kconfig read it
    run(project, built).assert_outcomes(passed=1)
    assert walks(built) == 1


@pytest.mark.parametrize(
    "edited",
    [
        "include/kunit/test.h",  # a header the compile read (fixdep's list)
        "lib/kunit/executor.c",  # a file where Kbuild descended (its Makefile could name it)
        "Kconfig",  # read by Kconfig
    ],
)
def test_an_edit_to_what_the_build_read_makes_again(project: pytest.Pytester, built: FakeKernel, edited: str) -> None:
    append(built, edited)
    run(project, built).assert_outcomes(passed=1)
    assert walks(built) == 2


def test_a_link_only_build_widens_the_look_by_what_its_compile_read(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    # A header in a directory nothing read at the full make; then an edit of the test's C source alone includes it,
    # built link-only (no Kbuild walk, no Makefile read): its compile's record names the header, and the next look
    # sees an edit of it. Anywhere else nothing read still makes nothing.
    (fake_kernel.tree / "include/fresh").mkdir()
    (fake_kernel.tree / "include/fresh/fresh.h").write_text("#define FRESH 1\n")
    spec = fake_kernel.spec()
    spec["objects"] = True
    fake_kernel.write_spec(spec)
    run(project, fake_kernel).assert_outcomes(passed=1)
    source = fake_kernel.tree / "lib/kunit/kunit-example-test.c"
    source.write_text("#include <fresh/fresh.h>\n" + source.read_text())
    result = run(project, fake_kernel)
    result.assert_outcomes(passed=1)
    assert walks(fake_kernel) == 1, result.stdout.str()  # link-only
    append(fake_kernel, "scripts/kconfig/README")
    run(project, fake_kernel).assert_outcomes(passed=1)
    assert walks(fake_kernel) == 1
    append(fake_kernel, "include/fresh/fresh.h")
    run(project, fake_kernel).assert_outcomes(passed=1)
    assert walks(fake_kernel) == 2
