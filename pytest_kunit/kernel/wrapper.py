"""Compiler wrappers (ccache, distcc, sccache) in front of every compiler a kernel build runs, tuxmake-style: which
wrapper, whether it can run here, and the environment make runs in with it.

The wrapper is put in front by PATH, not by CC=: a directory in the build directory holds one small script per
compiler name the build calls (`gcc` for host tools, `<CROSS_COMPILE>gcc` for the kernel), each running the wrapper
on the real compiler. Kbuild's command lines (and so its .cmd files) stay the same with or without a wrapper, so
changing the wrapper never rebuilds anything, as the build key ignores it too. The scripts: wrapper_scripts.py; the
hits a build had through ccache: ccache_stats.py.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..arch import MakeSettings
from ..errors import BuildError
from ..options import Wrapper
from .wrapper_scripts import write_scripts

# In the build directory: ccache's record of each compile of its latest build (CCACHE_STATSLOG), from which that
# build's hits are counted; ccache's own counters are the whole cache's, which other builds add to meanwhile.
STATS_LOG = ".pytest-kunit-ccache-stats.log"
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
    # By the compiler's name alone, as Kbuild runs it: a script always in the build directory, never at the path
    # --kunit-cross-compile names (which would overwrite the compiler with a script running itself).
    compilers = dict.fromkeys(("gcc", os.path.basename(make.compiler), *also))
    scripts = write_scripts(build_dir, program, compilers, path, tree, tool.base_dir_env)
    build_dir = build_dir.resolve()
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
    wrapped = " and ".join((make.compiler, *also))
    return CompilerWrapping(wrapper, env, f"{program} in front of {wrapped}{where}", stats_log)
