"""pytest-kunit's hook specifications: what a conftest.py or another plugin can change without a fork.

Every implementation of a hook is called (none stops the others). docs/features.md, "Extending", has an example.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy
import pytest

if TYPE_CHECKING:
    from .arch import Arch
    from .model import Kernel

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_kunit_add_arches(config: pytest.Config, arches: dict[str, Arch]) -> None:
    """Add architectures to, or replace them in, `arches` (name -> `pytest_kunit.arch.Arch`, whose `name` must be
    its key). Called at configure time, before `--kunit-arch` is looked up in it."""


@hookspec
def pytest_kunit_kconfig(config: pytest.Config, fragment: Path, arch: Arch) -> str | Iterable[str] | None:
    """Extra kunitconfig lines (`CONFIG_X=y`, `# CONFIG_X is not set`) for the kernel built from the kunitconfig file
    `fragment`: a string of lines or an iterable of lines. They come after the fragment's own lines and
    --kunit-kconfig-add's, so they win, as kunit.py's --kconfig_add does; they must hold in the resulting .config like
    the fragment's; and they are part of the build's identity: a change builds another kernel."""


@hookspec
def pytest_kunit_kernel_args(config: pytest.Config, kernel: Kernel, args: list[str]) -> None:
    """Edit `args`, the whole kernel command line of one boot of `kernel` (one word per entry: the architecture's
    console arguments, then pytest-kunit's: kunit_shutdown, panic, kunit.filter_glob, kunit.timeout,
    kunit.action=list; then --kunit-kernel-args' words), in place. `kernel.cases` is empty for the boot that lists
    them."""


@hookspec
def pytest_kunit_qemu_command(config: pytest.Config, kernel: Kernel, command: list[str]) -> None:
    """Edit `command`, the QEMU command of one boot of `kernel` (the binary, then its arguments, the last of them
    --kunit-qemu-args' words), in place."""
