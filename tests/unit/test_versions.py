"""versions: each fact that differs between kernels, detected on small trees holding the lines that answer it, as the
6.1 tree with our series and Debian's 6.12 write them, and on lines that only say it in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit.kernel.tree import patch_files
from pytest_kunit.versions import (
    SUITE_NAME_BYTES,
    TreeFeatures,
    c_code,
    detect_features,
    filter_takes_a_list,
    has_attributes,
    has_autorun,
    has_case_timeout,
    rewritten_by_make,
    suite_name_bytes,
)

# lib/kunit/executor.c of 6.1 with the series (patch 0009), cut down to the lines that matter here.
EXECUTOR_6_1 = """\
module_param_cb(filter_glob, &kunit_filter_glob_ops, &filter_glob_param, 0);
MODULE_PARM_DESC(filter_glob,
		"Filter which KUnit test suites/tests run at boot-time: a comma-separated list of suite_glob[.test_glob] \
entries, e.g. list* or list*.*del_test,example.*");
module_param_named(action, action_param, charp, 0);
MODULE_PARM_DESC(action,
		"Changes KUnit executor behavior, valid values are:\\n"
		"'list' to list test names instead of running them.\\n");
/*
 * Split the comma-separated list @filter_glob into its
 * "suite_glob[.test_glob]" entries, skipping empty ones.
 */
static int kunit_parse_filter_globs(struct kunit_test_filter **filters,
				const char *filter_glob)
{
	return 0;
}
"""
# lib/kunit/executor.c of Debian's 6.12, cut down likewise.
EXECUTOR_6_12 = """\
module_param_named(action, action_param, charp, 0400);
MODULE_PARM_DESC(action,
		"Changes KUnit executor behavior, valid values are:\\n"
		"'list_attr' to list test names and attributes instead of running them.\\n");
module_param_named(filter_glob, filter_glob_param, charp, 0600);
MODULE_PARM_DESC(filter_glob,
		"Filter which KUnit test suites/tests run at boot-time, e.g. list* or list*.*del_test");
module_param_named(filter, filter_param, charp, 0600);
/* Split "suite_glob.test_glob" into two. Assumes filter_glob is not empty. */
static int kunit_parse_glob_filter(struct kunit_glob_filter *parsed,
				const char *filter_glob)
{
	return 0;
}
static void kunit_run(void)
{
	if (!action_param)
		kunit_exec_run_tests(&suite_set, true);
	else if (strcmp(action_param, "list_attr") == 0)
		kunit_exec_list_tests(&suite_set, true);
}
"""
# lib/kunit/try-catch.c of 6.1 with the series (patch 0011).
TRY_CATCH_6_1 = """\
/*
 * How long a test case may run, in seconds, settable at boot.
 */
module_param_cb(timeout, &kunit_timeout_ops, &kunit_timeout_secs, 0644);
MODULE_PARM_DESC(timeout,
		"Seconds a KUnit test case may run before it is stopped and reported as timed out");
"""
# lib/kunit/test.c of 6.1 with the series (patch 0036), cut down: kunit.autorun beside kunit.enable.
TEST_C_6_1 = """\
module_param_named(enable, enable_param, bool, 0);
MODULE_PARM_DESC(enable, "Enable KUnit tests");
#ifdef CONFIG_KUNIT_AUTORUN_ENABLED
static bool autorun_param = true;
#else
static bool autorun_param;
#endif
module_param_named(autorun, autorun_param, bool, 0);
MODULE_PARM_DESC(autorun, "Run KUnit tests after initialization");
"""
# include/kunit/test.h's struct kunit_suite, as each version defines it.
TEST_H_6_1 = "struct kunit_suite {\n\tchar name[256];\n\tint (*suite_init)(struct kunit_suite *suite);\n};\n"
TEST_H_6_12 = "struct kunit_suite {\n\tconst char name[256];\n\tint (*suite_init)(struct kunit_suite *suite);\n};\n"
# The top Makefile's outputmakefile rule and the top Kbuild's missing-syscalls rule, as 6.1 and 6.12 both have them.
MAKEFILE = """\
PHONY += outputmakefile
# outputmakefile generates a Makefile in the output directory, if using a
# separate output directory. This allows convenient use of make in the
# output directory. It also writes a 'source' symlink.
outputmakefile:
ifeq ($(KBUILD_EXTMOD),)
	@if [ -f $(srctree)/.config ]; then \\
		false; \\
	fi
