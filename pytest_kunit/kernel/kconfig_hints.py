"""What a dropped Kconfig symbol's explanation adds (kconfig.py reads the Kconfig files): the nearest names of a
symbol the tree does not define (a misspelling), and the architecture of one that only another architecture has."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..arch import ARCHES

# Names at least this alike are offered for a misspelt one (difflib's ratio: CONFIG_KUNIT_TEST for KUNIT_TESTS).
NEAREST_CUTOFF = 0.8
NEAREST_COUNT = 3


@dataclass
class KconfigSymbols:
    """Every symbol the tree's Kconfig files define, each with where (file:line), and which of them the files a
    build's own Kconfig sources define (the others belong to other architectures' files)."""

    places: dict[str, list[str]] = field(default_factory=dict)
    sourced: set[str] = field(default_factory=set)

    def add(self, name: str, place: str, sourced: bool) -> None:
        self.places.setdefault(name, []).append(place)
        if sourced:
            self.sourced.add(name)


def nearest(name: str, names: Sequence[str]) -> list[str]:
    """The defined names nearest a misspelt one; one differing only in case first."""
    same = [known for known in names if known.upper() == name.upper() and known != name]
    return list(dict.fromkeys([*same, *difflib.get_close_matches(name, names, NEAREST_COUNT, NEAREST_CUTOFF)]))[
        :NEAREST_COUNT
    ]


def _arch_flags(source_arch: str) -> str:
    """The --kunit-arch names that build arch/<source_arch>."""
    names = [name for name, arch in ARCHES.items() if arch.make.source_arch == source_arch]
    if not names:
        return f"an architecture pytest-kunit has no record of (describe it with --kunit-arch-config: {source_arch})"
    return f"--kunit-arch={names[0]}" + (f" (or {', '.join(names[1:])})" if names[1:] else "")


def _only_elsewhere(name: str, symbols: KconfigSymbols) -> tuple[tuple[str, ...], list[str]] | None:
    """Where a symbol the build's own Kconfig files never define is defined instead: the architectures whose
    arch/<x>/ alone holds it (none if other files do), and its places; None for one the build's files define."""
    places = symbols.places.get(name, [])
    if name in symbols.sourced or not places:
        return None
    if not all(place.startswith("arch/") and place.count("/") > 1 for place in places):
        return (), places
    return tuple(sorted({place.split("/")[1] for place in places})), places


def _only_for(names: list[str], archs: tuple[str, ...], places: list[str], srcarch: str) -> str:
    symbols = ", ".join(f"CONFIG_{name}" for name in names)
    verb = "is" if len(names) == 1 else "are"
    if not archs:
        return f"{symbols} {verb} defined only in {', '.join(places[:3])}, which no Kconfig of arch/{srcarch} sources"
    flags = "; ".join(_arch_flags(arch) for arch in archs)
    where = ", ".join(places[:3])
    return f"{symbols} {verb} defined only for {' and '.join(archs)} ({where}), not arch/{srcarch}: {flags}"


def symbol_hint(name: str, unmet: Sequence[str], symbols: KconfigSymbols, srcarch: str) -> str:
    """What to add to a dropped symbol's line: for a name no Kconfig file defines, the nearest defined names; for
    one only other architectures define, which and how to build for them; else the same of the symbols it needs."""
    if name not in symbols.places:
        close = nearest(name, sorted(symbols.places))
        return f"did you mean {' or '.join(f'CONFIG_{known}' for known in close)}?" if close else ""
    own = _only_elsewhere(name, symbols)
    if own is not None:
        return _only_for([name], *own, srcarch)
    # The symbols it needs that are defined elsewhere, grouped by where, each at its first place.
    groups: dict[tuple[str, ...], list[str]] = {}
    for needed in unmet:
        found = _only_elsewhere(needed, symbols)
        if found is not None:
            groups.setdefault(found[0], []).append(needed)
    return "; ".join(
        _only_for(names, archs, [symbols.places[name][0] for name in names], srcarch) for archs, names in groups.items()
    )
