"""A compiler asked about its architecture's known miscompilation before it builds a kernel: such a kernel boots to
silence (sh4's decompressor spins), or worse, to verdicts its source does not give."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from ..arch import Arch
from ..errors import BuildError
from ..host.processes import run_bounded

PROBE_TIMEOUT = 60.0


def check_compiler(arch: Arch) -> None:
    """Raise BuildError if the record's compiler miscompiles the record's probe (nothing to ask: return)."""
    check, compiler = arch.make.compiler_check, arch.make.compiler
    if check is None:
        return
    with tempfile.TemporaryDirectory(prefix="pytest-kunit-probe-") as scratch:
        source, assembly = Path(scratch) / "probe.c", Path(scratch) / "probe.s"
        source.write_text(check.source)
        command = [compiler, "-O2", "-S", "-o", str(assembly), str(source)]
        result = run_bounded(command, PROBE_TIMEOUT, f"{compiler} compiling a probe", text=True)
        if result.returncode != 0 or not assembly.is_file():
            raise BuildError(
                f"The {arch.name} compiler {compiler} could not compile a ten-line probe.",
                "check the compiler runs (a broken install?), or name another with --kunit-cross-compile.",
                detail=result.stderr.strip(),
            )
        output = assembly.read_text(errors="replace")
    if re.search(check.expect, output) is None:
        # The code and its labels, without the assembler's directives.
        code = "\n".join(line for line in output.splitlines() if line.strip() and not line.startswith("\t."))
        raise BuildError(
            f"{compiler} miscompiles {arch.name} kernels: {check.fault}.",
            f"build {arch.name} with another toolchain: name its prefix with --kunit-cross-compile "
            "(ini: kunit_cross_compile).",
            detail=f"The probe:\n{check.source}compiled with -O2 to:\n{code}",
        )
