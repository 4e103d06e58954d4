"""Running the kernel's `make`: its command line (O=, ARCH=, CROSS_COMPILE=, the user's options) and environment,
its output streamed into the build log and the progress line, its deadline, its errors picked out of the log."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import threading
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..arch import Arch
from ..errors import BuildError, KunitWarning
from ..host.cache import write_atomically
from ..host.processes import group, stop
from ..host.progress import estimate
from ..options import DEFAULT_MAKE_TIMEOUT

STEPS = ".pytest-kunit-steps"
_STEP = re.compile(r"^\s+([A-Z][A-Z0-9_]*)\s+(\S+)")
_ERROR = re.compile(r"(error:|Error \d|undefined reference|\*\*\*|fatal:)")
# In the build directory: links to the tools of a --kunit-cross-compile given as a path prefix
# (/opt/cross/bin/aarch64-linux-gnu-), put on make's PATH so that Kbuild runs them by name, as it runs a prefix
# without a directory: a compiler wrapper's script of that name can then stand in front (wrapper_scripts.py), and no
# other program of that directory shadows the host's.
CROSS_TOOLS = ".pytest-kunit-cross"

# What a kernel developer's shell may export that pytest-kunit decides itself, and where it decides it. Kbuild reads
# ARCH and CROSS_COMPILE from the environment (the command line's win), O from the command line only, KBUILD_OUTPUT
# when O= is not given. Each is taken out of make's environment (CROSS_COMPILE= is on make's command line only when
# there is a prefix to give) and said once when the shell's value is not the one make gets.
OVERRIDDEN = {
    "ARCH": "each kernel is built for its --kunit-arch (ARCH= on make's command line, as kunit.py's --arch)",
    "CROSS_COMPILE": "the compiler is the architecture's own, or --kunit-cross-compile's prefix",
    "O": "each kernel is built in a directory of its own in the cache, --kunit-cache-dir (O= on make's command "
    "line, as kunit.py's --build_dir)",
    "KBUILD_OUTPUT": "each kernel is built in a directory of its own in the cache, --kunit-cache-dir (O= on make's "
    "command line, as kunit.py's --build_dir)",
}
# What Kbuild reads from the environment and kunit.py leaves there, which pytest-kunit honours as it does: on
# make's command line and in the build key with --kunit-make-options' words (a kernel built with other flags or
# another compiler is another kernel), before them, so that an option given there wins.
HONOURED = ("KCFLAGS", "KCPPFLAGS", "KAFLAGS", "LLVM", "LLVM_IAS")
# OVERRIDDEN's names said in this process: the environment is the process's, and pytest's summary shows the same
# note from several xdist workers once.
_said: set[str] = set()


def honoured_variables() -> tuple[str, ...]:
    """The make variables the shell exports that the build honours (HONOURED), as words for make's command line."""
    return tuple(f"{name}={os.environ[name]}" for name in HONOURED if name in os.environ)


