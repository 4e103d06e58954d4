"""A fragment's kernel configuration: its own lines, then what the run adds to every fragment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..arch import Arch
from .kconfig import Fragment, read_fragment


@dataclass(frozen=True)
class Additions:
    """What a run adds to each fragment's own lines, gathered once at the session's start by the stages that know
    them (fragments/additions.py): the options of --kunit-sanitize and --kunit-coverage, --kunit-kconfig-add's lines,
    the pytest_kunit_kconfig hooks' for each fragment and architecture; and the refusal of what an architecture
    cannot have."""

    options: Fragment  # --kunit-sanitize's, then --kunit-coverage's
    added: Fragment  # --kunit-kconfig-add's
    hooked: Callable[[Path, Arch], Fragment]  # the pytest_kunit_kconfig hooks'
    refuse: Callable[[Path, Arch], None]  # raises ConfigError for an addition the tree's `arch` can never have


def assemble(path: Path, arch: Arch, additions: Additions) -> Fragment:
    """What the kernel of `path` is built from for `arch` besides the architecture's needs. --kunit-kconfig-add's
    lines and then the hooks' come last, so they win (as kunit.py's --kconfig_add), and key the build like the rest."""
    return read_fragment(path) + additions.options + additions.added + additions.hooked(path, arch)
