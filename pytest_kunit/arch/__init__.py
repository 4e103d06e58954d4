"""Architecture records: one per guest architecture, gathered in one table (ARCHES).

What make, Kconfig and QEMU (or the host, for UML) need for each guest, as data: one TOML file per architecture in
records/, read by the loader that reads a user's own (--kunit-arch-config, userfile.py); a plugin can add records
through the pytest_kunit_add_arches hook."""

from __future__ import annotations

from pathlib import Path

from .shape import Arch, MakeSettings, QemuSettings, UmlSettings
from .userfile import load

__all__ = ["ARCHES", "Arch", "MakeSettings", "QemuSettings", "UmlSettings"]

RECORDS = Path(__file__).resolve().parent / "records"
ARCHES: dict[str, Arch] = {name: arch for path in sorted(RECORDS.glob("*.toml")) for name, arch in load(path).items()}
