"""What differs between the kernels pytest-kunit runs, in one place. Each fact a tree can answer is read from code the
tree defines (a C function, a module parameter, a struct member, a make rule), never from the words of a comment or
of a parameter's description; a fact no tree is at hand for is stated, with where it comes from.

Each was checked on 6.1.192 (Debian's linux-source-6.1 with kernel-patches/ applied) and 6.12 (Debian's
linux-source-6.12, no patches); what each answers there is in its docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

PACKAGED_SOURCE = "linux-source-6.1"  # the Debian package whose tarball a run builds when given no tree
DEFAULT_TARBALL = Path(f"/usr/src/{PACKAGED_SOURCE}.tar.xz")  # where that package puts it
# What the series' kunit.timeout accepts: 1 to KUNIT_MAX_TIMEOUT_SECS seconds (lib/kunit/try-catch-impl.h, patch
# 0011), ignoring anything else and keeping its 300 s. Upstream's (6.17+) takes any number of seconds.
MAX_CASE_TIMEOUT = 86400
# kunit.py's --alltests fragment, ALL_TESTS_CONFIG_PATH in its kunit.py (5.13+; 6.1 and 6.12 have one each).
ALLTESTS = PurePosixPath("tools/testing/kunit/configs/all_tests.config")
# The ELF sections an object's suite table is in: `.kunit_test_suites` (6.1, 6.12), and on 6.12 (6.7+) also
# `.kunit_init_test_suites` for suites that test __init code. Which one an object has, its own section headers say.
SUITE_TABLES = (".kunit_test_suites", ".kunit_init_test_suites")
# The bytes of `char name[N]`, struct kunit_suite's first member, where an object's suite table points: 256 on 6.1
# (`char name[256]`) and 6.12 (`const char name[256]`). suite_name_bytes reads it from a tree.
SUITE_NAME_BYTES = 256


@dataclass(frozen=True)
class TreeFeatures:
    """What the runner can ask of a tree's KUnit (detect_features): our series adds the first two to 6.1."""

    filter_list: bool  # kunit.filter_glob takes a comma-separated list of globs
    case_timeout: bool  # kunit.timeout=SECONDS sets the per-case timeout
    attributes: bool = False  # test attributes (6.6+): kunit.action=list_attr and kunit.filter
    module_filter: bool = False  # a loaded module's suites are filtered by kunit.filter_glob (6.6+)
    autorun: bool = False  # kunit.autorun=0 boots with no suite run, each then run through debugfs (6.14+; series)


# Patterns as strings, compiled (and cached by re) on first use: options.py imports this module in every pytest run.
# A C comment, or a string or character literal (kept whole: a `//` or `/*` inside one starts no comment).
_COMMENT_OR_LITERAL = r"(?s)/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
_MODULE_PARAMETER = r"\bmodule_param(?:_named|_cb|_string|_array|_unsafe)?\s*\(\s*(\w+)\s*,"


def _read(tree: Path, relative: str) -> str:
    try:
        return (tree / relative).read_text(errors="replace")
    except OSError:
        return ""


def c_code(text: str) -> str:
    """C source with its comments blanked out; string literals stay, as written."""
    return re.sub(_COMMENT_OR_LITERAL, lambda match: " " if match[0][0] == "/" else match[0], text)


def c_string_literals(code: str) -> set[str]:
    """The string literals of C code (comments already blanked out), each without its quotes."""
    return {match[0][1:-1] for match in re.finditer(_COMMENT_OR_LITERAL, code) if match[0][0] == '"'}


def defines_function(code: str, name: str) -> bool:
    """Whether C code (comments already blanked out) defines the function `name`: a declarator at the start of a
    statement (its return type before it, nothing else) followed by a body, not a call nor a prototype."""
    definition = rf"^[ \t]*(?:[A-Za-z_]\w*[\s*]+)+{re.escape(name)}\s*\([^;{{}}]*\)\s*\{{"
    return re.search(definition, code, re.MULTILINE) is not None


def module_parameters(code: str) -> set[str]:
    """The names of the module parameters C code (comments already blanked out) declares: module_param(),
    module_param_named(), module_param_cb() and the like, whose first argument is the name on the command line."""
    return set(re.findall(_MODULE_PARAMETER, code))


def filter_takes_a_list(tree: Path) -> bool:
    """kunit.filter_glob takes a comma-separated list of globs: lib/kunit/executor.c defines
    kunit_parse_filter_globs(), which the series' patch 0009 adds to split the list.
    6.1.192 with the series: yes. 6.12: no (one glob, split by kunit_parse_glob_filter())."""
    return defines_function(c_code(_read(tree, "lib/kunit/executor.c")), "kunit_parse_filter_globs")


