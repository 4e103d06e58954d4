"""Architecture records: one per guest architecture, gathered in one table (ARCHES).

What make, Kconfig and QEMU (or the host, for UML) need for each guest, one module per family; a user's own record
comes from a file (--kunit-arch-config, userfile.py) or a hook (pytest_kunit_add_arches)."""

from __future__ import annotations

from . import arm, others, power, x86
from .shape import Arch, MakeSettings, QemuSettings, UmlSettings

__all__ = ["ARCHES", "Arch", "MakeSettings", "QemuSettings", "UmlSettings"]

ARCHES: dict[str, Arch] = {arch.name: arch for arch in (*x86.RECORDS, *arm.RECORDS, *power.RECORDS, *others.RECORDS)}
