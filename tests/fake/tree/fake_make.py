"""Fake `make` targets: the configuration targets (olddefconfig adds defaults and drops what Kconfig cannot satisfy)
and vmlinux (the guest spec, wrapped in a minimal ELF file) or arm64's Image (the same file, where arm64 leaves it);
for ARCH=um, linux: vmlinux, and beside it a program that runs it as a User Mode Linux kernel would run
(tests/fake/qemu --uml). Each target is logged to <O>/make-runs, with make's command-line variables to
<O>/make-variables and what of a developer's shell reached its environment to <O>/make-env; each walk of the tree
(the Makefile's target `.`) to <O>/walks. With "objects": true the walk also compiles the tree's C sources of vmlinux
(COMPILED) as Kbuild does, when they are newer than their objects, and a source's lines `// fake-outcome: CASE OUTCOME`
reach the guest through its object: so an image shows whether its link read a recompiled object. `make DIR/NAME.o`
compiles one alone."""

from __future__ import annotations

import contextlib
import json
import os
import re
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TREE = Path(__file__).resolve().parent
# (ARCH, make target) -> where Kbuild leaves that image, holding the guest spec (UML's `linux` is a program beside
# vmlinux: see main); the target vmlinux is vmlinux on every ARCH
BOOT_IMAGES = {
    ("arm64", "Image"): "arch/arm64/boot/Image",
    ("arm", "zImage"): "arch/arm/boot/zImage",
    ("riscv", "Image"): "arch/riscv/boot/Image",
    ("s390", "bzImage"): "arch/s390/boot/bzImage",
    ("alpha", "boot"): "arch/alpha/boot/vmlinux",
    ("sparc64", "image"): "arch/sparc/boot/image",
    ("sh", "zImage"): "arch/sh/boot/zImage",
    ("um", "linux"): "vmlinux",
}
IMAGE_TARGETS = {"vmlinux"} | {target for _, target in BOOT_IMAGES}


def image_path(target: str) -> str:
    arch = os.environ.get("ARCH", "x86_64")
    if target == "vmlinux":
        return "vmlinux"
    if (arch, target) not in BOOT_IMAGES:
        raise SystemExit(f"make[1]: *** No rule to make target '{target}' for ARCH={arch}.  Stop.")
    return BOOT_IMAGES[(arch, target)]


COMPILED = ("lib/kunit/kunit-example-test.c",)  # sources of vmlinux compiled into objects of their own
_OUTCOME = re.compile(r"^// fake-outcome: (\w+) (\w+)$", re.MULTILINE)


def kconfig_lines(path: Path) -> Iterator[str]:
    """The Kconfig file's lines with every `source "file"` followed, as Kconfig does."""
    for line in path.read_text().splitlines():
        source = re.match(r'\s*source "(.*)"', line)
        if source:
            yield from kconfig_lines(TREE / source.group(1))
        else:
            yield line


def kconfig_files(path: Path) -> Iterator[str]:
    """The Kconfig files Kconfig reads, relative to the tree: `path` and every file it sources."""
    yield str(path.relative_to(TREE))
    for line in path.read_text().splitlines():
        source = re.match(r'\s*source "(.*)"', line)
        if source:
            yield from kconfig_files(TREE / source.group(1))


def symbols() -> tuple[dict[str, list[str]], set[str]]:
    """Each symbol's dependencies ("!X" for one off), and the symbols that default to y."""
    defined: dict[str, list[str]] = {}
    on_by_default: set[str] = set()
    name = None
    for line in kconfig_lines(TREE / "Kconfig"):
        start = re.match(r"config (\w+)", line)
        if start:
            name = start.group(1)
            defined[name] = []
        need = re.match(r"\s+depends on (.*)", line)
        if need and name:
            defined[name] += re.findall(r"!?\w+", need.group(1))  # "!X": only while X is off
        if name and re.match(r"\s+default y", line):
            on_by_default.add(name)
    return defined, on_by_default


