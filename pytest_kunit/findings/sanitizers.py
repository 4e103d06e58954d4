"""The sanitizers `--kunit-sanitize` can add to every kernel: the Kconfig options and boot arguments of each.

Imported only when the option is used. A sanitizer the architecture's Kconfig never offers (no `select
HAVE_ARCH_KASAN` in arch/<srcarch>/Kconfig) is refused before anything is configured (`unsupported`); beyond that,
whether the tree, architecture and compiler can give one is not decided here: its options are validated against the
resulting .config like a fragment's (kconfig.py), so an impossible one is an error naming the dependency Kconfig
left unset (HAVE_ARCH_KASAN on i386, whose x86 Kconfig selects it only if X86_64; CC_HAS_KASAN_GENERIC, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..arch import Arch
from ..errors import ConfigError
from . import guest_init


@dataclass(frozen=True)
class Sanitizer:
    name: str
    kconfig: tuple[str, ...]
    kernel_args: tuple[str, ...] = ()  # on every boot of a kernel built with it
    arch_symbol: str = ""  # what an architecture's Kconfig selects where it has this sanitizer


SANITIZERS: dict[str, Sanitizer] = {
    sanitizer.name: sanitizer
    for sanitizer in (
        # Every report, not just the first: KASAN stays quiet after one report unless told otherwise.
        Sanitizer(
            "kasan",
            ("CONFIG_KASAN=y", "CONFIG_KASAN_GENERIC=y", "CONFIG_STACKTRACE=y"),
            ("kasan_multi_shot",),
            "HAVE_ARCH_KASAN",
        ),
        Sanitizer("ubsan", ("CONFIG_UBSAN=y",)),
        Sanitizer("lockdep", ("CONFIG_DEBUG_KERNEL=y", "CONFIG_PROVE_LOCKING=y")),
        Sanitizer("atomic-sleep", ("CONFIG_DEBUG_KERNEL=y", "CONFIG_DEBUG_ATOMIC_SLEEP=y")),
        Sanitizer(
            "debugobjects",
            (
                "CONFIG_DEBUG_KERNEL=y",
                "CONFIG_DEBUG_OBJECTS=y",
                "CONFIG_DEBUG_OBJECTS_FREE=y",
                "CONFIG_DEBUG_OBJECTS_TIMERS=y",
                "CONFIG_DEBUG_OBJECTS_WORK=y",
            ),
        ),
        Sanitizer("kcsan", ("CONFIG_DEBUG_KERNEL=y", "CONFIG_KCSAN=y"), arch_symbol="HAVE_ARCH_KCSAN"),
        # Leaks are printed on the console by every periodic scan, and the initramfs's /init makes a final scan once
        # KUnit is done (guest_init.py): what it needs of the kernel comes too.
        Sanitizer(
            "kmemleak",
            ("CONFIG_DEBUG_KERNEL=y", "CONFIG_DEBUG_KMEMLEAK=y", *guest_init.KCONFIG),
            ("kmemleak.verbose=1",),
        ),
    )
}


def parse_names(text: str) -> tuple[str, ...]:
    """`kasan,ubsan` as known names in the table's order, each once; ValueError names what is unknown."""
    names = {name.strip().lower() for name in text.replace(" ", ",").split(",") if name.strip()}
    unknown = sorted(names - set(SANITIZERS))
    if unknown or not names:
        raise ValueError(", ".join(unknown) or "nothing")
    return tuple(name for name in SANITIZERS if name in names)


def kconfig_lines(names: Iterable[str]) -> dict[str, list[str]]:
    """Each chosen sanitizer's kunitconfig lines, by name."""
    return {name: list(SANITIZERS[name].kconfig) for name in names}


def kernel_args(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(arg for name in names for arg in SANITIZERS[name].kernel_args)


def unsupported(names: Iterable[str], tree: Path, srcarch: str) -> list[tuple[str, str]]:
    """The sanitizers among `names` that the architecture's Kconfig (arch/<srcarch>/Kconfig of `tree`) never selects
    the symbol of, each with that symbol: no configuration of that architecture can have them."""
    kconfig = tree / "arch" / srcarch.partition("/")[0] / "Kconfig"
    try:
        text = kconfig.read_text(errors="replace")
    except OSError:
        return []  # not a tree we can read for it: Kconfig's own check still names what is missing
    refused = []
    for name in names:
        symbol = SANITIZERS[name].arch_symbol
        if symbol and not re.search(rf"^\s*select\s+{symbol}\b", text, re.MULTILINE):
            refused.append((name, symbol))
    return refused


def refuse_unsupported(names: Iterable[str], tree: Path, arch: Arch) -> None:
    """Refuse the sanitizers among `names` that `arch` can never have on `tree` (unsupported), before anything is
    configured."""
    refused = unsupported(names, tree, arch.make.source_arch)
    if refused:
        chosen = ", ".join(name for name, _ in refused)
        raise ConfigError(
            f"--kunit-sanitize {chosen}: arch {arch.name} cannot have it: its Kconfig "
            f"(arch/{arch.make.source_arch}/Kconfig) never selects {', '.join(symbol for _, symbol in refused)}.",
            f"leave {chosen} out of --kunit-sanitize for arch {arch.name}.",
        )
