"""A fake kernel tree and a fake qemu (tests/fake/) so the whole plugin runs in seconds, with no kernel."""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FAKE = Path(__file__).resolve().parent.parent / "fake"
KUNITCONFIG = "CONFIG_KUNIT=y\nCONFIG_KUNIT_TEST=y\nCONFIG_KUNIT_EXAMPLE_TEST=y\n"
DEVELOPER_SHELL = (
    *("ARCH", "CROSS_COMPILE", "O", "KBUILD_OUTPUT"),
    *("KCFLAGS", "KCPPFLAGS", "KAFLAGS", "LLVM", "LLVM_IAS", "CCACHE_DIR"),
)


@dataclass
class FakeKernel:
    tree: Path
    cache: Path
    qemu_log: Path

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = json.loads((self.tree / "guest.json").read_text())
        return spec

    def write_spec(self, spec: dict[str, Any]) -> None:
        (self.tree / "guest.json").write_text(json.dumps(spec))

    def set_case(self, suite: str, case: str, **fields: Any) -> None:
        spec = self.spec()
        for entry in spec["suites"]:
            if entry["name"] == suite:
                for item in entry["cases"]:
                    if item["name"] == case:
                        item.update(fields)
        self.write_spec(spec)

    def set_suite(self, suite: str, **fields: Any) -> None:
        spec = self.spec()
        for entry in spec["suites"]:
            if entry["name"] == suite:
                entry.update(fields)
        self.write_spec(spec)

    def options(self, *extra: str) -> list[str]:
        return [
            # Unrelated plugins installed beside us cost seconds per inner run.
            "-p",
            "no:hypothesispytest",
            "-p",
            "no:benchmark",
            "-p",
            "no:cacheprovider" if "--lf" not in extra else "cacheprovider",
            "--kunit",
            f"--kunit-kernel-src={self.tree}",
            "--kunit-patches=none",
            f"--kunit-qemu={FAKE / 'qemu'}",
            f"--kunit-cache-dir={self.cache}",
            *extra,
        ]

    def uml_options(self, *extra: str) -> list[str]:
        """The options for a User Mode Linux run: the fake tree's `linux` is the guest, so no QEMU is named."""
        return [option for option in self.options("--kunit-arch=um", *extra) if not option.startswith("--kunit-qemu")]

    def boots(self) -> list[dict[str, Any]]:
        if not self.qemu_log.exists():
            return []
        return [json.loads(line) for line in self.qemu_log.read_text().splitlines()]

    def test_boots(self) -> list[dict[str, Any]]:
        """Boots that ran tests (not the kunit.action=list boot)."""
        return [boot for boot in self.boots() if boot["params"].get("kunit.action") not in ("list", "list_attr")]

    def filters(self) -> list[str | None]:
        return [boot["params"].get("kunit.filter_glob") for boot in self.test_boots()]


def signals_as(action: signal.Handlers) -> Callable[[], None]:
    """For a child process: SIGINT and SIGHUP at `action`. Ignored, they are what a run gets under nohup or as a
    background job of a script (which ignores SIGINT): a command two launched so must still pass."""

    def prepare() -> None:
        for number in (signal.SIGINT, signal.SIGHUP):
            signal.signal(number, action)

    return prepare


def no_traceback(result: pytest.RunResult) -> None:
    """Bad input gets one clear paragraph, never a traceback or pytest's INTERNALERROR."""
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text


@pytest.fixture
def fake_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKernel]:
    tree = tmp_path / "fake-tree"
    shutil.copytree(FAKE / "tree", tree)
    shutil.copy(FAKE / "qemu", tmp_path / "qemu")  # beside the tree, where its ARCH=um `linux` runs it from
    log = tmp_path / "qemu.log"
    monkeypatch.setenv("FAKE_QEMU_LOG", str(log))
    # What a kernel developer's shell may export, which pytest-kunit says it overrides, keys builds by or hands to
    # ccache: each test that wants one sets it (test_developer_shell.py).
    for name in DEVELOPER_SHELL:
        monkeypatch.delenv(name, raising=False)
    yield FakeKernel(tree, tmp_path / "cache", log)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory holding one kunitconfig fragment."""
    pytester.makefile(".kunitconfig", kunit=KUNITCONFIG)
    return pytester
