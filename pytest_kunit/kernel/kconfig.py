"""kunitconfig fragments: parsing (errors name file:line) and validation against the resulting .config."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .kconfig_hints import KconfigSymbols, symbol_hint

_ASSIGNMENT = re.compile(r"^(?P<symbol>CONFIG_[A-Za-z0-9_]+)=(?P<value>.*)$")
_NOT_SET = re.compile(r"^# (?P<symbol>CONFIG_[A-Za-z0-9_]+) is not set$")
_VALUE = re.compile(r'^(?:[ymn]|-?\d+|0[xX][0-9a-fA-F]+|"(?:[^"\\]|\\.)*")$')
# A malformed file is echoed only this far: the first few bad lines, each cut short, then a count.
SHOWN_PROBLEMS = 5
SHOWN_LINE = 80


@dataclass(frozen=True)
class Entry:
    symbol: str
    value: str  # "y", "m", "n", a number or a quoted string, exactly as .config spells it
    origin: str  # file:line
    or_builtin: bool = False  # "m" that Kconfig may raise to "y" (a suite made a module where it can be one)


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
            problems.append(f'{where}: {_quoted(raw.strip())} is not CONFIG_NAME=y|m|n|number|"string"')
            continue
        entries[assignment["symbol"]] = Entry(assignment["symbol"], assignment["value"], where)
    if problems:
        shown = problems[:SHOWN_PROBLEMS]
        if len(problems) > len(shown):
            shown.append(f"... and {len(problems) - len(shown)} more malformed lines")
        raise ConfigError(
            "Malformed kunitconfig line(s):\n  " + "\n  ".join(shown),
            "write each line as CONFIG_NAME=value or '# CONFIG_NAME is not set'; '#' starts a comment.",
        )
    return Fragment(tuple(entries.values()))


def _quoted(line: str) -> str:
    return repr(line if len(line) <= SHOWN_LINE else line[:SHOWN_LINE] + "...")


def read_fragment(path: Path) -> Fragment:
    """A kunitconfig file that is text and asks for at least one symbol (an empty one would build a kernel that
    runs no test)."""
    data = path.read_bytes()
    text = data.decode(errors="replace")
    if b"\0" in data or text.count("\ufffd") > len(text) // 20:
        raise ConfigError(
            f"{path} is not a kunitconfig: it holds binary data.",
            "point pytest at a text file of CONFIG_NAME=value lines, or rename this file so it does not end "
            "in .kunitconfig.",
        )
    fragment = parse_fragment(text, str(path))
    if not fragment.entries:
        raise ConfigError(
            f"{path} sets no CONFIG_ option: its kernel would hold no test.",
            "add the options of the tests to run (CONFIG_KUNIT_EXAMPLE_TEST=y, for instance), or remove the file.",
        )
    return fragment


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
    depends: tuple[str, ...]  # `depends on` lines, then the enclosing `if` and `menu` blocks' conditions
    unmet: tuple[str, ...] = ()  # symbols those conditions name that .config does not set
    hint: str = ""  # the nearest names of a symbol not defined, the architecture of one defined only for another

    def describe(self) -> str:
        return self._what() + (f"; {self.hint}" if self.hint else "")

    def _what(self) -> str:
        wanted = f"{self.entry.symbol}={self.entry.value}"
        if not self.defined:
            return f"{wanted} ({self.entry.origin}): no such symbol in this kernel tree"
        got = "is not set" if self.actual == "n" else f"is {self.actual}"
        text = f"{wanted} ({self.entry.origin}): {got} after olddefconfig"
        if self.depends:
            text += "; Kconfig: " + "; ".join(self.depends)
        if self.unmet:
            text += "; not set: " + ", ".join(f"CONFIG_{name}" for name in self.unmet)
        return text


_SYMBOL = re.compile(r"(!?)\b([A-Z][A-Z0-9_]*)\b")


def _unmet(conditions: Iterable[str], dotconfig: dict[str, str]) -> tuple[str, ...]:
    """The symbols the conditions need (not negated) that .config leaves unset."""
    names = []
    for condition in conditions:
        expression = condition.split("(", 1)[0] if condition.startswith(("if ", "menu ")) else condition
        for negated, name in _SYMBOL.findall(expression.removeprefix("depends on ")):
            if not negated and name not in ("y", "m", "n") and dotconfig.get(f"CONFIG_{name}", "n") == "n":
                names.append(name)
    return tuple(dict.fromkeys(names))


def _holds(entry: Entry, actual: str) -> bool:
    return actual == entry.value or (entry.or_builtin and entry.value == "m" and actual == "y")


def dropped_symbols(fragment: Fragment, dotconfig: dict[str, str], tree: Path, srcarch: str = "x86") -> list[Dropped]:
    """Every entry the fragment asks for that does not hold in .config, with what Kconfig says it needs."""
    missing = [entry for entry in fragment.entries if not _holds(entry, dotconfig.get(entry.symbol, "n"))]
    if not missing:
        return []
    walk = _KconfigWalk(tree, {entry.symbol.removeprefix("CONFIG_") for entry in missing}, srcarch)
    definitions = walk.run()
    dropped = []
    for entry in missing:
        name = entry.symbol.removeprefix("CONFIG_")
        needs = definitions.get(name)
        unmet = _unmet(needs or (), dotconfig) if entry.value != "n" else ()
        # A symbol asked to be off that is on: what selects it says why, more than what it depends on.
        said = (*walk.selected.get(name, ()), *(needs or ())) if entry.value == "n" else needs or ()
        hint = symbol_hint(name, unmet, walk.symbols, srcarch)
        dropped.append(Dropped(entry, dotconfig.get(entry.symbol, "n"), needs is not None, said, unmet, hint))
    return dropped


def check_fragment(fragment: Fragment, dotconfig_text: str, tree: Path, srcarch: str = "x86") -> None:
    dropped = dropped_symbols(fragment, read_dotconfig(dotconfig_text), tree, srcarch)
    if dropped:
        raise ConfigError(
            "The kernel configuration does not hold what the kunitconfig asks for:\n  "
            + "\n  ".join(item.describe() for item in dropped),
            "enable the symbols these depend on in the kunitconfig (those listed as not set first), fix a misspelt "
            "name (the nearest are offered), or build for the architecture a symbol belongs to (--kunit-arch).",
        )


_KCONFIG_START = re.compile(r"^\s*(?:menu)?config\s+(\S+)\s*$")
_KCONFIG_BLOCK_END = re.compile(
    r"^\s*(?:config|menuconfig|choice|endchoice|menu|endmenu|if|endif|source|osource|rsource|orsource|comment|help|"
    r"---help---)\b"
)
_KCONFIG_DEPENDS = re.compile(r"^\s*depends on\b\s*(.*)$")
_KCONFIG_SOURCE = re.compile(r'^\s*(?P<kind>o?r?source)\s+"(?P<path>[^"]+)"')
_KCONFIG_IF = re.compile(r"^\s*if\s+(?P<expr>.+?)\s*$")
_KCONFIG_ENDIF = re.compile(r"^\s*endif\b")
_KCONFIG_MENU = re.compile(r'^\s*(?:menu\s+"(?P<title>[^"]*)"|choice\b)')
_KCONFIG_HELP = re.compile(r"^\s*(?:help|---help---)\s*$")
_KCONFIG_ENDMENU = re.compile(r"^\s*(?:endmenu|endchoice)\b")
_KCONFIG_TYPE = re.compile(r"^\s*(?P<type>(?:def_)?(?:bool|tristate)|string|int|hex)\b")
_KCONFIG_SELECT = re.compile(r"^\s*select\s+(?P<name>[A-Z0-9_]+)(?:\s+if\s+(?P<condition>.+?))?\s*$")


class _KconfigWalk:
    """One pass over the tree's Kconfig files from the top, following `source` as Kconfig does, so that a symbol's
    needs include the `if` and `menu ... depends on` blocks around it, even in the file that sources its own."""

    def __init__(self, tree: Path, names: set[str], srcarch: str) -> None:
        self.tree = tree
        self.names = names
        self.srcarch = srcarch
        self.needs: dict[str, list[str]] = {}  # `depends on` lines
        self.context: dict[str, list[str]] = {}  # enclosing `if` and `menu` conditions
        self.types: dict[str, str] = {}  # "bool", "tristate", ...: the type line of each wanted symbol's block
        self.selected: dict[str, list[str]] = {}  # "selected by NAME (file:line)": each `select` of a wanted symbol
        self.visited: set[Path] = set()
        self.symbols = KconfigSymbols()  # every symbol any Kconfig file defines, and where
        self._in_build_files = True  # while the files the build's own Kconfig sources are read

    def run(self) -> dict[str, tuple[str, ...]]:
        self.file(self.tree / "Kconfig", [])
        # Files no `source` reaches (other architectures' Kconfig) only for symbols the build's own files do not
        # define: their definitions there are not this build's.
        self.names = self.names - set(self.needs)
        self._in_build_files = False
        for path in sorted(self.tree.rglob("Kconfig*")):
            if path.is_file() and ".git" not in path.parts and path not in self.visited:
                self.file(path, [])
        return {name: tuple(dict.fromkeys([*lines, *self.context[name]])) for name, lines in self.needs.items()}

    def _sourced(self, current: Path, kind: str, pattern: str) -> list[Path]:
        pattern = pattern.replace("$(SRCARCH)", self.srcarch).replace("$SRCARCH", self.srcarch)
        if "$" in pattern:
            return []
        base = current.parent if "r" in kind.removesuffix("source") else self.tree
        return sorted(path for path in base.glob(pattern) if path.is_file())

    def file(self, path: Path, enclosing: list[str]) -> None:
        if path in self.visited or not path.is_file():
            return
        self.visited.add(path)
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            return
        relative = path.relative_to(self.tree) if path.is_relative_to(self.tree) else path
        blocks: list[str | None] = []  # the open if/menu/choice blocks of this file: their condition, if any
        menu: tuple[int, int] | None = None  # (block index, line) of a menu whose `depends on` lines are being read
        current: list[str] | None = None  # the needs of the wanted symbol whose block this line is in
        named = ""  # that symbol's name
        block = ""  # the symbol whose block this line is in, wanted or not (for its `select` lines)
        help_indent: int | None = None  # inside help text: its indentation (-1 until its first line)
        for number, line in enumerate(lines, 1):
            if help_indent is not None:
                # Help text runs until a non-blank line indented less than its first line.
                indent = len(line.expandtabs()) - len(line.expandtabs().lstrip())
                if not line.strip() or (help_indent < 0 and indent > 0) or 0 <= help_indent <= indent:
                    if line.strip() and help_indent < 0:
                        help_indent = indent
                    continue
                help_indent = None
            if _KCONFIG_HELP.match(line):
                help_indent = -1
                current = None
                continue
            conditions = [*enclosing, *(block for block in blocks if block)]
            start = _KCONFIG_START.match(line)
            if start:
                menu = None
                name = start.group(1)
                block = f"{name} ({relative}:{number})"
                self.symbols.add(name, f"{relative}:{number}", self._in_build_files)
                current = None
                if name in self.names:
                    named = name
                    current = self.needs.setdefault(name, [])
                    self.context.setdefault(name, []).extend(conditions)
                continue
            need = _KCONFIG_DEPENDS.match(line)
            if need and menu is not None:
                blocks[menu[0]] = f"menu depends on {need.group(1).strip()} ({relative}:{menu[1]})"
                continue
            if current is not None and need:
                current.append(f"depends on {need.group(1).strip()}")
                continue
            selects = _KCONFIG_SELECT.match(line)
            if selects and block and selects["name"] in self.names:
                when = f" if {selects['condition']}" if selects["condition"] else ""
                self.selected.setdefault(selects["name"], []).append(f"selected by {block}{when}")
                continue
            typed = _KCONFIG_TYPE.match(line)
            if current is not None and typed:
                self.types.setdefault(named, typed["type"].removeprefix("def_"))
                continue
            if _KCONFIG_BLOCK_END.match(line):
                current = None
                menu = None
                block = ""
            source = _KCONFIG_SOURCE.match(line)
            if source:
                for sourced in self._sourced(path, source["kind"], source["path"]):
                    self.file(sourced, conditions)
            elif (condition := _KCONFIG_IF.match(line)) is not None:
                blocks.append(f"if {condition['expr']} ({relative}:{number})")
            elif _KCONFIG_MENU.match(line):
                blocks.append(None)
                menu = (len(blocks) - 1, number)
            elif (_KCONFIG_ENDIF.match(line) or _KCONFIG_ENDMENU.match(line)) and blocks:
                blocks.pop()


def kconfig_types(tree: Path, names: set[str], srcarch: str = "x86") -> dict[str, str]:
    """The type ("bool", "tristate", ...) of each symbol in `names` that the tree defines, in one walk."""
    walk = _KconfigWalk(tree, names, srcarch)
    walk.run()
    return walk.types


def kconfig_definitions(tree: Path, names: set[str], srcarch: str = "x86") -> dict[str, tuple[str, ...]]:
    """What each symbol in `names` that the tree defines needs: its `depends on` lines, then the conditions of the
    `if` and `menu` blocks it sits in (with file:line), in one walk over the Kconfig files."""
    return _KconfigWalk(tree, names, srcarch).run()
