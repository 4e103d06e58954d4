"""Which accelerator guests boot under: KVM when asked for and not known to fail on this machine, else TCG. A KVM
failure is said once, and remembered in the cache for this QEMU binary and host kernel, so later runs start on TCG."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import warnings

from ..arch import Arch
from ..console.transcript import BootRecord
from ..errors import KunitWarning
from ..host.cache import load_kvm_verdict, save_kvm_verdict
from ..host.cachelayout import CacheLayout
from ..model import Settings
from ..options import Accel
from .boot import KVM_FIRST_OUTPUT, kvm_usable
from .launch import launcher


def kvm_failure(record: BootRecord) -> str:
    """Why a boot under KVM shows that KVM does not work here ('' if it does not show that): the guest hung or
    QEMU failed before KUnit began."""
    if record.ktap_started:
        return ""
    if record.timed_out and not record.console:
        return f"the guest printed nothing within {KVM_FIRST_OUTPUT:g} s (a KVM guest speaks within a second)"
    if record.timed_out:
        return "the guest hung before KUnit started"
    if record.exit_status not in (0, None) and record.outside_signal is None:
        said = next((line.strip() for line in record.console if line.strip()), "")
        return f"QEMU exited with status {record.exit_status}" + (f": {said}" if said else "")
    return ""


class Accelerator:
    """The accelerator of the next boot, for one session."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._current: str | None = None

    def current(self, arch: Arch) -> str:
        if not launcher(arch).accelerated:
            return "none"  # a UML kernel runs natively, as a host program
        if self._current is None:
            self._current = self._first(arch)
        return self._current

    def _first(self, arch: Arch) -> str:
        accel = self.settings.accel
        if accel is Accel.TCG or (accel is Accel.AUTO and not kvm_usable()):
            return "tcg"
        key, _ = self._machine(arch)
        known = load_kvm_verdict(self.settings.cache_dir, key)
        if known is not None:
            path = CacheLayout(self.settings.cache_dir).kvm_verdict(key)
            _note(f"KVM is known not to work here ({known}); using TCG (delete {path} to try KVM again)")
            return "tcg"
        return "kvm"

    def failed(self, arch: Arch, why: str) -> None:
        """KVM failed as `why` says: this session goes on under TCG, and so will later ones on this machine."""
        self._current = "tcg"
        key, machine = self._machine(arch)
        verdict = f"{why}; {machine}, {time.strftime('%Y-%m-%d %H:%M')}"
        save_kvm_verdict(self.settings.cache_dir, key, verdict)
        _note(f"KVM failed: {verdict}; falling back to TCG for this session and later ones on this machine")

    def _machine(self, arch: Arch) -> tuple[str, str]:
        """A key for this QEMU binary (path, size, modification time) on this host kernel, and its description."""
        assert arch.qemu is not None  # only QEMU guests have an accelerator
        name = self.settings.qemu or arch.qemu.binary
        binary = shutil.which(name) or name
        try:
            stat = os.stat(binary)
            identity = f"{binary}\0{stat.st_size}\0{stat.st_mtime_ns}"
        except OSError:
            identity = binary
        release = os.uname().release
        key = hashlib.sha256(f"{identity}\0{release}".encode()).hexdigest()[:16]
        return key, f"QEMU {binary} on host kernel {release}"


def _note(text: str) -> None:
    warnings.warn(KunitWarning(f"pytest-kunit: {text}"), stacklevel=3)
