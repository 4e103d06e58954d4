"""The link-only build: after an edit to C sources of vmlinux alone, their objects are compiled and vmlinux linked
again without Kbuild's walk of the tree; any other change, or anything the build cannot vouch for, gets the full
make. The fake tree's walk, single-object compile and link are separate, and an edit's outcome reaches the guest only
through the recompiled object, so each verdict shows which image ran."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from .conftest import KUNITCONFIG, FakeKernel

EXAMPLE = "lib/kunit/kunit-example-test.c"


def run(project: pytest.Pytester, kernel: FakeKernel) -> pytest.RunResult:
    time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
    return project.runpytest(*kernel.options("-rA", "-k", "example_simple_test"))


def make_runs(kernel: FakeKernel) -> list[str]:
    (runs,) = kernel.cache.glob("build/*/make-runs")
    return runs.read_text().split()


def walks(kernel: FakeKernel) -> int:
    (record,) = kernel.cache.glob("build/*/walks")
    return record.read_text().count("\n")


def fail_example(kernel: FakeKernel) -> None:
    """An edit to the test's C source that makes the case fail, once compiled."""
    source = kernel.tree / EXAMPLE
    source.write_text(source.read_text() + "// fake-outcome: example_simple_test fail\n")


@pytest.fixture
def built(project: pytest.Pytester, fake_kernel: FakeKernel) -> FakeKernel:
    """The fake tree with objects, a header among its files, built twice with the full make: the second build, with
    objects to read, records their source directories' entries, which a directory's change is compared with."""
    spec = fake_kernel.spec()
    spec["objects"] = True
    fake_kernel.write_spec(spec)
    (fake_kernel.tree / "lib/kunit/fake-example.h").write_text("#define FAKE 1\n")
    run(project, fake_kernel).assert_outcomes(passed=1)
    with (fake_kernel.tree / "Kbuild").open("a") as kbuild:
        kbuild.write("# an edit\n")
    run(project, fake_kernel).assert_outcomes(passed=1)
    assert walks(fake_kernel) == 2
    return fake_kernel


def test_an_edit_to_a_source_of_vmlinux_is_compiled_and_linked_alone(
    project: pytest.Pytester, built: FakeKernel
) -> None:
    original = (built.tree / EXAMPLE).read_text()
    fail_example(built)
    result = run(project, built)
    result.assert_outcomes(failed=1)  # the new object was compiled and linked in: its outcome is the console's
    result.stdout.fnmatch_lines(
        [
            f"kunit: building kernel: link-only: make {EXAMPLE[:-2]}.o, then the vmlinux link (no tree walk)*",
            "kunit: built kunit.kunitconfig in * (log: *; link-only: 1 object recompiled*",
        ]
    )
    assert make_runs(built)[-2:] == [f"{EXAMPLE[:-2]}.o", "vmlinux"]
    assert walks(built) == 2
    (built.tree / EXAMPLE).write_text(original)
    run(project, built).assert_outcomes(passed=1)
    assert walks(built) == 2
    again = run(project, built)
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*kernel builds: 0 *"])


def edit_header(kernel: FakeKernel) -> None:
    (kernel.tree / "lib/kunit/fake-example.h").write_text("#define FAKE 2\n")


def edit_kconfig(kernel: FakeKernel) -> None:
    kconfig = kernel.tree / "Kconfig"
    kconfig.write_text(kconfig.read_text() + "# an edit\n")


def add_file(kernel: FakeKernel) -> None:
    (kernel.tree / "lib/kunit/added.c").write_text("")


def remove_file(kernel: FakeKernel) -> None:
    (kernel.tree / "lib/kunit/fake-example.h").unlink()


