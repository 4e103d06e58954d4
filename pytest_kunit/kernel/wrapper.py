"""Compiler wrappers (ccache, distcc, sccache) in front of every compiler a kernel build runs, tuxmake-style.

The wrapper is put in front by PATH, not by CC=: a directory in the build directory holds one small script per
compiler name the build calls (`gcc` for host tools, `<CROSS_COMPILE>gcc` for the kernel), each running the wrapper
on the real compiler. Kbuild's command lines (and so its .cmd files) stay the same with or without a wrapper, so
changing the wrapper never rebuilds anything, as the build key ignores it too.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..arch import MakeSettings
from ..errors import BuildError
from ..options import Wrapper

WRAPPER_DIR = ".pytest-kunit-wrapper"
# In the build directory: ccache's record of each compile of its latest build (CCACHE_STATSLOG), from which that
# build's hits are counted; ccache's own counters are the whole cache's, which other builds add to meanwhile.
STATS_LOG = ".pytest-kunit-ccache-stats.log"
# In the build directory: the tree, by a name that is the same for every tree (ccache's hits across trees). ccache
# hands the compiler the shortest relative path to a file among those through links and real paths, and the tree's
# own is at least two characters ("..", when the build directory is in the tree): one character always wins.
TREE_LINK = "S"
# Fixed, so that the few objects that embed them (init/version.o, the initramfs) hit the cache too; any date that
# `date -d` reads will do (usr/gen_initramfs.sh passes it there). A value the user exports wins.
BUILD_IDENTITY = {
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 1970",
    "KBUILD_BUILD_USER": "pytest-kunit",
    "KBUILD_BUILD_HOST": "pytest-kunit",
}


@dataclass(frozen=True)
class EnvSetting:
    """An environment variable the wrapper reads, set unless the user exported it or its opposite."""

    name: str
    value: str
    opposite: str = ""  # e.g. CCACHE_NODEPEND: exported, it says the user decided, as the variable itself would

    def user_decided(self) -> bool:
        return self.name in os.environ or bool(self.opposite and self.opposite in os.environ)


@dataclass(frozen=True)
class WrapperTool:
    """What one wrapper needs to be found and to hit."""

    program: str
    install: str  # what to do when `program` is missing
    # The wrapper rewrites absolute paths under this variable's directory relative to the build directory (ccache's
    # base_dir): set to the build directory, which reaches the tree through a link of its own, so builds in any two
    # build directories, of any two trees, share hits.
    base_dir_env: str = ""
    hosts_env: str = ""  # where the wrapper reads the hosts it spreads compiles over
    hosts_files: tuple[str, ...] = ()  # ... or these files, when that variable is unset (~ expanded)
    settings: tuple[EnvSetting, ...] = ()


TOOLS = {
    Wrapper.CCACHE: WrapperTool(
        "ccache",
        "install it: apt-get install ccache.",
        base_dir_env="CCACHE_BASEDIR",
        # Depend mode: a miss costs the compile alone. ccache's default mode runs the preprocessor first, which made
        # a cold kernel build 28% slower than one without ccache (measured on UML 6.1 objects); depend mode needs the
        # -MD/-MMD that Kbuild passes to every compile (-Wp,-MMD) and hits on the same manifests.
        settings=(EnvSetting("CCACHE_DEPEND", "1", opposite="CCACHE_NODEPEND"),),
    ),
    Wrapper.DISTCC: WrapperTool(
        "distcc",
        "install it: apt-get install distcc (and run distccd on the hosts that compile).",
        hosts_env="DISTCC_HOSTS",
        hosts_files=("~/.distcc/hosts", "/etc/distcc/hosts"),
    ),
    Wrapper.SCCACHE: WrapperTool(
        "sccache",
        "install it from https://github.com/mozilla/sccache/releases or with `cargo install sccache` "
        "(Debian 12 does not package it), or choose --kunit-wrapper ccache.",
    ),
}


@dataclass(frozen=True)
class CompilerWrapping:
    """A wrapper ready for one build: the environment make runs in, and what to say about it."""

    wrapper: Wrapper
    env: dict[str, str] = field(default_factory=dict)  # what to add to make's environment
    describe: str = ""
    stats_log: Path | None = None  # where ccache records this build directory's compiles, one entry each


def chosen(wrapper: Wrapper) -> Wrapper:
    """`auto` is ccache when it is installed, else none."""
    if wrapper is Wrapper.AUTO:
        return Wrapper.CCACHE if shutil.which("ccache") else Wrapper.NONE
    return wrapper


def _hosts_named(tool: WrapperTool) -> bool:
    if not tool.hosts_env:
        return True
    if os.environ.get(tool.hosts_env, "").strip():
        return True
    for name in tool.hosts_files:
        try:
            lines = Path(name).expanduser().read_text().splitlines()
        except OSError:
            continue
        if any(line.strip() and not line.lstrip().startswith("#") for line in lines):
            return True
    return False


def _program(wrapper: Wrapper, tool: WrapperTool) -> str:
    program = shutil.which(tool.program)
    if program is None:
        raise BuildError(
            f"--kunit-wrapper {wrapper.value}: {tool.program} is not installed (not found on PATH).",
            f"{tool.install} Or run with --kunit-wrapper none.",
        )
    if not _hosts_named(tool):
        files = " or ".join(tool.hosts_files)
        raise BuildError(
            f"--kunit-wrapper {wrapper.value}: no hosts to compile on ({tool.hosts_env} is unset and there is no "
            f"{files}).",
            f"name them, e.g. export {tool.hosts_env}='localhost/2 buildbox/8', and raise --kunit-jobs to the "
            f"slots they offer together (`{tool.program} -j` prints it).",
        )
    return program


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
    scratch = link.with_name(f".{TREE_LINK}.new")
    scratch.unlink(missing_ok=True)
    scratch.symlink_to(tree)
    os.replace(scratch, link)


def llvm_compilers(variables: Sequence[str]) -> tuple[str, ...]:
    """The clang that make's last LLVM= has Kbuild run by name (LLVM=1: clang, LLVM=-15: clang-15); none for LLVM=DIR/,
    which Kbuild runs by its path, where no script on PATH stands in front."""
    values = [word.partition("=")[2] for word in variables if word.startswith("LLVM=")]
    if not values or not values[-1] or values[-1].endswith("/"):
        return ()
    return (f"clang{values[-1] if values[-1].startswith('-') else ''}",)


def wrap_compilers(
    wrapper: Wrapper,
    make: MakeSettings,
    build_dir: Path,
    tree: Path,
    path: str | None = None,
    also: tuple[str, ...] = (),
) -> CompilerWrapping:
    """Write the wrapper scripts into the build directory and return what make's environment needs for them; raises
    BuildError when the wrapper is not installed or has nowhere to compile. `path`: the PATH make runs with (default
    this process's), on which each compiler is found by name: a path prefix's tools are linked there (makerun.py).
    `also`: more compilers the build runs by name (llvm_compilers)."""
    wrapper = chosen(wrapper)
    tool = TOOLS.get(wrapper)
    if tool is None:
        return CompilerWrapping(wrapper, describe="no compiler wrapper")
    program = _program(wrapper, tool)
    path = os.environ.get("PATH", os.defpath) if path is None else path
    scripts = build_dir / WRAPPER_DIR
    scripts.mkdir(parents=True, exist_ok=True)
    build_dir = build_dir.resolve()
    tree_link = None
    if tool.base_dir_env:
        tree_link = _TreeLink(tree.resolve(), build_dir / TREE_LINK, tool.base_dir_env)
        _link(tree_link.link, tree_link.tree)
    # By the compiler's name alone, as Kbuild runs it: a script always in the build directory, never at the path
    # --kunit-cross-compile names (which would overwrite the compiler with a script running itself).
    for name in dict.fromkeys(("gcc", os.path.basename(make.compiler), *also)):
        script = scripts / name
        script.write_text(_script(program, name, path, tree_link))
        script.chmod(0o755)
    env = {name: os.environ.get(name, value) for name, value in BUILD_IDENTITY.items()}
    env |= {setting.name: setting.value for setting in tool.settings if not setting.user_decided()}
    env["PATH"] = f"{scripts}{os.pathsep}{path}"
    notes = []
    if tool.base_dir_env:
        base = os.environ.get(tool.base_dir_env) or str(build_dir)
        env[tool.base_dir_env] = base
        notes.append(f"{tool.base_dir_env}={base}")
    if tool.hosts_env and os.environ.get(tool.hosts_env):
        notes.append(f"{tool.hosts_env}={os.environ[tool.hosts_env]}")
    where = f" ({', '.join(notes)})" if notes else ""
    stats_log = None
    if wrapper is Wrapper.CCACHE and "CCACHE_STATSLOG" not in os.environ:  # the user's own log would mix builds
        stats_log = build_dir / STATS_LOG
        stats_log.write_text("")  # a log of this build only: the directory is locked while it builds
        env["CCACHE_STATSLOG"] = str(stats_log)
    compilers = " and ".join((make.compiler, *also))
    return CompilerWrapping(wrapper, env, f"{program} in front of {compilers}{where}", stats_log)


def ccache_counts(wrapping: CompilerWrapping) -> tuple[int, int] | None:
    """ccache's (hits, misses) so far in this build, or None if the wrapper is not ccache or ccache cannot tell. From
    the build's own stats log where there is one; else ccache's counters for the whole cache, which compiles of other
    builds running meanwhile add to."""
    if wrapping.wrapper is not Wrapper.CCACHE:
        return None
    if wrapping.stats_log is not None:
        return logged_counts(wrapping.stats_log)
    try:  # asked with make's environment: the ccache the build used (CCACHE_DIR, CCACHE_CONFIGPATH), wherever it is
        env = os.environ | wrapping.env
        result = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, timeout=30, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    counters: dict[str, int] = {}
    for line in result.stdout.splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            counters[name] = int(value)
    hits = counters.get("direct_cache_hit", 0) + counters.get("preprocessed_cache_hit", 0)
    misses = counters.get("cache_miss", 0)
    return (hits, misses) if result.returncode == 0 else None


def logged_counts(stats_log: Path) -> tuple[int, int]:
    """(hits, misses) in a ccache stats log: one entry per compile, a `# <source>` line and then its counters."""
    try:
        lines = stats_log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return (0, 0)
    hits = sum(line in ("direct_cache_hit", "preprocessed_cache_hit") for line in lines)
    return hits, lines.count("cache_miss")


def hit_note(before: tuple[int, int] | None, after: tuple[int, int] | None) -> str:
    """`ccache: 1480 of 1510 compiles hit`, from the counters before and after a build ("" if unknown)."""
    if before is None or after is None:
        return ""
    hits, misses = after[0] - before[0], after[1] - before[1]
    return f"ccache: {hits} of {hits + misses} compiles hit"
