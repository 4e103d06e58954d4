#!/usr/bin/env python3
"""Where one boot's time goes: QEMU and firmware, kernel start-up, KUnit, shutdown, from a built kernel's console.

Boots a kernel pytest-kunit built (its build directory in the cache) with the command the plugin's architecture
record gives, and with variants of it, reading the console as it streams and stamping each line on the host's
monotonic clock. Every boot gets an early console (x86_64 `earlyprintk=serial,ttyS0`, arm64 `earlycon`): the kernel's
first line, `Linux version`, then leaves the guest as the kernel starts, not when its console driver registers,
a second later. The phases:

    firmware   spawning the guest to the kernel's first line (QEMU's start-up, the firmware, loading the image)
    kernel     from there to the first KTAP line (the kernel's init up to KUnit's executor)
    kunit      first KTAP line to the last top-level result line
    shutdown   the last result line to the guest's exit (the reboot path)

The variants are the record's command itself (`plugin`); on x86_64 the record before issue 47 (`before`: SeaBIOS and
legacy ptys) and today's with one of them back (`seabios`, `legacy-pty`), on QEMU's microvm machine (`microvm`) or
probing one 8250 port (`one-uart`); and kunit.py's own command for the architecture on the same image (x86_64: 6.1's
and, with qboot, 6.15's; kunit.py boots a bzImage there, whose decompression this vmlinux does not have, so that row
is kunit.py's floor). Guests run under TCG (UML natively); every variant's verdicts (`ok`/`not ok` by name) must
equal the first variant's, else the exit status is 1. With --icount-shift every QEMU counts instructions at a fixed
rate, and the guest's own clock (`printk.time=1`) at KUnit's first and last lines is the boot's work, which the host's
load does not move (the `guest_*` columns; on the record's own -icount they include skipped idle time).

    bench/boot_phases.py --build ~/.cache/pytest-kunit/build/ed8240ca90db9a34 --runs 10
    bench/boot_phases.py --arch arm64 --build DIR --kernel-arg kunit.filter_glob=kunit*,example

Prints each phase's median per variant, QEMU's processor seconds (`cpu`: under -icount with sleep=off the guest never
idles, so on a busy host they say what the boot costs where the wall times say the load too), and the total's and
cpu's ratios to the first variant's, with the host's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_kunit.arch import ARCHES  # noqa: E402
from pytest_kunit.guest.launch import launcher  # noqa: E402

KTAP_START = re.compile(r"^\s*K?TAP version \d+")
TOP_RESULT = re.compile(r"^(?:not )?ok \d+ ")
RESULT = re.compile(r"^\s*((?:not )?ok) \d+ ([^#]*?)(?:\s+#.*)?$")
KERNEL_FIRST_LINE = "Linux version "
KERNEL_STAMP = re.compile(r"^\[\s*(\d+\.\d+)\] ?")
# What makes each guest's first line leave as its kernel starts (UML writes to its stdout from the start).
EARLY_CONSOLE = {"x86_64": ["earlyprintk=serial,ttyS0,115200"], "arm64": ["earlycon"], "um": []}
QBOOT = "/usr/share/qemu/qboot.rom"
# kunit.py's boots (tools/testing/kunit/kunit_kernel.py and qemu_configs/): x86_64 in 6.1 and since 6.15 (qboot),
# arm64 (its virt machine and cortex-a57), and UML (the kernel run as a program with kunit.py's mem=1G).
KUNITPY_QEMU = ["-nodefaults", "-m", "1024", "-no-reboot", "-nographic", "-serial", "stdio"]
KUNITPY_KERNEL_ARGS = ["kunit.enable=1", "kunit_shutdown=reboot"]

Command = Callable[[Path, list[str]], list[str]]


@dataclass
class Phases:
    firmware: float
    kernel: float
    kunit: float
    shutdown: float
    total: float
    cpu: float
    guest_ktap: float  # the guest's clock at the first KTAP line: with --icount-shift, its instructions up to there
    guest_end: float  # and at the last result line
    verdicts: dict[str, str]


def plugin_command(
    arch: str,
    icount: str,
    extra_qemu: Sequence[str] = (),
    kernel_args: Sequence[str] = (),
    firmware: str | None = None,
) -> Command:
    """The command the plugin boots `arch` with (its record and launcher), `extra_qemu` put first; `icount`: QEMU's
    -icount in place of the record's; `firmware` in place of the record's."""
    settings = ARCHES[arch]
    if settings.qemu is not None:
        tcg_args = ("-icount", icount) if icount else settings.qemu.tcg_args
        chosen = settings.qemu.firmware if firmware is None else firmware
        settings = replace(settings, qemu=replace(settings.qemu, tcg_args=tcg_args, firmware=chosen))
    guest = launcher(settings)

    def command(image: Path, extra_kernel: list[str]) -> list[str]:
        args = [*guest.kernel_args(), *kernel_args, *extra_kernel]
        built = guest.command(image, args, "tcg" if guest.accelerated else "none", None)
        return [built[0], *extra_qemu, *built[1:]]

    return command


def kunitpy_command(binary: str, console: str, icount: str, extra_qemu: Sequence[str]) -> Command:
    def command(image: Path, extra_kernel: list[str]) -> list[str]:
        line = " ".join([f"console={console}", *KUNITPY_KERNEL_ARGS, *extra_kernel])
        counted = ["-icount", icount] if icount else []
        return [binary, *KUNITPY_QEMU, *counted, *extra_qemu, "-kernel", str(image), "-append", line]

    return command


def kunitpy_uml(image: Path, extra_kernel: list[str]) -> list[str]:
    return [str(image), "mem=1G", "console=tty", "kunit_shutdown=halt", "kunit.enable=1", *extra_kernel]


def variants(arch: str, icount: str) -> dict[str, Command]:
    """The commands compared on `arch`, by name; `icount` ('' for the record's own) given to every QEMU."""
    if arch == "um":
        return {"plugin": plugin_command("um", icount), "kunitpy": kunitpy_uml}
    if arch == "arm64":
        cpu = ["-machine", "virt", "-cpu", "cortex-a57"]
        return {
            "plugin": plugin_command("arm64", icount),
            "kunitpy": kunitpy_command(BINARIES[arch], "ttyAMA0", icount, cpu),
        }
    return {
        "plugin": plugin_command("x86_64", icount),
        "seabios": plugin_command("x86_64", icount, firmware=""),  # the record before qboot
        # The record before both (a later pty.legacy_count= overrides the record's).
        "before": plugin_command("x86_64", icount, kernel_args=["pty.legacy_count=256"], firmware=""),
        # microvm (its own qboot-based firmware) has neither a keyboard controller nor ACPI to reset through: the
        # kernel's reboot reaches its triple fault only after seconds of other tries, unless told to go there first.
        "microvm": plugin_command("x86_64", icount, ["-machine", "microvm"], ["reboot=t"], firmware=""),
        # The record before it asked for no legacy BSD ptys (registering 256 pairs was a fifth of the kernel's init).
        "legacy-pty": plugin_command("x86_64", icount, kernel_args=["pty.legacy_count=256"]),
        "one-uart": plugin_command("x86_64", icount, kernel_args=["8250.nr_uarts=1"]),  # one port probed, not four
        "kunitpy-6.1": kunitpy_command(BINARIES[arch], "ttyS0", icount, []),
        "kunitpy-6.15": kunitpy_command(BINARIES[arch], "ttyS0", icount, ["-bios", QBOOT]),
    }


BINARIES = {"x86_64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64"}
IMAGES = {"x86_64": "vmlinux", "arm64": "arch/arm64/boot/Image", "um": "linux"}


def boot(variant: Command, image: Path, early: list[str], timeout: float) -> Phases:
    """One boot, every console line stamped on arrival."""
    command = variant(image, early)
    started = time.monotonic()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    lines: list[tuple[float, str]] = []
    pending = b""
    while chunk := os.read(process.stdout.fileno(), 65536):
        now = time.monotonic() - started
        pending += chunk
        *complete, pending = pending.split(b"\n")
        lines += [(now, raw.decode(errors="replace").rstrip("\r")) for raw in complete]
        if now > timeout:
            process.kill()
            break
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    total = time.monotonic() - started
    # The guest's processor seconds: under -icount with sleep=off QEMU never idles, so on a busy host they show the
    # work a boot takes where its wall time shows the host's load.
    return phases(lines, total, usage.ru_utime + usage.ru_stime, " ".join(command))


def phases(lines: list[tuple[float, str]], total: float, cpu: float, command: str) -> Phases:
    stamps = [float(match.group(1)) if (match := KERNEL_STAMP.match(text)) else None for _, text in lines]
    lines = [(at, KERNEL_STAMP.sub("", text, count=1)) for at, text in lines]
    first = [at for at, text in lines if KERNEL_FIRST_LINE in text]
    ktap = [index for index, (_, text) in enumerate(lines) if KTAP_START.match(text)]
    results = [index for index, (_, text) in enumerate(lines) if TOP_RESULT.match(text)]
    if not first or not ktap or not results:
        raise SystemExit(f"no kernel line, KTAP start or result in the console of: {command}")
    verdicts = {}
    for _, text in lines:
        if match := RESULT.match(text):
            verdicts[match.group(2)] = match.group(1)
    started, ended = lines[ktap[0]][0], lines[results[-1]][0]
    return Phases(
        firmware=first[0],
        kernel=started - first[0],
        kunit=ended - started,
        shutdown=total - ended,
        total=total,
        cpu=cpu,
        guest_ktap=stamps[ktap[0]] or 0.0,
        guest_end=stamps[results[-1]] or 0.0,
        verdicts=verdicts,
    )


PHASES = ("firmware", "kernel", "kunit", "shutdown", "total", "cpu", "guest_ktap", "guest_end")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, required=True, help="a build directory of pytest-kunit's cache")
    parser.add_argument("--arch", default="x86_64", choices=sorted(IMAGES), help="the build's architecture")
    parser.add_argument(
        "--icount-shift",
        type=int,
        help="run every QEMU guest on a fixed instruction count (-icount shift=N,sleep=off): the guest's clock then "
        "counts instructions, the same on a busy host as on a quiet one (the guest_* columns)",
    )
    parser.add_argument("--runs", type=int, default=5, help="boots of each variant, taken in turn (default 5)")
    parser.add_argument("--variant", help="comma-separated (default: every one of the architecture's, listed above)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a boot may take")
    parser.add_argument("--json", type=Path, help="write every boot's phases here")
    parser.add_argument(
        "--kernel-arg",
        action="append",
        default=[],
        help="added to every boot's command line, e.g. a kunit.filter_glob leaving out a suite that hangs on purpose",
    )
    args = parser.parse_args()
    image = args.build / IMAGES[args.arch]
    icount = f"shift={args.icount_shift},sleep=off" if args.icount_shift is not None else ""
    commands = variants(args.arch, icount)
    chosen = args.variant.split(",") if args.variant else list(commands)
    before = load()
    taken: dict[str, list[Phases]] = {name: [] for name in chosen}
    for _ in range(args.runs):
        for name in chosen:  # in turn, so that the host's drift reaches every variant alike
            extra = [*EARLY_CONSOLE[args.arch], "printk.time=1", *args.kernel_arg]
            taken[name].append(boot(commands[name], image, extra, args.timeout))
    if args.json:
        args.json.write_text(json.dumps({name: [asdict(run) for run in runs] for name, runs in taken.items()}))
    accel = "TCG" if args.arch != "um" else "native"
    print(f"{image} ({args.runs} boots each, {accel}; load {before} before, {load()} after); medians in seconds:")
    print(f"{'variant':14} " + " ".join(f"{phase:>10}" for phase in PHASES) + "  ratio  cpu ratio  verdicts")
    reference = taken[chosen[0]][0].verdicts
    base = [statistics.median(getattr(run, phase) for run in taken[chosen[0]]) for phase in PHASES]
    same = True
    for name, runs in taken.items():
        medians = [statistics.median(getattr(run, phase) for run in runs) for phase in PHASES]
        agree = all(run.verdicts == reference for run in runs)
        same = same and agree
        cells = " ".join(f"{value:10.3f}" for value in medians)
        ratios = f"{medians[4] / base[4]:5.2f}  {medians[5] / base[5]:9.2f}"
        print(f"{name:14} {cells}  {ratios}  {len(reference)} {'same' if agree else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
