"""Where each test case is defined in C, so reports can point at the function a kernel test case runs."""

from __future__ import annotations

import re
from pathlib import Path

from .records import recorded_objects

_CASE = re.compile(r"KUNIT_CASE(?:_PARAM|_SLOW|_PARAM_ATTR|_ATTR)?\(\s*(\w+)")
# `static void __init name(struct kunit *test)`: storage class and section attributes may stand before the name.
_DEFINITION = r"^(?:static\s+)?(?:inline\s+)?void\s+(?:__\w+\s+)*{name}\s*\(\s*struct\s+kunit\s*\*"
# `static struct kunit_case foo_cases[] = { KUNIT_CASE(a), ... {} };`
_CASE_ARRAY = re.compile(r"struct\s+kunit_case\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{(.*?)\n\s*\}\s*;", re.DOTALL)
# `static struct kunit_suite foo_suite = { .name = "foo", .test_cases = foo_cases, };`
_SUITE = re.compile(r"struct\s+kunit_suite\s+\w+\s*=\s*\{(.*?)\}\s*;", re.DOTALL)
_SUITE_NAME = re.compile(r"\.name\s*=\s*\"([^\"]+)\"")
_SUITE_CASES = re.compile(r"\.test_cases\s*=\s*(\w+)")

Locations = dict[str, tuple[str, int]]  # "suite.case", or a case function's name alone -> (path, line)


def location_of(locations: Locations, suite: str, case: str) -> tuple[str, int] | None:
    """Where `suite`'s `case` is defined: by its suite, else by its function's name where only one file defines a
    case function of that name (a suite whose name the file does not spell out, e.g. made by a macro)."""
    return locations.get(f"{suite}.{case}") or locations.get(case)


def _suites(text: str) -> dict[str, list[str]]:
    """Each suite this file spells out, with the case functions its case array names."""
    arrays = {name: _CASE.findall(body) for name, body in _CASE_ARRAY.findall(text)}
    suites: dict[str, list[str]] = {}
    for body in _SUITE.findall(text):
        name, cases = _SUITE_NAME.search(body), _SUITE_CASES.search(body)
        if name is not None and cases is not None and cases[1] in arrays:
            suites[name[1]] = arrays[cases[1]]
    return suites


def case_locations(tree: Path, build_dir: Path) -> Locations:
    """Map each case to (source path relative to the tree, line) for every C file the build compiled: keyed by
    "suite.case", since two suites' static case functions may share a name; a function's name alone where no other
    file defines one of that name."""
    locations: Locations = {}
    by_name: dict[str, set[tuple[str, int]]] = {}
    for obj in recorded_objects(build_dir):
        relative = obj.with_suffix(".c")
        source = tree / relative
        try:
            text = source.read_text(errors="replace")
        except OSError:
            continue
        if "KUNIT_CASE" not in text:
            continue
        lines = text.splitlines()
        defined: dict[str, tuple[str, int]] = {}
        for name in dict.fromkeys(_CASE.findall(text)):
            definition = re.compile(_DEFINITION.format(name=re.escape(name)))
            line = next((number for number, line in enumerate(lines, 1) if definition.match(line)), None)
            if line is not None:
                defined[name] = (str(relative), line)
                by_name.setdefault(name, set()).add(defined[name])
        for suite, cases in _suites(text).items():
            for case in cases:
                if case in defined:
                    locations.setdefault(f"{suite}.{case}", defined[case])
    for name, places in by_name.items():
        if len(places) == 1:
            locations[name] = next(iter(places))
    return locations
