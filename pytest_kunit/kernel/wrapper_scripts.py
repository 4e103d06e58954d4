"""The scripts that put a compiler wrapper in front of the compilers: one per compiler name the build calls, in a
directory of the build directory that make's PATH names first, each running the wrapper on the real compiler; and the
link through which a base_dir wrapper's compiles name the tree, so builds of any two trees share hits."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

WRAPPER_DIR = ".pytest-kunit-wrapper"
# In the build directory: the tree, by a name that is the same for every tree (ccache's hits across trees). ccache
# hands the compiler the shortest relative path to a file among those through links and real paths, and the tree's
# own is at least two characters ("..", when the build directory is in the tree): one character always wins.
TREE_LINK = "S"

# Questions about the compiler itself, answered by the compiler: distcc runs `gcc --version` as
# x86_64-linux-gnu-gcc, whose first line (Kconfig's CONFIG_CC_VERSION_TEXT) would then differ from an unwrapped
# build's, and every object (through <linux/compiler-version.h>) would be compiled again.
_QUERIES = ("--version", "-dumpversion", "-dumpfullversion", "-dumpmachine")


@dataclass(frozen=True)
class _TreeLink:
    """How compiles through a base_dir wrapper name the tree: through `link` in the build directory."""

    tree: Path
    link: Path
    base_dir_env: str  # the wrapper's base_dir variable, cleared for the compiles that must keep the tree's names


def write_scripts(
    build_dir: Path, program: str, compilers: Iterable[str], path: str, tree: Path, base_dir_env: str
) -> Path:
    """Write a script for each compiler name into the build directory's WRAPPER_DIR, each running `program` on the
    compiler of that name found on `path`; with a base_dir wrapper (`base_dir_env`), compiles name the tree through
    TREE_LINK. The scripts' directory, for make's PATH."""
    scripts = build_dir / WRAPPER_DIR
    scripts.mkdir(parents=True, exist_ok=True)
    tree_link = None
    if base_dir_env:
        tree_link = _TreeLink(tree.resolve(), build_dir.resolve() / TREE_LINK, base_dir_env)
        _link(tree_link.link, tree_link.tree)
    for name in compilers:
        script = scripts / name
        script.write_text(_script(program, name, path, tree_link))
        script.chmod(0o755)
    return scripts


def _script(program: str, compiler: str, path: str, tree_link: _TreeLink | None) -> str:
    # The compiler is run by name from the PATH make was given (distccd accepts only bare names); PATH is restored
    # first so that name finds the real compiler, not this script.
    restore = f"PATH={shlex.quote(path)}"
    lines = [
        "#!/bin/sh",
        f"# pytest-kunit: {program} in front of {compiler}",
        f'case "$1" in {"|".join(_QUERIES)}) {restore} exec {shlex.quote(compiler)} "$@" ;; esac',
    ]
    flags: tuple[str, ...] = ()
    if tree_link is not None:
        flags = _path_flags(tree_link.link.parent)
        tree, link = shlex.quote(str(tree_link.tree)), shlex.quote(str(tree_link.link))
        lines += [
            # A coverage compile records its working directory and file names in the .gcno, which gcov reads back:
            # it goes through the wrapper as it is (no base_dir), as ccache shares it with no other directory anyway.
            f'case " $* " in *" -ftest-coverage "*|*" --coverage "*) {tree_link.base_dir_env}= {restore} exec '
            f'{shlex.quote(program)} {shlex.quote(compiler)} "$@" ;; esac',
            # Kbuild names the tree by its absolute path, which holds the tree's key: each argument naming it names
            # the link to the tree in the build directory instead, which base_dir makes the same for any tree.
            f"tree={tree} link={link}",
            "for arg do",
            "    shift",
            '    case $arg in *"$tree"*) arg=${arg%%"$tree"*}$link${arg#*"$tree"} ;; esac',
            '    set -- "$@" "$arg"',
            "done",
        ]
    words = " ".join(shlex.quote(word) for word in (program, compiler, *flags))
    lines.append(f'{restore} exec {words} "$@"')
    return "\n".join(lines) + "\n"


def _path_flags(build_dir: Path) -> tuple[str, ...]:
    """The compiler reaches the tree through the link (S/lib/x.c, or /BUILD/S/lib/x.c where ccache leaves an argument
    absolute): map both to the tree's own names, so __FILE__ (KUnit's and BUG()'s file names) is `lib/x.c` as in an
    unwrapped build, and the debug information names `lib/x.c` in the working directory `.` (decode.py prints it as
    decode_stacktrace.sh prints an unwrapped build's absolute names: `lib/x.c:42`). No map names the tree on its
    right-hand side, which ccache hashes: two trees' compiles share hits. gcc applies the last map that matches, so
    the link's maps come after the build directory's."""
    return (
        f"-fmacro-prefix-map={TREE_LINK}/=",
        f"-fdebug-prefix-map={build_dir}=.",
        f"-fdebug-prefix-map={TREE_LINK}/=",
        f"-fdebug-prefix-map={build_dir}/{TREE_LINK}/=",
    )


def _link(link: Path, tree: Path) -> None:
    """Make `link` point at the tree (anew when it points elsewhere). It stays when the wrapper changes: Kbuild's
    dependency files name headers through it."""
    if link.is_symlink() and os.readlink(link) == str(tree):
        return
    # A name of this process's own: xdist workers of one run re-point the same link at once.
    scratch = link.with_name(f".{TREE_LINK}.{os.getpid()}.new")
    scratch.unlink(missing_ok=True)
    scratch.symlink_to(tree)
    os.replace(scratch, link)