def olddefconfig(dotconfig: Path) -> None:
    values: dict[str, str] = {}
    unset_by_user: set[str] = set()
    for line in dotconfig.read_text().splitlines():
        match = re.match(r"CONFIG_(\w+)=(.*)", line)
        if match:
            values[match.group(1)] = match.group(2)
        unset = re.match(r"# CONFIG_(\w+) is not set", line)
        if unset:
            values.pop(unset.group(1), None)
            unset_by_user.add(unset.group(1))
    defined, on_by_default = symbols()
    for name in sorted(on_by_default - unset_by_user):
        values.setdefault(name, "y")
    changed = True
    while changed:
        changed = False
        for name in list(values):
            if name not in defined or any((dep.lstrip("!") in values) == dep.startswith("!") for dep in defined[name]):
                del values[name]
                changed = True
    # As Kconfig's, the symbols left off stay written off: a second pass (syncconfig after olddefconfig) keeps them so.
    off = "".join(f"# CONFIG_{name} is not set\n" for name in sorted(unset_by_user & defined.keys()))
    dotconfig.write_text("".join(f"CONFIG_{k}={v}\n" for k, v in values.items()) + off)


# COMMAND_LINE_SIZE by ARCH (sh's is asm-generic's 512): the size of the image's boot_command_line.
COMMAND_LINE_SIZES = {"m68k": 256, "sh": 512, "alpha": 256, "um": 4096}


def elf_image(payload: bytes, command_line_size: int) -> bytes:
    """A minimal ELF64 file carrying `payload`: its header, the payload, then its section headers (none, a symbol
    table, its strings), last as in a real vmlinux, so a truncated image is told by its ELF structure; the symbol
    table holds the kernel's `char boot_command_line[COMMAND_LINE_SIZE]`."""
    strings = b"\0boot_command_line\0"
    symbols = bytes(24) + struct.pack("<IBBHQQ", 1, 0x11, 0, 0, 0, command_line_size)  # global, an object
    section_table = 64 + len(payload)
    data = section_table + 3 * 64
    symtab = struct.pack("<IIQQQQIIQQ", 0, 2, 0, 0, data + len(strings), len(symbols), 2, 1, 8, 24)
    strtab = struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, data, len(strings), 0, 0, 1, 0)
    fields = struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, section_table, 0, 64, 56, 0, 64, 3, 0)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + fields
    return header + payload + bytes(64) + symtab + strtab + strings + symbols


def suite_source(suite: dict[str, Any]) -> str:
    """A suite as C, laid out as KUnit's: names and attributes are data, what a case does is code."""
    cases, functions = [], []
    for number, case in enumerate(suite["cases"]):
        behaviour = {key: value for key, value in case.items() if key not in ("name", "attributes")}
        code = zlib.crc32(json.dumps(behaviour, sort_keys=True).encode())
        functions.append(f'static void case_{number}(void *test) {{ __asm__ volatile("" :: "r"({code}u)); }}')
        speed = {"slow": 2, "very_slow": 3}.get(case.get("attributes", {}).get("speed"), 0)
        cases.append(f'{{ case_{number}, "{case["name"]}", {speed} }},')
    return "\n".join(
        [
            "struct kunit_case { void (*run_case)(void *); const char *name; int speed; };",
            "struct kunit_suite { const char name[256]; struct kunit_case *test_cases; };",
            *functions,
            f"static struct kunit_case cases[] = {{ {' '.join(cases)} {{ 0 }} }};",
            f'static struct kunit_suite suite = {{ .name = "{suite["name"]}", .test_cases = cases }};',
            'static struct kunit_suite *table[] __attribute__((used, section(".kunit_test_suites"))) = { &suite };',
        ]
    )


