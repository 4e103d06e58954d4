"""A newcomer's first mistakes each get the way out: kunit.py's habits, and pytest's own surprises."""

from __future__ import annotations

import pytest

from .conftest import KUNITCONFIG, FakeKernel, no_traceback


def test_a_directory_without_a_fragment_says_what_was_looked_for(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    project.mkdir("lib")
    (project.path / "lib" / "notes.txt").write_text("not a fragment\n")
    result = project.runpytest(*fake_kernel.options("lib"))
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "kunit: no kunitconfig fragment in lib/ or below: pytest --kunit collects files named .kunitconfig "
            "(kunit.py run --kunitconfig=lib/ reads lib/.kunitconfig) and NAME.kunitconfig, and found none. "
            "Write lib/.kunitconfig (CONFIG_KUNIT=y *"
        ]
    )
    assert fake_kernel.boots() == []


def test_a_directory_with_a_fragment_gets_no_such_hint(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    project.mkdir("lib").joinpath(".kunitconfig").write_text(KUNITCONFIG)
    result = project.runpytest(*fake_kernel.options("--collect-only", "-q", "lib"))
    result.stdout.fnmatch_lines(["lib/.kunitconfig::example::example_simple_test"])
    result.stdout.no_fnmatch_line("*no kunitconfig fragment*")


def test_a_fragment_named_without_kunit_is_told_to_add_it(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "kunit.kunitconfig")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: kunit.kunitconfig is a kunitconfig fragment, which pytest collects only with --kunit: "
            "pytest --kunit kunit.kunitconfig"
        ]
    )


def test_a_missing_fragment_without_kunit_is_pytest_s_own_not_found(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "missing.kunitconfig")
    result.stderr.fnmatch_lines(["ERROR: file or directory not found: missing.kunitconfig"])


def test_a_kunitpy_glob_for_k_says_how_to_write_it(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("-k", "example.*"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: -k 'example.*' is a kunit.py filter glob (suite.case with * and ?), which pytest's -k does not "
            "read*For this glob write -k 'example'; or name the cases by node id (FRAGMENT::SUITE::CASE, one argument "
            "each)."
        ]
    )
    no_traceback(result)
    assert fake_kernel.boots() == []


def test_a_path_option_written_with_a_space_that_moves_the_rootdir_is_warned_of(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    spaced = [
        word for option in fake_kernel.options() for word in option.split("=", 1) if "--kunit-kernel-src" in option
    ]
    arguments = [option for option in fake_kernel.options("--collect-only", "-q") if "--kunit-kernel-src" not in option]
    result = project.runpytest(*arguments, *spaced)
    result.stdout.fnmatch_lines(
        [
            f"*pytest-kunit: --kunit-kernel-src {fake_kernel.tree} is written with a space: pytest chooses its "
            f"rootdir before plugins load*instead of {project.path}*Write --kunit-kernel-src={fake_kernel.tree}, "
            f"or give --rootdir={project.path}."
        ]
    )
    quiet = project.runpytest(*arguments, f"--kunit-kernel-src={fake_kernel.tree}")
    quiet.stdout.no_fnmatch_line("*written with a space*")
    quiet.stdout.fnmatch_lines(["kunit.kunitconfig::example::example_simple_test"])


def test_a_path_option_written_with_a_space_inside_the_rootdir_is_no_matter(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    arguments = [option for option in fake_kernel.options("--collect-only", "-q") if "--kunit-cache-dir" not in option]
    result = project.runpytest(*arguments, "--kunit-cache-dir", "cache")
    result.stdout.fnmatch_lines(["kunit.kunitconfig::example::example_simple_test"])
    result.stdout.no_fnmatch_line("*written with a space*")
    assert (project.path / "cache").is_dir()


def test_a_misspelt_symbol_is_offered_the_nearest_names(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    pytester.makefile(".kunitconfig", typo="CONFIG_KUNIT=y\nCONFIG_KUNIT_EXAMPLE_TESTS=y\n")
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(
        [
            "*CONFIG_KUNIT_EXAMPLE_TESTS=y (*typo.kunitconfig:2): no such symbol in this kernel tree; "
            "did you mean CONFIG_KUNIT_EXAMPLE_TEST?*"
        ]
    )


def test_a_symbol_of_another_architecture_names_it(pytester: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    (fake_kernel.tree / "arch" / "arm64").mkdir(parents=True)
    (fake_kernel.tree / "arch" / "arm64" / "Kconfig").write_text(
        'config ARM64\n\tdef_bool y\n\nconfig ARM64_SVE\n\tbool "SVE"\n'
    )
    pytester.makefile(".kunitconfig", sve="CONFIG_KUNIT=y\nCONFIG_ARM64_SVE=y\n")
    result = pytester.runpytest(*fake_kernel.options())
    result.stdout.fnmatch_lines(
        [
            "*CONFIG_ARM64_SVE=y (*sve.kunitconfig:2): is not set after olddefconfig; CONFIG_ARM64_SVE is defined only "
            "for arm64 (arch/arm64/Kconfig:4), not arch/x86: --kunit-arch=arm64*"
        ]
    )


@pytest.mark.parametrize(
    ("nodeid", "refusal", "names"),
    [
        (
            "kunit.kunitconfig::example::example_simple_tes",
            "suite kunit.kunitconfig::example has no case 'example_simple_tes' (nearest: example_simple_test*",
            "*name one of its 4 cases, as the kernel lists them: example_simple_test, example_failing_test, "
            "example_skip_test, example_params_test; or select with -k.",
        ),
        (
            "kunit.kunitconfig::exampel::example_simple_test",
            "kunit.kunitconfig has no suite 'exampel' (nearest: example).",
            "*name one of its 2 suites, as the kernel lists them: example, other; or select with -k.",
        ),
    ],
)
def test_a_node_id_naming_what_the_kernel_lacks_is_refused_with_what_it_has(
    project: pytest.Pytester, fake_kernel: FakeKernel, nodeid: str, refusal: str, names: str
) -> None:
    cold = project.runpytest(*fake_kernel.options(nodeid))
    cold.stdout.fnmatch_lines([refusal, names])
    assert cold.ret == pytest.ExitCode.USAGE_ERROR
    assert fake_kernel.test_boots() == []
    # Once the kernel is built and listed, the refusal comes with no build and no boot.
    boots = len(fake_kernel.boots())
    warm = project.runpytest(*fake_kernel.options(nodeid))
    warm.stdout.fnmatch_lines([refusal, "kernel builds: 0 (0.0 s); guest boots: 0 (0.0 s)"])
    assert len(fake_kernel.boots()) == boots
    no_traceback(warm)


def test_a_node_id_naming_a_case_the_kernel_has_runs_it(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    result = project.runpytest(*fake_kernel.options("kunit.kunitconfig::example::example_simple_test"))
    result.assert_outcomes(passed=1)


def test_a_path_option_written_with_a_space_is_warned_of_once_under_xdist(
    project: pytest.Pytester, fake_kernel: FakeKernel
) -> None:
    spaced = ["--kunit-kernel-src", str(fake_kernel.tree)]
    arguments = [option for option in fake_kernel.options("-n", "2") if "--kunit-kernel-src" not in option]
    result = project.runpytest(*arguments, *spaced)
    assert result.stdout.str().count("is written with a space") == 1
