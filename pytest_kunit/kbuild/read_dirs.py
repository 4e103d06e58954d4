"""The tree's directories a build read, by Kbuild's records: what a later run must look at to know that nothing the
build read has changed, instead of every entry of the tree (84,000 on 6.1, 0.3 s). A directory is read when Kbuild
descended into it (the build directory mirrors it: its Makefile, and what that Makefile's rules name beside it), when
a `.cmd` file names a file in it (a command's `-I` directory or input, a source, fixdep's list of what the compile
read), when Kconfig read a file in it (include/config/auto.conf.cmd), and when it holds any of those: an entry added
there can change what an include or a Makefile finds. Whatever lies in no read directory was never read: a change
there cannot change the build until an edit in a read directory names it, and that edit is seen."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .records import cmd_files, kconfig_inputs

# kheaders (CONFIG_IKHEADERS) archives every header directory of the tree, read or not, by its own walk.
_READS_UNRECORDED = ("CONFIG_IKHEADERS=y",)
# A path in a `.cmd` file that names the tree: through the build directory's link to it (ccache's), or in full.
_MENTION = r"(?:^|(?<=[\s=,]))(?:-I)?({prefixes})([^\s,:=)\\]*)"


@dataclass(frozen=True)
class ReadScope:
    """What a later run looks at: each directory in `listed` with every entry in it, each path in `alone` by itself
    (relative to the tree, "" the tree itself)."""

    listed: tuple[str, ...]
    alone: tuple[str, ...]

    def text(self) -> str:
        return json.dumps({"listed": self.listed, "alone": self.alone})

    @classmethod
    def parse(cls, text: str) -> ReadScope | None:
        try:
            fields = json.loads(text)
            listed, alone = fields["listed"], fields["alone"]
        except (ValueError, KeyError, TypeError):
            return None
        if not all(isinstance(path, str) for path in (*listed, *alone)):
            return None
        return cls(tuple(listed), tuple(alone))


def read_scope(build_dir: Path, tree: Path, tree_link: str) -> ReadScope | None:
    """What of `tree` the build in `build_dir` read: listed, the directories Kbuild descended into and those holding
    a file a `.cmd` file names (or named as an `-I` directory); alone, each Kconfig file read and every directory
    above those (an entry added there changes its time), unless a listed directory holds it. None when its records
    cannot say: no fixdep list in any `.cmd` file (a build that compiled nothing, or not Kbuild's), no Kconfig
    record, or a configuration that reads the tree by other means. Reading a 6.1 x86_64 build's 1,100 records takes
    about a second, once a full make."""
    try:
        config = (build_dir / ".config").read_text()
        kconfig = kconfig_inputs(build_dir)
    except OSError:
        return None
    if any(line in config.splitlines() for line in _READS_UNRECORDED):
        return None
    named = _named(build_dir, tree, tree_link)
    if named is None or not named[1]:
        return None
    return _scope(named[0] | _tools_directories(build_dir, tree), set(kconfig), tree)


def widened(scope: ReadScope, build_dir: Path, tree: Path, tree_link: str, since_ns: int) -> ReadScope | None:
    """`scope` with what the records written after `since_ns` name: after a link-only or module-only build, which
    compiled some objects alone (a compile may now include a header from a directory no record named) and read no
    Makefile or Kconfig file anew (an edit to one gets the full make). None if the records cannot be read."""
    named = _named(build_dir, tree, tree_link, since_ns)
    if named is None:
        return None
    return _scope({*scope.listed, *named[0]}, set(scope.alone), tree)


def _named(build_dir: Path, tree: Path, tree_link: str, since_ns: int | None = None) -> tuple[set[str], int] | None:
    """Each path of the tree the build directory's subdirectories and `.cmd` files (those written after `since_ns`,
    if given) name, and how many of those files hold fixdep's list; None if one cannot be read."""
    real = os.path.realpath(tree)
    prefixes = sorted({f"{tree_link}/", f"{tree}/", f"{real}/"}, key=len, reverse=True)
    mention = re.compile(_MENTION.format(prefixes="|".join(re.escape(prefix) for prefix in prefixes)).encode())
    # Each directory Kbuild descended into has one of its own in the build directory.
    named = {_relative(os.path.relpath(directory, build_dir)) for directory, _, _ in os.walk(build_dir)}
    fixdep_lists = 0
    for _, text in cmd_files(build_dir, since_ns):
        if text is None:
            return None
        fixdep_lists += b"\ndeps_" in text
        named.update(_relative(os.fsdecode(match[2])) for match in mention.finditer(text))
    return named, fixdep_lists


def _tools_directories(build_dir: Path, tree: Path) -> set[str]:
    """Every directory of the tree's tools/, when the build made a host tool there (x86's objtool): a tools/ make
    runs in the tool's own source directory (tools/objtool, then tools/lib/subcmd for its library) and its records
    name what it read relative to that, which they do not say. tools/ is self-contained (tools/include holds its
    copies of kernel headers); anything it reads elsewhere its records name in full."""
    if not (build_dir / "tools").is_dir():
        return set()
    return {os.path.relpath(directory, tree) for directory, _, _ in os.walk(tree / "tools")}


def _scope(named: set[str], files: set[str], tree: Path) -> ReadScope:
    """Listed: the directories of `named` (a file stands for its directory; a directory, an -I one or a build
    subdirectory, for itself, if the tree has it: the build directory's own include/generated has its parent named).
    Alone: each of `files` and every directory above anything read, unless a listed directory holds it (an entry's
    time too is seen with it)."""
    listed = {path if os.path.isdir(os.path.join(tree, path)) else os.path.dirname(path) for path in named}
    listed = {directory for directory in listed if os.path.isdir(os.path.join(tree, directory))}
    alone = {path for path in files if os.path.exists(os.path.join(tree, path))}
    for path in (*listed, *alone):
        while path:
            path = os.path.dirname(path)
            alone.add(path)
    alone = {path for path in alone if path not in listed and os.path.dirname(path) not in listed}
    return ReadScope(tuple(sorted(listed)), tuple(sorted(alone)))


def _relative(path: str) -> str:
    """A path below the tree as the tree's own relative name ("" the tree): S/./lib/ is lib."""
    normal = os.path.normpath(path)
    return "" if normal == "." else normal
