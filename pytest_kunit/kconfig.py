"""kunitconfig fragments: parsing (errors name file:line) and validation against the resulting .config."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError

_ASSIGNMENT = re.compile(r"^(?P<symbol>CONFIG_[A-Za-z0-9_]+)=(?P<value>.*)$")
_NOT_SET = re.compile(r"^# (?P<symbol>CONFIG_[A-Za-z0-9_]+) is not set$")
_VALUE = re.compile(r'^(?:[ymn]|-?\d+|0[xX][0-9a-fA-F]+|"(?:[^"\\]|\\.)*")$')


@dataclass(frozen=True)
class Entry:
    symbol: str
    value: str  # "y", "m", "n", a number or a quoted string, exactly as .config spells it
    origin: str  # file:line


@dataclass(frozen=True)
class Fragment:
    entries: tuple[Entry, ...]

    def text(self) -> str:
        """The fragment as .config lines, ready to append to a base configuration."""
        lines = []
        for entry in self.entries:
            if entry.value == "n":
                lines.append(f"# {entry.symbol} is not set")
            else:
                lines.append(f"{entry.symbol}={entry.value}")
        return "\n".join(lines) + "\n"

    def __add__(self, other: Fragment) -> Fragment:
        merged = {entry.symbol: entry for entry in self.entries}
        merged.update({entry.symbol: entry for entry in other.entries})
        return Fragment(tuple(merged.values()))


def parse_fragment(text: str, origin: str) -> Fragment:
    """Parse kunitconfig text; `origin` names the file for error messages."""
    entries: dict[str, Entry] = {}
    problems = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{origin}:{number}"
        not_set = _NOT_SET.match(line)
        if not_set:
            entries[not_set["symbol"]] = Entry(not_set["symbol"], "n", where)
            continue
        if not line or line.startswith("#"):
            continue
        assignment = _ASSIGNMENT.match(line)
        if not assignment or not _VALUE.match(assignment["value"]):
            problems.append(f'{where}: {raw.strip()!r} is not CONFIG_NAME=y|m|n|number|"string"')
            continue
        entries[assignment["symbol"]] = Entry(assignment["symbol"], assignment["value"], where)
    if problems:
        raise ConfigError(
            "Malformed kunitconfig line(s):\n  " + "\n  ".join(problems),
            "write each line as CONFIG_NAME=value or '# CONFIG_NAME is not set'; '#' starts a comment.",
        )
    return Fragment(tuple(entries.values()))


def read_fragment(path: Path) -> Fragment:
    return parse_fragment(path.read_text(errors="replace"), str(path))


def read_dotconfig(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        assignment = _ASSIGNMENT.match(line.strip())
        if assignment:
            values[assignment["symbol"]] = assignment["value"]
    return values


@dataclass(frozen=True)
class Dropped:
    entry: Entry
    actual: str
    defined: bool
    depends: tuple[str, ...]

    def describe(self) -> str:
        wanted = f"{self.entry.symbol}={self.entry.value}"
        if not self.defined:
            return f"{wanted} ({self.entry.origin}): no such symbol in this kernel tree"
        got = "is not set" if self.actual == "n" else f"is {self.actual}"
        text = f"{wanted} ({self.entry.origin}): {got} after olddefconfig"
        if self.depends:
            text += "; Kconfig: " + "; ".join(self.depends)
        return text


def dropped_symbols(fragment: Fragment, dotconfig: dict[str, str], tree: Path) -> list[Dropped]:
    """Every entry the fragment asks for that does not hold in .config, with what Kconfig says it needs."""
    missing = [entry for entry in fragment.entries if dotconfig.get(entry.symbol, "n") != entry.value]
    if not missing:
        return []
    definitions = kconfig_definitions(tree, {entry.symbol.removeprefix("CONFIG_") for entry in missing})
    dropped = []
    for entry in missing:
        needs = definitions.get(entry.symbol.removeprefix("CONFIG_"))
        dropped.append(Dropped(entry, dotconfig.get(entry.symbol, "n"), needs is not None, needs or ()))
    return dropped


def check_fragment(fragment: Fragment, dotconfig_text: str, tree: Path) -> None:
    dropped = dropped_symbols(fragment, read_dotconfig(dotconfig_text), tree)
    if dropped:
        raise ConfigError(
            "The kernel configuration does not hold what the kunitconfig asks for:\n  "
            + "\n  ".join(item.describe() for item in dropped),
            "enable the symbols these depend on in the kunitconfig, or fix the symbol names.",
        )


_KCONFIG_START = re.compile(r"^\s*(?:menu)?config\s+(\S+)\s*$")
_KCONFIG_BLOCK_END = re.compile(
    r"^\s*(?:config|menuconfig|choice|endchoice|menu|endmenu|if|endif|source|comment|help|---help---)\b"
)
_KCONFIG_DEPENDS = re.compile(r"^\s*depends on\b\s*(.*)$")


def _kconfig_files(tree: Path) -> Iterable[Path]:
    for path in sorted(tree.rglob("Kconfig*")):
        if path.is_file() and ".git" not in path.parts:
            yield path


def kconfig_definitions(tree: Path, names: set[str]) -> dict[str, tuple[str, ...]]:
    """The `depends on` lines of each symbol in `names` that the tree's Kconfig files define, in one pass over them."""
    needs: dict[str, list[str]] = {}
    for path in _kconfig_files(tree):
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        current: list[str] | None = None  # the needs of the wanted symbol whose block this line is in
        for line in lines:
            start = _KCONFIG_START.match(line)
            if start:
                name = start.group(1)
                current = needs.setdefault(name, []) if name in names else None
                continue
            if current is not None and _KCONFIG_BLOCK_END.match(line):
                current = None
            elif current is not None:
                need = _KCONFIG_DEPENDS.match(line)
                if need:
                    current.append(f"depends on {need.group(1).strip()}")
    return {name: tuple(dict.fromkeys(lines)) for name, lines in needs.items()}


def kconfig_definition(tree: Path, name: str) -> tuple[str, ...] | None:
    """The `depends on` lines of symbol `name` in the tree's Kconfig files, or None if it is not defined."""
    return kconfig_definitions(tree, {name}).get(name)