def edit_unlinked_source(kernel: FakeKernel) -> None:
    executor = kernel.tree / "lib/kunit/executor.c"  # compiled into no object of its own in the fake tree
    executor.write_text(executor.read_text() + "/* an edit */\n")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (edit_header, "lib/kunit/fake-example.h is not a C or assembler source"),
        (edit_kconfig, "the configuration was completed again"),
        (add_file, "lib/kunit/added.c is not compiled straight into vmlinux"),
        (remove_file, "lib/kunit/fake-example.h was removed or renamed"),
        (edit_unlinked_source, "lib/kunit/executor.c is not compiled straight into vmlinux"),
    ],
)
def test_any_other_change_beside_the_edit_gets_the_full_make(
    project: pytest.Pytester, built: FakeKernel, change: Callable[[FakeKernel], None], reason: str
) -> None:
    fail_example(built)
    change(built)
    result = run(project, built)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"kunit: building kernel: make -j* vmlinux (incremental; not link-only: {reason})*"])
    result.stdout.no_fnmatch_line("*link-only: 1 object*")
    assert make_runs(built)[-1] == "vmlinux" and f"{EXAMPLE[:-2]}.o" not in make_runs(built)
    assert walks(built) == 3


def test_an_editor_that_saves_by_renaming_keeps_the_link_only_build(
    project: pytest.Pytester, built: FakeKernel
) -> None:
    """vim and emacs write a new file and rename it over the source, beside a swap or backup file: the directory
    changes, but holds what it held at the last build."""
    source = built.tree / EXAMPLE
    (source.parent / ".kunit-example-test.c.swp").write_text("swap")
    saved = source.parent / "kunit-example-test.c.new"
    saved.write_text(source.read_text() + "// fake-outcome: example_simple_test fail\n")
    (source.parent / "kunit-example-test.c~").write_text(source.read_text())
    saved.replace(source)
    result = run(project, built)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["kunit: built kunit.kunitconfig in * (log: *; link-only: 1 object recompiled*"])
    assert walks(built) == 2


def test_a_changed_fragment_builds_in_full(project: pytest.Pytester, built: FakeKernel) -> None:
    """Another configuration is another build directory: the first build there, a copy of the nearest (seeding.py),
    is made by the full make, never link-only."""
    fail_example(built)
    (project.path / "kunit.kunitconfig").write_text(KUNITCONFIG + "# CONFIG_KUNIT_TEST is not set\n")
    result = run(project, built)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "kunit: seeded * from * (1 symbol set otherwise): make compiles what they change",
            "kunit: building kernel: make -j* vmlinux (incremental; not link-only: the configuration was completed "
            "again)*",
        ]
    )


def edit_and_expect_the_full_make(project: pytest.Pytester, built: FakeKernel, reason: str) -> None:
    """Edit the example to fail, run, and see the failure built by the full make for `reason`."""
    fail_example(built)
    result = run(project, built)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"kunit: building kernel: make -j* vmlinux (incremental; not link-only: {reason})*"])


def test_a_compile_that_writes_more_than_its_objects_gets_the_full_make(
    project: pytest.Pytester, built: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kbuild's prepare step, which the single-object make runs too, may find generated headers to write (a new
    release string): the objects depending on them would go stale, so the full make follows."""
    monkeypatch.setenv("FAKE_PREPARE_WRITES", "include/generated/utsrelease.h")
    edit_and_expect_the_full_make(project, built, f"make {EXAMPLE[:-2]}.o also wrote include/generated/utsrelease.h")
    assert make_runs(built)[-2:] == [f"{EXAMPLE[:-2]}.o", "vmlinux"]
    assert walks(built) == 3


def test_a_changed_build_environment_gets_the_full_make(
    project: pytest.Pytester, built: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new build identity (or flags) would leave the other objects compiled the old way: the walk compiles them.
    (Flags the shell exports, such as KCFLAGS, key a build of their own: test_developer_shell.py.)"""
    monkeypatch.setenv("KBUILD_BUILD_USER", "someone-else")
    edit_and_expect_the_full_make(
        project, built, "the environment Kbuild reads changed (KCFLAGS, KBUILD_BUILD_*, PATH, ...)"
    )


