"""Suites read from compiled objects as the kernel registers them: gcc compiles here, in the series' struct layout,
suites the usual way and module_test() suites (the series' compat API, whose name and cases come from a struct
kunit_module when KUnit first sees them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_kunit.kbuild.suitenames import kunit_module_suite_name, suite_cases, suite_names
from pytest_kunit.kbuild.suitetable import Opaque

# The series' include/kunit/test.h, reduced to the members whose place the reader relies on.
HEADER = """
struct kunit;
struct kunit_case { void (*run_case)(struct kunit *test); const char *name; long status; };
struct kunit_module;
struct kunit_suite {
    char name[256];
    int (*suite_init)(struct kunit_suite *suite);
    void (*suite_exit)(struct kunit_suite *suite);
    int (*init)(struct kunit *test);
    void (*exit)(struct kunit *test);
    struct kunit_case *test_cases;
    char status_comment[256];
    void *debugfs;
    char *log;
    int suite_init_err;
    const struct kunit_module *module;
};
struct kunit_module {
    const char *name;
    int (*init)(struct kunit *test);
    void (*exit)(struct kunit *test);
    struct kunit_case *test_cases;
};
#define module_test(m) \\
    static struct kunit_suite __kunit_module_suite_##m = { .name = #m, .module = &(m) }; \\
    static struct kunit_suite *__suites_##m[] __attribute__((used, section(".kunit_test_suites"))) = \\
        { &__kunit_module_suite_##m }
static void first(struct kunit *test) {}
static void second(struct kunit *test) {}
static int init(struct kunit *test) { return 0; }
static struct kunit_case cases[] = {
    { .run_case = first, .name = "first" }, { .run_case = second, .name = "second" }, {}
};
"""


def compiled(tmp_path: Path, body: str) -> Path:
    source = tmp_path / "suites.c"
    source.write_text(HEADER + body)
    subprocess.run(["gcc", "-c", "-o", str(tmp_path / "suites.o"), str(source)], check=True)
    return tmp_path / "suites.o"


def test_a_module_test_suite_runs_under_its_module_s_name_with_its_module_s_cases(tmp_path: Path) -> None:
    obj = compiled(
        tmp_path,
        'static struct kunit_module test_module = { .name = "My fabulous test module", .init = init,'
        " .test_cases = cases };\nmodule_test(test_module);\n",
    )
    assert suite_names(obj) == ("My_fabulous_test_module",)
    assert suite_cases(obj) == (("My_fabulous_test_module", ("first", "second")),)


def test_a_module_test_suite_without_a_name_keeps_the_variable_s(tmp_path: Path) -> None:
    obj = compiled(tmp_path, "static struct kunit_module unnamed = { .test_cases = cases };\nmodule_test(unnamed);\n")
    assert suite_cases(obj) == (("unnamed", ("first", "second")),)


def test_an_ordinary_suite_beside_a_module_test_one_keeps_its_own_name_and_cases(tmp_path: Path) -> None:
    obj = compiled(
        tmp_path,
        'static struct kunit_module m = { .name = "compat-suite", .test_cases = cases };\nmodule_test(m);\n'
        'static struct kunit_suite plain = { .name = "plain", .test_cases = cases };\n'
        'static struct kunit_suite *t[] __attribute__((used, section(".kunit_test_suites"))) = { &plain };\n',
    )
    assert dict(suite_cases(obj)) == {"compat-suite": ("first", "second"), "plain": ("first", "second")}


def test_a_module_test_suite_whose_module_has_no_cases_is_opaque(tmp_path: Path) -> None:
    obj = compiled(tmp_path, 'static struct kunit_module m = { .name = "x" };\nmodule_test(m);\n')
    with pytest.raises(Opaque, match="kunit_module has no case array"):
        suite_cases(obj)


def test_the_module_s_name_is_made_a_suite_name_byte_by_byte_as_kunit_does() -> None:
    assert kunit_module_suite_name("a-b_c d.é".encode()) == "a-b_c_d___"
    assert len(kunit_module_suite_name(b"x" * 300)) == 255