def link_objects(spec: dict[str, Any], out: Path) -> None:
    """With "objects": true, what Kbuild leaves beside vmlinux: each suite compiled into an object of its own, KUnit's
    core (lib/kunit/core.c) as another, and the thin archive vmlinux.a naming them in link order."""
    objects = out / "lib/kunit"
    objects.mkdir(parents=True, exist_ok=True)
    members = []
    for suite in spec["suites"]:
        source = objects / f"{suite['name']}-test.c"
        source.write_text(suite_source(suite))
        members.append(objects / f"{suite['name']}-test.o")
        subprocess.run(["gcc", "-O2", "-c", "-o", str(members[-1]), str(source)], check=True)
    members += [out / object_of(source) for source in COMPILED if (out / object_of(source)).exists()]
    members.append(objects / "core.o")
    subprocess.run(["gcc", "-O2", "-c", "-o", str(members[-1]), str(TREE / "lib/kunit/core.c")], check=True)
    (out / "vmlinux.a").unlink(missing_ok=True)
    subprocess.run(["ar", "cDPrST", "vmlinux.a", *(str(m.relative_to(out)) for m in members)], cwd=out, check=True)


def object_of(source: str) -> str:
    return source[: -len(".c")] + ".o"


def compile_source(source: str, out: Path) -> None:
    """SOURCE.c into SOURCE.o (a real object holding the source's fake outcomes) and Kbuild's record of its command
    and dependencies beside it, .SOURCE.o.cmd."""
    obj = out / object_of(source)
    obj.parent.mkdir(parents=True, exist_ok=True)
    print(f"  CC      {obj.relative_to(out)}", flush=True)
    outcomes = ";".join(f"{case}={outcome}" for case, outcome in _OUTCOME.findall((TREE / source).read_text()))
    generated = obj.with_suffix(".fake.c")
    generated.write_text(f'__attribute__((used)) static const char outcomes[] = "FAKE-OUTCOMES:{outcomes};";\n')
    subprocess.run(["gcc", "-c", "-o", str(obj), str(generated)], check=True)
    generated.unlink()
    name, path = obj.relative_to(out), TREE / source
    # fixdep's list: the source and each header it includes (from the tree's include/, the -I directory).
    included = re.findall(r"^#include <(.+)>$", path.read_text(), re.MULTILINE)
    deps = [str(path), *(str(TREE / "include" / header) for header in included if (TREE / "include" / header).exists())]
    listed = " \\\n  ".join(deps)
    command = f"gcc -I{TREE}/include -c -o {name} {path}"
    record = f"savedcmd_{name} := {command}\n\nsource_{name} := {path}\n\ndeps_{name} := \\\n  {listed}\n"
    (obj.parent / f".{obj.name}.cmd").write_text(record)


def compiled_outcomes(out: Path) -> dict[str, str]:
    """The fake outcomes the compiled sources' objects hold."""
    outcomes: dict[str, str] = {}
    for source in COMPILED:
        obj = out / object_of(source)
        if obj.exists():
            found = re.search(rb"FAKE-OUTCOMES:([^\0]*);", obj.read_bytes())
            for pair in found.group(1).decode().split(";") if found and found.group(1) else []:
                case, outcome = pair.split("=")
                outcomes[case] = outcome
    return outcomes


MODULE_SOURCE = "lib/kunit/fake-module-test.c"  # the module of the suite whose "config" is FAKE_MODULE_TEST
MODULE = "lib/kunit/fake-module-test.ko"


def build_module(out: Path) -> None:
    """MODULE from MODULE_SOURCE, as Kbuild makes a module: its object (with its .cmd record), Kbuild's .mod list
    of its objects, and the .ko: the suite's tables (suite_source), a .modinfo section, and the suite as JSON (with
    the outcomes the source's `// fake-outcome:` lines give) for the fake QEMU to run when /init loads it."""
    compile_source(MODULE_SOURCE, out)
    outcomes = dict(_OUTCOME.findall((TREE / MODULE_SOURCE).read_text()))
    spec = json.loads((TREE / "guest.json").read_text())
    suite = next(suite for suite in spec["suites"] if suite.get("config") == "FAKE_MODULE_TEST")
    for case in suite["cases"]:
        if case["name"] in outcomes:
            case["outcome"] = outcomes[case["name"]]
    module = out / MODULE
    generated = module.with_suffix(".fake.c")
    blob = json.dumps(suite).replace("\\", "\\\\").replace('"', '\\"')
    generated.write_text(
        suite_source(suite)
        + '\n__attribute__((used, section(".modinfo"))) static const char info[] = "name=fake_module_test\\0depends=";'
        + f'\n__attribute__((used)) static const char fake[] = "FAKE-MODULE:{blob}:END";\n'
    )
    print(f"  LD [M]  {MODULE}", flush=True)
    subprocess.run(["gcc", "-O2", "-c", "-o", str(module), str(generated)], check=True)
    generated.unlink()
    (out / MODULE.replace(".ko", ".mod")).write_text(object_of(MODULE_SOURCE) + "\n")