def has_case_timeout(tree: Path) -> bool:
    """kunit.timeout=SECONDS sets the per-case timeout: a module parameter `timeout` declared in lib/kunit/try-catch.c
    (the series' patch 0011) or lib/kunit/test.c (upstream, 6.17+, a base the speed attribute scales).
    6.1.192 with the series: yes (try-catch.c). 6.12: no."""
    code = c_code(_read(tree, "lib/kunit/try-catch.c") + "\n" + _read(tree, "lib/kunit/test.c"))
    return "timeout" in module_parameters(code)


def has_attributes(tree: Path) -> bool:
    """Test attributes (6.6+): lib/kunit/executor.c declares the module parameter `filter` (kunit.filter) and
    compares kunit.action with the string "list_attr" (kunit.action=list_attr).
    6.1.192 with the series: no. 6.12: yes."""
    code = c_code(_read(tree, "lib/kunit/executor.c"))
    return "filter" in module_parameters(code) and "list_attr" in c_string_literals(code)


def filters_modules(tree: Path) -> bool:
    """A loaded module's suites are filtered by kunit.filter_glob: lib/kunit/test.c's kunit_module_init() calls
    kunit_filter_suites() (6.6+). 6.1.192 with the series: no (it runs every suite of the module, and lists none
    under kunit.action=list). 6.12: yes (and honours kunit.action=list)."""
    code = c_code(_read(tree, "lib/kunit/test.c"))
    body = re.search(r"\bkunit_module_init\s*\([^;{}]*\)\s*\{(?P<body>.*?)^\}", code, re.MULTILINE | re.DOTALL)
    return body is not None and re.search(r"\bkunit_filter_suites\s*\(", body["body"]) is not None


def has_autorun(tree: Path) -> bool:
    """kunit.autorun=0 boots with every built-in suite registered and none run, each suite then run when its debugfs
    `run` file is written to: a module parameter `autorun` declared in lib/kunit/test.c (the series' patch 0036) or
    lib/kunit/executor.c (upstream, 6.14+, whose debugfs run files, 6.8, came first; so did the series' 0035).
    6.1.192 with the series: yes (test.c). 6.12: no (run files without the parameter)."""
    code = c_code(_read(tree, "lib/kunit/test.c") + "\n" + _read(tree, "lib/kunit/executor.c"))
    return "autorun" in module_parameters(code)


def detect_features(tree: Path) -> TreeFeatures:
    """What the runner can ask of this tree's KUnit."""
    return TreeFeatures(
        filter_list=filter_takes_a_list(tree),
        case_timeout=has_case_timeout(tree),
        attributes=has_attributes(tree),
        module_filter=filters_modules(tree),
        autorun=has_autorun(tree),
    )


_SUITE_STRUCT = r"\bstruct\s+kunit_suite\s*\{\s*(?:const\s+)?char\s+name\s*\[\s*(\d+)\s*\]\s*;"


def suite_name_bytes(tree: Path) -> int | None:
    """N of `char name[N]` when it is the first member of struct kunit_suite, as include/kunit/test.h defines the
    struct; None if the struct starts otherwise or is not there. 6.1.192 with the series: 256. 6.12: 256 (const)."""
    found = re.search(_SUITE_STRUCT, c_code(_read(tree, "include/kunit/test.h")))
    return int(found[1]) if found else None


def rewritten_by_make(tree: Path) -> tuple[str, ...]:
    """What any make in an O= build directory writes again besides its goals (so a single-object make does too):
    `Makefile` and the `source` link, where the top Makefile's `outputmakefile` rule writes them (`$(call
    cmd,makefile)`, `ln -fsn $(srctree) source`), and `.missing-syscalls.d`, the dependency file of the check the
    top Kbuild's `missing-syscalls` rule runs with the compiler's flags (-Wp,-MMD), which no target reads.
    6.1.192 with the series and 6.12: all three."""
    written: list[str] = []
    recipe = _recipe(_read(tree, "Makefile"), "outputmakefile")
    if any("cmd,makefile" in line or "mkmakefile" in line for line in recipe):
        written.append("Makefile")
    if any(re.search(r"\bln\s+-\w*s\w*\s+\S+\s+source$", line.strip()) for line in recipe):
        written.append("source")
    if re.search(r"^missing-syscalls\s*:", _read(tree, "Kbuild"), re.MULTILINE):
        written.append(".missing-syscalls.d")
    return tuple(written)


def _recipe(makefile: str, target: str) -> list[str]:
    """The recipe lines (tab-indented) of the rule for `target` in a Makefile's text, make's conditionals and
    comments among them left out."""
    lines = makefile.splitlines()
    start = next((index for index, line in enumerate(lines) if re.match(rf"{re.escape(target)}\s*:", line)), None)
    if start is None:
        return []
    recipe = []
    for line in lines[start + 1 :]:
        if line.startswith("\t"):
            recipe.append(line)
        elif not re.match(r"(?:ifn?eq|ifn?def|else|endif)\b|#", line):
            break
    return recipe
