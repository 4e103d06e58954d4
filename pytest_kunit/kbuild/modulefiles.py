"""The loadable modules of a --kunit-modules build: which Kbuild made (modules.order), what each needs (.modinfo's
`depends=`, written by modpost), and the suites each registers (its suite tables: the guest's list boot cannot list
them, as 6.1's executor lists only built-in suites and its module notifier runs a module's suites whatever
kunit.action says)."""

from __future__ import annotations

import os
from pathlib import Path

from ..model import SuiteModule
from .records import NotARecord, elf_sections
from .suitenames import suite_cases

ORDER = "modules.order"


def module_paths(build_dir: Path) -> list[str]:
    """The modules Kbuild built, relative to the build directory, in modules.order's order (6.1 lists `.ko` files,
    6.3 and later the `.o` each is linked from)."""
    try:
        lines = (build_dir / ORDER).read_text().split()
    except OSError:
        return []
    return [os.path.splitext(os.path.normpath(line))[0] + ".ko" for line in lines]


def _modinfo(data: bytes) -> dict[str, str]:
    sections = elf_sections(data)
    info = next((section for section in sections if section.name == ".modinfo"), None)
    if info is None:
        raise NotARecord("no .modinfo section")
    fields: dict[str, str] = {}
    for entry in data[info.offset : info.offset + info.size].split(b"\0"):
        key, equals, value = entry.decode(errors="replace").partition("=")
        if equals:
            fields.setdefault(key, value)
    return fields


def read_module(build_dir: Path, path: str) -> SuiteModule:
    """One built module. Raises Opaque when its suite tables cannot be read for sure, NotARecord or OSError when it
    is not a whole module."""
    fields = _modinfo((build_dir / path).read_bytes())
    name = fields.get("name") or Path(path).stem.replace("-", "_")
    depends = tuple(word for word in fields.get("depends", "").split(",") if word)
    return SuiteModule(name, path, depends, suite_cases(build_dir / path))


def built_modules(build_dir: Path) -> tuple[SuiteModule, ...]:
    """Every module the build made, each after the modules it needs (then in modules.order's order). Raises Opaque
    (a suite table that cannot be read), NotARecord or OSError (a module that is not whole)."""
    modules = {module.name: module for module in (read_module(build_dir, path) for path in module_paths(build_dir))}
    ordered: dict[str, SuiteModule] = {}

    def place(module: SuiteModule, seen: tuple[str, ...]) -> None:
        if module.name in ordered or module.name in seen:
            return
        for needed in module.depends:
            if needed in modules:
                place(modules[needed], (*seen, module.name))
        ordered[module.name] = module

    for module in modules.values():
        place(module, ())
    return tuple(ordered.values())


__all__ = ["ORDER", "built_modules", "module_paths", "read_module"]
