"""Node ids on the command line that name a suite or case a fragment's kernel does not have: refused with the names
it does have (pytest alone would say "not found" and name none)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

import pytest

from ..errors import KunitError

# A refusal lists this many of the names there are, then counts the rest.
LISTED_NAMES = 30


def named_below(config: pytest.Config, path: Path, chain: Sequence[str]) -> list[str]:
    """The names the command line's node ids give right below `path::chain...` (the suites named under a fragment,
    the cases under a suite): what the user typed, read from pytest's arguments."""
    base = config.invocation_params.dir
    resolved = path.resolve()
    names = []
    for arg in config.args:
        file, *parts = arg.split("::")
        if len(parts) > len(chain) and parts[: len(chain)] == list(chain) and (base / file).resolve() == resolved:
            names.append(parts[len(chain)])
    return names


def unknown_name_error(
    config: pytest.Config, path: Path, chain: Sequence[str], kind: str, known: Sequence[str], where: str
) -> KunitError | None:
    """The refusal of a node id naming a `kind` ("suite", "case") that `where` does not have, if one does."""
    unknown = [name for name in named_below(config, path, chain) if name not in known]
    if not unknown:
        return None
    lines = []
    for name in dict.fromkeys(unknown):
        close = difflib.get_close_matches(name, known, 3, 0.6)
        nearest = f" (nearest: {', '.join(close)})" if close else ""
        lines.append(f"{where} has no {kind} {name!r}{nearest}.")
    listed = ", ".join(known[:LISTED_NAMES]) + (
        f", and {len(known) - LISTED_NAMES} more" if len(known) > LISTED_NAMES else ""
    )
    return KunitError(
        "\n".join(lines),
        f"name one of its {len(known)} {kind}s, as the kernel lists them: {listed}; or select with -k.",
    )
