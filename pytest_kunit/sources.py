"""Where each test case is defined in C, so reports can point at the function a kernel test case runs."""

from __future__ import annotations

import re
from pathlib import Path

_CASE = re.compile(r"KUNIT_CASE(?:_PARAM|_SLOW|_PARAM_ATTR|_ATTR)?\(\s*(\w+)")
# `static void __init name(struct kunit *test)`: storage class and section attributes may stand before the name.
_DEFINITION = r"^(?:static\s+)?(?:inline\s+)?void\s+(?:__\w+\s+)*{name}\s*\(\s*struct\s+kunit\s*\*"


def case_locations(tree: Path, build_dir: Path) -> dict[str, tuple[str, int]]:
    """Map case function names to (source path relative to the tree, line) for every C file the build compiled."""
    locations: dict[str, tuple[str, int]] = {}
    for command_file in build_dir.rglob(".*.o.cmd"):
        relative = command_file.parent.relative_to(build_dir) / (command_file.name[1 : -len(".o.cmd")] + ".c")
        source = tree / relative
        try:
            text = source.read_text(errors="replace")
        except OSError:
            continue
        if "KUNIT_CASE" not in text:
            continue
        lines = text.splitlines()
        for name in dict.fromkeys(_CASE.findall(text)):
            definition = re.compile(_DEFINITION.format(name=re.escape(name)))
            line = next((number for number, line in enumerate(lines, 1) if definition.match(line)), None)
            if line is not None:
                locations.setdefault(name, (str(relative), line))
    return locations
