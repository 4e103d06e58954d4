"""Module mode (--kunit-modules): the configuration that builds a fragment's suites as loadable modules.

Every suite symbol the fragment sets `=y` (a name ending in _TEST or _TESTS) that Kconfig declares tristate is asked
for as `=m`, with CONFIG_MODULES=y; KUnit itself stays built in, so its executor and filters run the built-in suites
at boot and the module notifier runs the others when /init loads them. Kconfig may still build one in (something
built in selects it): that is allowed, and such a suite runs at boot. Which symbols were asked for as modules is
recorded beside the build, so a warm run checks `.config` without walking the Kconfig files again.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from .kconfig import Fragment, kconfig_types, parse_fragment

ORIGIN = "--kunit-modules"
RECORD = ".pytest-kunit-modules.json"  # the suite symbols the configuration asked for as modules
_SUITE_SYMBOL = re.compile(r"^CONFIG_\w+_TESTS?$")
BUILT_IN = ("CONFIG_KUNIT",)  # the executor, filters and the module notifier: never a module


# Modules, unloadable (a guest kept up, --kunit-keep-guest, loads a suite's module again after an edit), and what the
# initramfs's /init that loads them needs: an initramfs, busybox's ELF, its script (as findings/guest_init.py's
# KCONFIG says; without them the kernel panics for want of a root file system).
MODE_LINES = (
    "CONFIG_MODULES=y",
    "CONFIG_MODULE_UNLOAD=y",
    "CONFIG_BLK_DEV_INITRD=y",
    "CONFIG_BINFMT_ELF=y",
    "CONFIG_BINFMT_SCRIPT=y",
)


def mode_fragment() -> Fragment:
    """What module mode adds to every fragment (and to its build key)."""
    return parse_fragment("\n".join(MODE_LINES), ORIGIN)


def with_modules(fragment: Fragment, symbols: tuple[str, ...]) -> Fragment:
    """The fragment with these of its `=y` entries asked for as `=m` (Kconfig may raise them back to `=y`)."""
    chosen = set(symbols)
    return Fragment(
        tuple(
            replace(entry, value="m", origin=f"{entry.origin} ({ORIGIN})", or_builtin=True)
            if entry.symbol in chosen and entry.value == "y"
            else entry
            for entry in fragment.entries
        )
    )


def module_symbols(fragment: Fragment, tree: Path, srcarch: str) -> tuple[str, ...]:
    """The fragment's `=y` suite symbols that Kconfig declares tristate (one walk of the Kconfig files)."""
    candidates = [
        entry.symbol
        for entry in fragment.entries
        if entry.value == "y" and _SUITE_SYMBOL.match(entry.symbol) and entry.symbol not in BUILT_IN
    ]
    if not candidates:
        return ()
    types = kconfig_types(tree, {name.removeprefix("CONFIG_") for name in candidates}, srcarch)
    return tuple(name for name in candidates if types.get(name.removeprefix("CONFIG_")) == "tristate")


def configured(fragment: Fragment, tree: Path, srcarch: str, build_dir: Path) -> Fragment:
    """The fragment to configure `build_dir` with, its choice recorded there for `recorded`."""
    symbols = module_symbols(fragment, tree, srcarch)
    (build_dir / RECORD).write_text(json.dumps(list(symbols)))
    return with_modules(fragment, symbols)


def recorded(fragment: Fragment, build_dir: Path) -> Fragment | None:
    """The fragment `build_dir` was configured with, from its record; None without one (configure again)."""
    try:
        symbols = json.loads((build_dir / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(symbols, list) or not all(isinstance(name, str) for name in symbols):
        return None
    return with_modules(fragment, tuple(symbols))