def walk(out: Path) -> None:
    """Kbuild's walk of the tree: every object older than its source compiled again."""
    with (out / "walks").open("a") as walks:
        walks.write("walk\n")
    if not json.loads((TREE / "guest.json").read_text()).get("objects"):
        return
    for source in COMPILED:
        obj = out / object_of(source)
        if not obj.exists() or obj.stat().st_mtime_ns < (TREE / source).stat().st_mtime_ns:
            compile_source(source, out)


def gcov_program(out: Path) -> str:
    """lib/kunit/fake-coverage.c built with gcc --coverage, its .gcno beside its object as Kbuild leaves them."""
    obj = out / "lib/kunit/fake-coverage.o"
    obj.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "--coverage", "-c", str(TREE / "lib/kunit/fake-coverage.c"), "-o", str(obj)], check=True)
    program = out / "lib/kunit/fake-coverage"
    subprocess.run(["gcc", "--coverage", str(obj), "-o", str(program)], check=True)
    return str(program)


DEVELOPER_SHELL = ("ARCH", "CROSS_COMPILE", "O", "KBUILD_OUTPUT", "KCFLAGS", "LLVM", "CCACHE_DIR")


def main(target: str, build_dir: str) -> int:
    out = Path(build_dir)
    out.mkdir(parents=True, exist_ok=True)
    if target == "walk":
        walk(out)
        return 0
    # The variables make was given on its command line, as make passes them on (after MAKEFLAGS' `--`).
    variables = os.environ.get("MAKEFLAGS", "").partition(" -- ")[2]
    # What of a kernel developer's shell reached make's environment (a command line's variable is exported there too).
    shell = {name: os.environ[name] for name in DEVELOPER_SHELL if name in os.environ}
    records = {"make-runs": target, "make-variables": json.dumps([target, variables]), "make-env": json.dumps(shell)}
    for name, line in records.items():
        record = out / name
        previous = record.stat().st_mtime_ns if record.exists() else None
        with record.open("a") as stream:
            stream.write(f"{line}\n")
        if previous is not None:  # a record for the tests, not a file Kbuild writes: its time tells nothing
            os.utime(record, ns=(previous, previous))
    dotconfig = out / ".config"
    if target == "modules" or target.endswith(".ko"):
        if target == "modules":  # what Kbuild leaves: the list of every module it built
            built = "CONFIG_FAKE_MODULE_TEST=m" in dotconfig.read_text()
            (out / "modules.order").write_text(f"{MODULE}\n" if built else "")
            if not built:
                return 0
        elif target != MODULE:
            print(f"make[1]: *** No rule to make target '{target}'.  Stop.")
            return 2
        else:  # Kbuild's single-module make: a modules.order of its own, then removed
            (out / "modules.order").unlink(missing_ok=True)
        build_module(out)
        # modpost's symbol list and its command record, written by every modules build (6.1 names both)
        (out / "Module.symvers").write_text(f"0x00000000\tfake_symbol\t{MODULE}\tEXPORT_SYMBOL\t\n")
        (out / ".Module.symvers.cmd").write_text(f"cmd_Module.symvers := modpost {target}\n")
    elif target.endswith(".o"):
        if target[: -len(".o")] + ".c" not in COMPILED:  # what Kbuild says of an object it has no rule for
            print(f"make[1]: *** No rule to make target '{target}'.  Stop.")
            return 2
        if os.environ.get("FAKE_PREPARE_WRITES"):  # as Kbuild's prepare step does when, say, the release changed
            (out / os.environ["FAKE_PREPARE_WRITES"]).parent.mkdir(parents=True, exist_ok=True)
            (out / os.environ["FAKE_PREPARE_WRITES"]).write_text("written\n")
        compile_source(target[: -len(".o")] + ".c", out)
    elif target in ("olddefconfig", "syncconfig"):
        olddefconfig(dotconfig)
        if target == "syncconfig":  # what Kbuild's syncconfig leaves: auto.conf, and the Kconfig files it read
            (out / "include/config").mkdir(parents=True, exist_ok=True)
            (out / "include/config/auto.conf").write_text(dotconfig.read_text())
            listed = "".join(f"\t{name} \\\n" for name in kconfig_files(TREE / "Kconfig"))
            (out / "include/config/auto.conf.cmd").write_text(f"deps_config := \\\n{listed}\n")
    elif target in IMAGE_TARGETS:
        # The compiler from make's PATH, as Kbuild runs it (a compiler wrapper's script, if any): $(CROSS_COMPILE)gcc,
        # or clang for LLVM=1.
        compiler = "clang" if os.environ.get("LLVM") == "1" else os.environ.get("CROSS_COMPILE", "") + "gcc"
        with contextlib.suppress(OSError):  # a compiler that is not there: the tests that need one look for its runs
            subprocess.run([compiler, "-E", "-x", "c", os.devnull, "-o", os.devnull], capture_output=True, check=False)
        print("  CC      lib/kunit/test.o", flush=True)
        if "CONFIG_FAKE_BUILD_ERROR=y" in dotconfig.read_text():
            print("lib/kunit/test.c:42:7: error: 'boom' undeclared (first use in this function)")
            return 2
        if "CONFIG_FAKE_BUILD_HANG=y" in dotconfig.read_text():
            print("  CC      lib/kunit/hang.o", flush=True)
            (out / "hanging").touch()  # said all it will say: from here on only a signal ends it
            time.sleep(3600)
        print("  LD      vmlinux", flush=True)
        image = out / image_path(target)
        image.parent.mkdir(parents=True, exist_ok=True)
        spec = json.loads((TREE / "guest.json").read_text())
        # A suite with a "config" is compiled in only when its symbol is enabled, as obj-$(CONFIG_X) makes it.
        enabled = set(dotconfig.read_text().splitlines())
        spec["suites"] = [
            suite for suite in spec["suites"] if f"CONFIG_{suite.get('config')}=y" in enabled or "config" not in suite
        ]
        # Out-of-tree suites placed by the runner: "compiled" in when their symbol is enabled.
        for fake_suite in sorted(TREE.glob("pytest-kunit/*/fake-suite.json")):
            suite = json.loads(fake_suite.read_text())
            if f"CONFIG_{suite['config']}=y" in dotconfig.read_text():
                spec["suites"] += suite["suites"]
        if spec.get("objects"):
            link_objects(spec, out)
            spec["core"] = zlib.crc32((TREE / "lib/kunit/core.c").read_bytes())  # KUnit's code is in the image too
            outcomes = compiled_outcomes(out)
            for case in (case for suite in spec["suites"] for case in suite["cases"] if case["name"] in outcomes):
                case["outcome"] = outcomes[case["name"]]
        if "CONFIG_GCOV_KERNEL=y" in dotconfig.read_text():
            spec["gcov"] = gcov_program(out)
        spec["kmemleak"] = "CONFIG_DEBUG_KMEMLEAK=y" in dotconfig.read_text()
        size = spec.get("command_line_size") or COMMAND_LINE_SIZES.get(os.environ.get("ARCH", "x86_64"), 2048)
        spec["command_line_size"] = size
        image.write_bytes(elf_image(json.dumps(spec).encode(), size))
        (out / "lib/kunit").mkdir(parents=True, exist_ok=True)
        if not (out / "lib/kunit/.kunit-example-test.o.cmd").exists():  # where a compile left none
            (out / "lib/kunit/.kunit-example-test.o.cmd").write_text("cmd\n")
        if target == "linux":
            uml = out / "linux"
            uml.write_text(f'#!/bin/sh\nexec python3 "{TREE.parent / "qemu"}" --uml "$0" "$@"\n')
            uml.chmod(0o755)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
