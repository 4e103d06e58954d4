"""Which fragments share a kernel (sharing.plan_groups): pure, on parsed fragments."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kunit.fragments.sharing import Group, partition, plan_groups, shown_names, superset, union_fragment
from pytest_kunit.kbuild import membership
from pytest_kunit.kernel.kconfig import Fragment, parse_fragment

TEXTS = {
    "a": "CONFIG_KUNIT=y\nCONFIG_A=y\n",
    "b": "CONFIG_KUNIT=y\nCONFIG_B=y\n",
    "not-a": "CONFIG_KUNIT=y\n# CONFIG_A is not set\n",
    "a-as-module": "CONFIG_KUNIT=y\nCONFIG_A=m\n",
    "bad": "",
}


def fragment_of(path: Path) -> Fragment | None:
    text = TEXTS[path.stem]
    return parse_fragment(text, str(path)) if text else None


def tree_of(path: Path) -> str | None:
    return None if path.parent.name == "overlay" else path.parent.name


def paths(*names: str, tree: str = "t") -> list[Path]:
    return [Path(tree) / f"{name}.kunitconfig" for name in names]


def test_fragments_of_one_tree_form_one_group_in_order() -> None:
    a, b = paths("a", "b")
    assert plan_groups([a, b], fragment_of, tree_of) == {a: Group((a, b)), b: Group((a, b))}


def test_a_fragment_setting_a_symbol_otherwise_stays_out_whatever_the_value() -> None:
    a, b, not_a, module = paths("a", "b", "not-a", "a-as-module")
    groups = plan_groups([a, not_a, b, module], fragment_of, tree_of)
    assert groups == {a: Group((a, b)), b: Group((a, b))}


def test_other_trees_unreadable_fragments_and_lone_fragments_are_not_shared() -> None:
    a, bad = paths("a", "bad")
    (b_elsewhere,) = paths("b", tree="u")
    (overlay,) = paths("b", tree="overlay")
    assert plan_groups([a, bad, b_elsewhere, overlay], fragment_of, tree_of) == {}


def test_the_union_holds_every_member_s_lines() -> None:
    union = union_fragment(fragment for path in paths("a", "b") if (fragment := fragment_of(path)))
    assert union.text() == "CONFIG_KUNIT=y\nCONFIG_A=y\nCONFIG_B=y\n"


def test_a_group_is_named_in_one_word_for_the_built_line_by_paths_below_where_pytest_started() -> None:
    in_tree = Group((Path("/src/linux/lib/kunit/.kunitconfig"), Path("/src/linux/fs/fat/.kunitconfig")))
    assert in_tree.describe(Path("/src/linux")) == "lib/kunit/.kunitconfig+fs/fat/.kunitconfig"
    assert in_tree.describe(Path("/src/linux/fs")) == "/src/linux/lib/kunit/.kunitconfig+fat/.kunitconfig"


def stored(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    objects = [membership.SuiteObject(f"lib/{name}.o", (name,)) for name in names]
    monkeypatch.setattr(membership, "suite_objects", lambda build_dir: objects)


def test_suites_listed_in_another_order_than_linked_keep_their_names(monkeypatch: pytest.MonkeyPatch) -> None:
    # 6.12 lists init-time suites (example_init) before the others, whatever the link order.
    stored(monkeypatch, "fat_test", "example", "example_init", "My_fabulous_test_module")
    cases = [("example_init", "a"), ("fat_test", "b"), ("example", "c"), ("My_fabulous_test_module", "d")]
    assert shown_names(Path("b"), cases, {"example_init", "fat_test"}) == {"example_init", "fat_test"}


@pytest.mark.parametrize(
    ("objects", "listed"),
    [
        (["example", "other"], ["example"]),
        (["example", "other"], ["example", "other", "third"]),
        (["example", "example", "x"], ["example", "y", "z"]),
        (["x", "x", "example"], ["y", "z", "example"]),
        (["example", "test_module"], ["example", "My_fabulous_test_module"]),
    ],
    ids=[
        "fewer",
        "more",
        "two printed names for one stored",
        "one stored name for two printed",
        "a name the kernel does not print is not paired by position",
    ],
)
def test_a_kernel_listing_other_suites_than_its_objects_register_cannot_be_told(
    monkeypatch: pytest.MonkeyPatch, objects: list[str], listed: list[str]
) -> None:
    stored(monkeypatch, *objects)
    with pytest.raises(membership.Unknown):
        shown_names(Path("b"), [(suite, "case") for suite in listed], {"example"})


def test_the_superset_enables_what_any_member_enables_and_keeps_values_all_agree_on() -> None:
    kunit = {"CONFIG_KUNIT": "y", "CONFIG_NAMESPACES": "y", "CONFIG_LOG_BUF_SHIFT": "17", "CONFIG_FOO": "m"}
    all_tests = {"CONFIG_KUNIT": "y", "CONFIG_EXPERT": "y", "CONFIG_LOG_BUF_SHIFT": "14", "CONFIG_FOO": "y"}
    assert superset([kunit, all_tests]).splitlines() == [
        "CONFIG_EXPERT=y",
        "CONFIG_FOO=y",
        "CONFIG_KUNIT=y",
        "CONFIG_NAMESPACES=y",  # EXPERT=y alone would turn it off: the union keeps what the kunit kernel has
    ]


def test_each_member_joins_the_first_part_whose_kernel_still_fits_every_member() -> None:
    # As 6.12's in-tree fragments: x turns on LOCKDEP and fits no one; u and v turn on UBSAN and fit each other.
    a, b, x, c, u, v = (Path(f"/tree/{name}/.kunitconfig") for name in "abxcuv")
    debugging = {x: "lockdep", u: "ubsan", v: "ubsan"}
    asked: list[tuple[Path, ...]] = []

    def fits(members: tuple[Path, ...]) -> bool:
        asked.append(members)
        return len({debugging.get(member, "") for member in members}) == 1

    assert partition([a, b, x, c, u, v], fits) == [Group((a, b, c)), Group((u, v))]
    assert asked == [(a, b), (a, b, x), (a, b, c), (a, b, c, u), (x, u), (a, b, c, v), (x, v), (u, v)]