def test_without_objects_to_link_from_the_full_make_runs(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    """No thin vmlinux.a (a kernel before 6.1): an edited source is built by the full make."""
    run(project, fake_kernel).assert_outcomes(passed=1)
    source = fake_kernel.tree / EXAMPLE
    source.write_text(source.read_text() + "/* an edit */\n")
    result = run(project, fake_kernel)
    reason = "no thin vmlinux.a to link from (kernels before 6.1)"
    result.stdout.fnmatch_lines([f"kunit: building kernel: make -j* vmlinux (incremental; not link-only: {reason})*"])


def test_the_build_log_names_the_link_only_steps(project: pytest.Pytester, built: FakeKernel) -> None:
    fail_example(built)
    run(project, built).assert_outcomes(failed=1)
    (log,) = built.cache.glob("build/*/build.log")
    text = log.read_text()
    assert f" {EXAMPLE[:-2]}.o\n" in text and " -o . vmlinux\n" in text
    assert f"# link-only: compiled {EXAMPLE[:-2]}.o, linked vmlinux in " in text


def test_pytests_own_cache_in_the_tree_is_no_edit(pytester: pytest.Pytester, built: FakeKernel) -> None:
    """`cd ~/linux && pytest --kunit lib/kunit/` with pytest's cache on: every run writes .pytest_cache into the
    tree, which no build reads. Once it exists (its creation changes the tree's top directory), a run with no edit
    builds nothing, and an edit is built link-only."""
    (built.tree / "lib/kunit/.kunitconfig").write_text(KUNITCONFIG)
    options = [
        "cacheprovider" if option == "no:cacheprovider" else option
        for option in built.options("-k", "example_simple_test", "lib/kunit/")
        if not option.startswith("--kunit-kernel-src")
    ]

    def in_tree() -> pytest.RunResult:
        time.sleep(1.1)  # the runner allows file times a second's lag behind the build's start
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(built.tree)
            return pytester.runpytest_subprocess(*options)

    in_tree()
    in_tree().assert_outcomes(passed=1)
    assert (built.tree / ".pytest_cache").is_dir()
    unchanged = in_tree()
    unchanged.assert_outcomes(passed=1)
    unchanged.stdout.fnmatch_lines(["*kernel builds: 0 *"])
    fail_example(built)
    edited = in_tree()
    edited.assert_outcomes(failed=1)
    edited.stdout.fnmatch_lines(["kunit: built *.kunitconfig in * (log: *; link-only: 1 object recompiled*"])


def test_an_object_compiled_as_the_image_holds_it_needs_no_link(project: pytest.Pytester, built: FakeKernel) -> None:
    source = built.tree / EXAMPLE
    source.write_text(source.read_text() + "/* a comment: the same object */\n")
    result = run(project, built)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*link-only: 1 object recompiled, as vmlinux holds it: no link*"])
    assert make_runs(built)[-1] == f"{EXAMPLE[:-2]}.o"
    result.stdout.fnmatch_lines(["*kernel builds: 1 (*"])  # a build: the compile, which found the object unchanged
    # The next edit changes the object: linked again, and its outcome is the console's.
    fail_example(built)
    run(project, built).assert_outcomes(failed=1)
    assert make_runs(built)[-2:] == [f"{EXAMPLE[:-2]}.o", "vmlinux"]


def test_an_object_the_image_was_not_linked_from_is_linked_whatever_its_bytes(
    project: pytest.Pytester, built: FakeKernel
) -> None:
    """A compile the link never followed (an interrupted run) leaves the object newer than the image: the bytes it
    would be compared with were never linked."""
    fail_example(built)
    (build_dir,) = built.cache.glob("build/*/")
    project.run(
        "python3", str(built.tree / "fake_make.py"), f"{EXAMPLE[:-2]}.o", str(build_dir)
    )  # compiled, not linked
    source = built.tree / EXAMPLE
    source.write_text(source.read_text() + "/* a comment */\n")
    run(project, built).assert_outcomes(failed=1)
    assert make_runs(built)[-2:] == [f"{EXAMPLE[:-2]}.o", "vmlinux"]
