"""The sanitizers `--kunit-sanitize` can add to every kernel: the Kconfig options and boot arguments of each.

Pure data, imported only when the option is used. Whether the tree, architecture and compiler can give a sanitizer is
not decided here: its options are validated against the resulting .config like a fragment's (kconfig.py), so an
impossible one is an error naming the dependency Kconfig left unset (HAVE_ARCH_KCSAN, CC_HAS_KASAN_GENERIC, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import initramfs


@dataclass(frozen=True)
class Sanitizer:
    name: str
    kconfig: tuple[str, ...]
    kernel_args: tuple[str, ...] = ()  # on every boot of a kernel built with it


SANITIZERS: dict[str, Sanitizer] = {
    sanitizer.name: sanitizer
    for sanitizer in (
        # Every report, not just the first: KASAN stays quiet after one report unless told otherwise.
        Sanitizer("kasan", ("CONFIG_KASAN=y", "CONFIG_KASAN_GENERIC=y", "CONFIG_STACKTRACE=y"), ("kasan_multi_shot",)),
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
        Sanitizer("kcsan", ("CONFIG_DEBUG_KERNEL=y", "CONFIG_KCSAN=y")),
        # Leaks are printed on the console by every periodic scan, and the initramfs's /init makes a final scan once
        # KUnit is done (initramfs.py): what it needs of the kernel comes too.
        Sanitizer(
            "kmemleak",
            ("CONFIG_DEBUG_KERNEL=y", "CONFIG_DEBUG_KMEMLEAK=y", *initramfs.KCONFIG),
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