endif
	$(Q)ln -fsn $(srctree) source
	$(call cmd,makefile)
	$(Q)test -e .gitignore || \\
	{ echo "# this is build directory, ignore it"; echo "*"; } > .gitignore

config: outputmakefile scripts_basic FORCE
"""
KBUILD = """\
PHONY += missing-syscalls
missing-syscalls: scripts/checksyscalls.sh $(offsets-file)
	$(call cmd,syscalls)
"""


def tree_of(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_6_1_tree_with_the_series_filters_by_a_list_and_takes_a_timeout(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"lib/kunit/executor.c": EXECUTOR_6_1, "lib/kunit/try-catch.c": TRY_CATCH_6_1})
    assert detect_features(tree) == TreeFeatures(filter_list=True, case_timeout=True, attributes=False)


def test_the_6_12_tree_takes_one_glob_and_has_attributes(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"lib/kunit/executor.c": EXECUTOR_6_12, "lib/kunit/try-catch.c": "int x;\n"})
    assert detect_features(tree) == TreeFeatures(filter_list=False, case_timeout=False, attributes=True)


def test_a_tree_without_kunit_offers_nothing(tmp_path: Path) -> None:
    assert detect_features(tmp_path) == TreeFeatures(filter_list=False, case_timeout=False, attributes=False)


@pytest.mark.parametrize(
    "executor",
    [
        "/* kunit.filter_glob takes a comma-separated list: see kunit_parse_filter_globs(a, b) { } */\n",
        'MODULE_PARM_DESC(filter_glob, "a comma-separated list of globs");\n',
        "static int kunit_parse_filter_globs(struct kunit_test_filter **filters, const char *filter_glob);\n",
        "\tif (kunit_parse_filter_globs(&filters, filter_glob)) {\n\t\treturn;\n\t}\n",
        "\tcount = kunit_parse_filter_globs(&filters, filter_glob);\n",
        'static const char *doc = "static int kunit_parse_filter_globs(void) {";\n',
    ],
    ids=["comment", "description", "prototype", "call-in-a-condition", "call", "string"],
)
def test_a_list_filter_is_told_by_its_parser_s_definition_not_by_words(tmp_path: Path, executor: str) -> None:
    assert not filter_takes_a_list(tree_of(tmp_path, {"lib/kunit/executor.c": executor}))
    definition = "static int\nkunit_parse_filter_globs(struct kunit_test_filter **filters,\n\tconst char *g)\n{\n}\n"
    assert filter_takes_a_list(tree_of(tmp_path, {"lib/kunit/executor.c": executor + definition}))


def test_upstream_s_timeout_in_test_c_counts_too(tmp_path: Path) -> None:
    """Upstream's kunit.timeout (6.17+, commit 5ac244b9cc8f) lives in test.c and means the same for a case of normal
    speed: the runner passes it there too."""
    test_c = "module_param_named(timeout, kunit_base_timeout, ulong, 0644);\n"
    assert has_case_timeout(tree_of(tmp_path, {"lib/kunit/test.c": test_c}))


@pytest.mark.parametrize(
    "try_catch",
    [
        'MODULE_PARM_DESC(timeout, "Seconds a KUnit test case may run");\n',
        "/* module_param_cb(timeout, &kunit_timeout_ops, &kunit_timeout_secs, 0644); */\n",
        "module_param_named(timeout_scale, kunit_scale, uint, 0644);\n",
    ],
    ids=["description-only", "comment", "another-parameter"],
)
def test_a_timeout_is_told_by_its_module_parameter(tmp_path: Path, try_catch: str) -> None:
    assert not has_case_timeout(tree_of(tmp_path, {"lib/kunit/try-catch.c": try_catch}))


def test_attributes_need_the_filter_parameter_and_the_list_attr_action(tmp_path: Path) -> None:
    described = EXECUTOR_6_12.replace('strcmp(action_param, "list_attr")', 'strcmp(action_param, "list")')
    assert not has_attributes(tree_of(tmp_path, {"lib/kunit/executor.c": described}))  # 'list_attr' only in words
    no_filter = EXECUTOR_6_12.replace("module_param_named(filter,", "/* module_param_named(filter, */ f(")
    assert not has_attributes(tree_of(tmp_path, {"lib/kunit/executor.c": no_filter}))
    assert has_attributes(tree_of(tmp_path, {"lib/kunit/executor.c": EXECUTOR_6_12}))


def test_autorun_is_told_by_its_module_parameter_in_test_c_or_upstream_s_executor_c(tmp_path: Path) -> None:
    assert has_autorun(tree_of(tmp_path / "series", {"lib/kunit/test.c": TEST_C_6_1}))
    upstream = TEST_C_6_1.replace("enable", "other")  # 6.14+ declares it in the executor
    assert has_autorun(tree_of(tmp_path / "upstream", {"lib/kunit/executor.c": upstream}))
    assert detect_features(tmp_path / "series").autorun
    said = '/* module_param_named(autorun, autorun_param, bool, 0); */\nMODULE_PARM_DESC(x, "autorun");\n'
    assert not has_autorun(tree_of(tmp_path / "words", {"lib/kunit/test.c": said}))
    assert not has_autorun(tree_of(tmp_path / "6.12", {"lib/kunit/executor.c": EXECUTOR_6_12}))


def test_our_series_adds_what_the_detectors_look_for(tmp_path: Path) -> None:
    """What kernel-patches/ adds (its added lines only) answers yes for the list filter, the timeout and
    kunit.autorun."""
    series = Path(__file__).resolve().parents[2] / "kernel-patches"
    added: dict[str, list[str]] = {}
    current = ""
    for patch in patch_files((series,)):
        for line in patch.read_text(errors="replace").splitlines():
            if line.startswith("+++ b/"):
                current = line.removeprefix("+++ b/")
            elif line.startswith("+") and not line.startswith("+++"):
                added.setdefault(current, []).append(line[1:])
    files = ("lib/kunit/executor.c", "lib/kunit/try-catch.c", "lib/kunit/test.c")
    tree = tree_of(tmp_path, {name: "\n".join(added.get(name, [])) for name in files})
    assert filter_takes_a_list(tree) and has_case_timeout(tree) and has_autorun(tree)


@pytest.mark.parametrize("header", [TEST_H_6_1, TEST_H_6_12], ids=["6.1", "6.12"])
def test_the_suite_name_is_the_struct_s_first_member(tmp_path: Path, header: str) -> None:
    assert suite_name_bytes(tree_of(tmp_path, {"include/kunit/test.h": header})) == SUITE_NAME_BYTES == 256


@pytest.mark.parametrize(
    "header",
    [
        "struct kunit_suite {\n\tconst char *name;\n\tchar id[256];\n};\n",
        "struct kunit_suite {\n\tint version;\n\tchar name[256];\n};\n",
        "/* struct kunit_suite { char name[256]; } once was */\nstruct kunit_suite;\n",
    ],
    ids=["name-a-pointer", "name-not-first", "in-a-comment"],
)
def test_a_suite_struct_that_does_not_start_with_its_name_gives_none(tmp_path: Path, header: str) -> None:
    assert suite_name_bytes(tree_of(tmp_path, {"include/kunit/test.h": header})) is None
    assert suite_name_bytes(tmp_path / "nowhere") is None


def test_a_make_rewrites_the_build_directory_s_makefile_source_link_and_syscall_check(tmp_path: Path) -> None:
    tree = tree_of(tmp_path, {"Makefile": MAKEFILE, "Kbuild": KBUILD})
    assert rewritten_by_make(tree) == ("Makefile", "source", ".missing-syscalls.d")


def test_a_tree_without_those_rules_rewrites_nothing(tmp_path: Path) -> None:
    outputmakefile_elsewhere = MAKEFILE.replace("outputmakefile:\n", "other:\n")
    tree = tree_of(tmp_path, {"Makefile": outputmakefile_elsewhere, "Kbuild": "# missing-syscalls: gone\n"})
    assert rewritten_by_make(tree) == ()
    assert rewritten_by_make(tmp_path / "nowhere") == ()


def test_c_code_blanks_comments_and_keeps_literals() -> None:
    code = c_code("a = \"http://x /* y */\"; // gone\nb = '/'; /* gone\n too */ c;\n")
    assert code == "a = \"http://x /* y */\";  \nb = '/';   c;\n"