def without_overridden(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without what pytest-kunit decides itself (OVERRIDDEN)."""
    return {name: value for name, value in environ.items() if name not in OVERRIDDEN}


def _say_overridden(given: Mapping[str, str]) -> None:
    """Say once a process, for each variable of OVERRIDDEN the shell exports, that make gets `given`'s value."""
    for name, why in OVERRIDDEN.items():
        exported = os.environ.get(name)
        if exported is None or exported == given.get(name, "") or name in _said:
            continue
        _said.add(name)
        message = f"pytest-kunit: {name}={exported} in the environment is not used: {why}"
        warnings.warn(KunitWarning(message), stacklevel=3)


def _cross_tools(prefix: str, build_dir: Path) -> Path:
    """CROSS_TOOLS in `build_dir`, linking each program named `prefix`* in the prefix's directory."""
    directory, start = os.path.split(os.path.abspath(os.path.expanduser(prefix)))
    links = build_dir / CROSS_TOOLS
    links.mkdir(parents=True, exist_ok=True)
    for tool in glob.glob(os.path.join(glob.escape(directory), glob.escape(start) + "*")):
        link = links / os.path.basename(tool)
        if not (link.is_symlink() and os.readlink(link) == tool):
            link.unlink(missing_ok=True)
            link.symlink_to(tool)
    return links


class ProgressCallback(Protocol):
    """What a build tells a person: work advancing (throttled) and each phase starting (always)."""

    def __call__(self, message: str) -> None: ...

    def phase(self, message: str, terminal: bool = True) -> None: ...


@dataclass(frozen=True)
class Make:
    """How `make` runs for one build: on which tree, into which directory, for which architecture, logged where."""

    tree: Path
    build_dir: Path
    arch: Arch
    jobs: int
    log: Path
    env: Mapping[str, str]  # added to make's environment (a compiler wrapper's): see environment()
    options: tuple[str, ...] = ()  # the user's make variables and flags (--kunit-make-options), after ours
    modules: bool = False  # the full make builds the modules too (--kunit-modules)
    timeout: float = DEFAULT_MAKE_TIMEOUT  # seconds one make run may take (--kunit-make-timeout); 0: no deadline

    def command(self, *targets: str) -> list[str]:
        return ["make", "-C", str(self.tree), f"O={self.build_dir}", *self.variables(), *targets]

    def in_build_dir(self, *arguments: str) -> list[str]:
        """make run by hand in the build directory, where Kbuild's own first make would start its second: options
        given here (`-o`) then reach the make that reads the targets, which they would not through that recursion."""
        top = ["make", "-C", str(self.build_dir), "-f", str(self.tree / "Makefile"), f"O={self.build_dir}"]
        return [*top, "--no-print-directory", *self.variables(), *arguments]

    def variables(self) -> list[str]:
        """ARCH= and CROSS_COMPILE= (a path prefix by its name alone: its tools are on PATH, see environment), then
        the options."""
        prefix = self.cross_prefix()
        variables = [f"ARCH={self.arch.make.arch}", *([f"CROSS_COMPILE={os.path.basename(prefix)}"] if prefix else [])]
        # --kunit-cross-compile's prefix is the architecture's by now, and among the options too (it keys the build).
        options = [word for word in self.options if not word.startswith("CROSS_COMPILE=")]
        return list(dict.fromkeys([*variables, *options]))

    def cross_prefix(self) -> str:
        """The CROSS_COMPILE prefix of the build, as the user or the architecture gave it ("": the host's)."""
        given = [word.partition("=")[2] for word in self.options if word.startswith("CROSS_COMPILE=")]
        return given[-1] if given else self.arch.make.cross_compile

    def environment(self) -> dict[str, str]:
        """make's environment: this process's without what pytest-kunit decides itself (said once), a path prefix's
        tools first on PATH, then `env` (a compiler wrapper's)."""
        prefix, build_dir = self.cross_prefix(), str(self.build_dir)
        _say_overridden(
            {"ARCH": self.arch.make.arch, "CROSS_COMPILE": prefix, "O": build_dir, "KBUILD_OUTPUT": build_dir}
        )
        env = without_overridden(os.environ)
        if os.sep in prefix:
            env["PATH"] = f"{_cross_tools(prefix, self.build_dir)}{os.pathsep}{env.get('PATH', os.defpath)}"
        return env | dict(self.env)

    def run_logged(self, command: list[str]) -> int:
        """Run `command` with its output appended to the log, within the deadline; its exit status."""
        env, output = self.environment(), {"stderr": subprocess.STDOUT}
        with (
            self.log.open("a") as stream,
            group(command, stdout=stream, env=env, **output) as process,
            self._deadline(process, command),
        ):
            return process.wait()

    def output(self, command: list[str]) -> tuple[int, str]:
        """Run `command` within the deadline, its errors appended to the log; its exit status and what it printed."""
        with (
            self.log.open("a") as stream,
            group(command, stdout=subprocess.PIPE, stderr=stream, env=self.environment(), text=True) as process,
            self._deadline(process, command),
        ):
            printed, _ = process.communicate()
            return process.returncode, printed

    def run(self, command: list[str], progress: ProgressCallback, expected: int = 0) -> int:
        """Run `command`, its output appended to the log, each build step shown; how many steps it printed. A
        failure is a BuildError naming the log's error lines; so is a make past its deadline, stopped."""
        steps = 0
        started = time.monotonic()
        output = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True, "errors": "replace"}
        with self.log.open("a") as stream, group(command, env=self.environment(), **output) as process:
            assert process.stdout is not None
            stream.write(f"# {' '.join(command)}\n")
            stream.flush()
            with self._deadline(process, command):
                for line in process.stdout:
                    stream.write(line)
                    step = _STEP.match(line)
                    if step:
                        steps += 1
                        so_far = estimate(steps, expected, time.monotonic() - started)
                        progress(f"building kernel: {so_far}: {step.group(1)} {step.group(2)}")
                returncode = process.wait()
        if returncode != 0:
            lines = self.log.read_text(errors="replace").splitlines()
            errors = [line for line in lines if _ERROR.search(line)][-20:]
            raise BuildError(
                f"The kernel build failed (make exited {returncode}).",
                f"fix the errors below; the whole log is {self.log}.",
                detail="\n".join(errors or lines[-20:]),
            )
        return steps

    @contextmanager
    def _deadline(self, process: subprocess.Popen[str], command: list[str]) -> Iterator[None]:
        """Stop make's whole process group (its jobs, the compilers) once it has run `timeout` seconds, and raise a
        BuildError naming the deadline when the block ends: a hung make would hold its worker forever."""
        if not self.timeout:
            yield
            return
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            stop(process)

        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
        if expired.is_set():
            lines = self.log.read_text(errors="replace").splitlines()[-10:]
            raise BuildError(
                f"make ran past its deadline of {_duration(self.timeout)} and was stopped (--kunit-make-timeout): "
                f"{' '.join(command)}",
                "if the build is slow rather than stuck, give it longer with --kunit-make-timeout SECONDS "
                f"(ini kunit_make_timeout; 0: no deadline); the log so far is {self.log}.",
                detail="\n".join(lines),
            )


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds:g} s"


