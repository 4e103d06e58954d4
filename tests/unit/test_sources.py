"""Where a case is defined in C: by its suite, since two suites' static case functions may share a name."""

from __future__ import annotations

from pathlib import Path

from pytest_kunit.kbuild.case_locations import case_locations, location_of

SUITE_FILE = """// SPDX-License-Identifier: GPL-2.0
#include <kunit/test.h>
{padding}
static void shared_name(struct kunit *test)
{{
}}

static void only_{suite}(struct kunit *test)
{{
}}

static struct kunit_case {suite}_cases[] = {{
\tKUNIT_CASE(shared_name),
\tKUNIT_CASE(only_{suite}),
\t{{}}
}};

static struct kunit_suite {suite}_suite = {{
\t.name = "{suite}",
\t.test_cases = {suite}_cases,
}};
kunit_test_suite({suite}_suite);
"""


def compiled(tree: Path, build: Path, relative: str, text: str) -> None:
    """A C file in the tree, and the .o.cmd file Kbuild leaves for it in the build directory."""
    (tree / relative).parent.mkdir(parents=True, exist_ok=True)
    (tree / relative).write_text(text)
    command = build / Path(relative).parent / f".{Path(relative).stem}.o.cmd"
    command.parent.mkdir(parents=True, exist_ok=True)
    command.write_text("cmd\n")


def test_same_named_case_functions_of_two_suites_each_point_at_their_own_file(tmp_path: Path) -> None:
    tree, build = tmp_path / "tree", tmp_path / "build"
    compiled(tree, build, "lib/alpha_test.c", SUITE_FILE.format(suite="alpha", padding=""))
    compiled(tree, build, "drivers/beta_test.c", SUITE_FILE.format(suite="beta", padding="\n" * 10))
    locations = case_locations(tree, build)
    assert location_of(locations, "alpha", "shared_name") == ("lib/alpha_test.c", 4)
    assert location_of(locations, "beta", "shared_name") == ("drivers/beta_test.c", 14)
    assert location_of(locations, "beta", "only_beta") == ("drivers/beta_test.c", 18)


def test_a_suite_the_file_does_not_spell_out_is_found_by_a_function_name_no_other_file_defines(
    tmp_path: Path,
) -> None:
    tree, build = tmp_path / "tree", tmp_path / "build"
    made_by_a_macro = SUITE_FILE.format(suite="gamma", padding="").replace('.name = "gamma"', ".name = SUITE_NAME")
    compiled(tree, build, "lib/gamma_test.c", made_by_a_macro)
    compiled(tree, build, "lib/alpha_test.c", SUITE_FILE.format(suite="alpha", padding=""))
    locations = case_locations(tree, build)
    assert location_of(locations, "gamma", "only_gamma") == ("lib/gamma_test.c", 8)
    # Defined in two files: which one a suite of unknown name runs cannot be told, so none is claimed.
    assert location_of(locations, "gamma", "shared_name") is None
