"""Running the kernel's `make`: its command line (O=, ARCH=, CROSS_COMPILE=, the user's options), its output
streamed into the build log and the progress line, its errors picked out of the log."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..arch import Arch
from ..errors import BuildError
from ..host.cache import write_atomically
from ..host.processes import group
from ..host.progress import estimate

STEPS = ".pytest-kunit-steps"
_STEP = re.compile(r"^\s+([A-Z][A-Z0-9_]*)\s+(\S+)")
_ERROR = re.compile(r"(error:|Error \d|undefined reference|\*\*\*|fatal:)")


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
    env: Mapping[str, str]
    options: tuple[str, ...] = ()  # the user's make variables and flags (--kunit-make-options), after ours
    modules: bool = False  # the full make builds the modules too (--kunit-modules)

    def command(self, *targets: str) -> list[str]:
        return ["make", "-C", str(self.tree), f"O={self.build_dir}", *self.variables(), *targets]

    def in_build_dir(self, *arguments: str) -> list[str]:
        """make run by hand in the build directory, where Kbuild's own first make would start its second: options
        given here (`-o`) then reach the make that reads the targets, which they would not through that recursion."""
        top = ["make", "-C", str(self.build_dir), "-f", str(self.tree / "Makefile"), f"O={self.build_dir}"]
        return [*top, "--no-print-directory", *self.variables(), *arguments]

    def variables(self) -> list[str]:
        variables = [f"ARCH={self.arch.make.arch}"]
        if self.arch.make.cross_compile:
            variables.append(f"CROSS_COMPILE={self.arch.make.cross_compile}")
        # --kunit-cross-compile's prefix is the architecture's by now, and among the options too (it keys the build).
        return list(dict.fromkeys([*variables, *self.options]))

    def run(self, command: list[str], progress: ProgressCallback, expected: int = 0) -> int:
        """Run `command`, its output appended to the log, each build step shown; how many steps it printed. A
        failure is a BuildError naming the log's error lines."""
        steps = 0
        started = time.monotonic()
        output = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True, "errors": "replace"}
        with self.log.open("a") as stream, group(command, env=dict(self.env), **output) as process:
            assert process.stdout is not None
            stream.write(f"# {' '.join(command)}\n")
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