def _recorded_steps(path: Path) -> int | None:
    """The step count a build recorded; None if there is none, or only part of one (a build killed mid-write)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _expected_steps(build_dir: Path, image: Path) -> tuple[int, str]:
    """How many steps make will likely print: unknown (0) for an incremental build (what an edit makes rebuild);
    else this configuration's last build, else the median of the cache's other builds (a new configuration)."""
    if image.exists():
        return 0, ""
    own = _recorded_steps(build_dir / STEPS)
    if own is not None:
        return own, "as its last build"
    recorded = (_recorded_steps(path) for path in build_dir.parent.glob(f"*/{STEPS}"))
    others = sorted(steps for steps in recorded if steps is not None)
    if others:
        return others[len(others) // 2], "as a build of another configuration"
    return 0, ""


def full_make(make: Make, progress: ProgressCallback, why: str = "") -> None:
    """`make <target>`: Kbuild walks the whole tree and rebuilds what changed. `why` says why no shorter way ran."""
    image = make.build_dir / make.arch.make.image
    expected, like = _expected_steps(make.build_dir, image)
    target = f"{make.arch.make.target} modules" if make.modules else make.arch.make.target
    about = f"about {expected} steps {like}" if expected else "incremental" if image.exists() else "step count unknown"
    about += f"; {why}" if why else ""
    progress.phase(f"building kernel: make -j{make.jobs} {target} ({about}); log: {make.log}")
    steps = make.run(make.command(f"-j{make.jobs}", *target.split()), progress, expected)
    steps_file = make.build_dir / STEPS
    if steps > (_recorded_steps(steps_file) or 0):
        write_atomically(steps_file, str(steps))  # the largest count: what a cold build takes
