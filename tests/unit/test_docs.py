"""The README and docs/ pages hold: every relative link reaches a file (and its heading), every `pytest` example in an
`sh` block is accepted by pytest with this plugin loaded (its real option parser and its settings' checks), every
`--kunit-*` flag a page names is declared in options.py, and the README stays a front door (a screenful or two)."""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

import pytest_kunit
from pytest_kunit.options import OPTIONS

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 170
FLAGS = {option.flag for option in OPTIONS}
# The options whose value the plugin checks on disk at start-up, and what an example's value stands for there.
ON_DISK = {"--kunit-kernel-src", "--kunit-patches", "--kunit-arch-config", "--kunit-replay"}
# What a shell would put in place of the few expansions the examples use.
SHELL_STAND_INS = {"$(distcc -j)": "8", "$workers": "workers", "$work": "work", "$HOME": "~"}
GUARD_MESSAGE = "docs-guard: the command was accepted"


@pytest.fixture(scope="module", autouse=True)
def _package_imported() -> None:
    """Every module of the package, imported once: pytester's in-process runs drop what each run imported, and the
    package's start-up would otherwise be paid again by every example."""
    for module in pkgutil.walk_packages(pytest_kunit.__path__, "pytest_kunit."):
        importlib.import_module(module.name)


@functools.cache
def bench_flags() -> frozenset[str]:
    """The flags bench/'s scripts declare (`add_argument("--kunit-build", ...)`): the pages name some of them."""
    found: set[str] = set()
    for script in sorted((ROOT / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                found.update(str(arg.value) for arg in node.args if isinstance(arg, ast.Constant))
    return frozenset(found)


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _prose(text: str) -> str:
    """The page without its fenced blocks and inline code, whose brackets are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return {slug(match) for match in re.findall(r"^#+\s+(.*)$", text, flags=re.M)}


def broken_links(page: Path) -> list[str]:
    """Each relative link of the page whose file, or heading in that file, does not exist."""
    found = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.exists():
            found.append(f"{target}: no such file")
            continue
        if anchor and path.suffix == ".md" and anchor not in anchors(path):
            found.append(f"{target}: no heading '{anchor}' in {path.name}")
    return found


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    env: dict[str, str]
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page.name}:{self.line}"


def _shell_lines(block: str, first_line: int) -> list[tuple[int, str]]:
    """The block's commands, continuation lines joined, each with its line number."""
    joined: list[tuple[int, str]] = []
    pending = ""
    start = first_line
    for offset, line in enumerate(block.splitlines()):
        if not pending:
            start = first_line + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append((start, pending + line))
        pending = ""
    return joined


def pytest_examples(page: Path) -> list[Example]:
    """Every `pytest ...` command in the page's ```sh blocks, as a shell would split it."""
    text = page.read_text()
    examples = []
    for match in re.finditer(r"^```sh\n(.*?)^```", text, flags=re.S | re.M):
        first_line = text.count("\n", 0, match.start(1)) + 1
        for number, command in _shell_lines(match.group(1), first_line):
            for written, stand_in in SHELL_STAND_INS.items():
                command = command.replace(written, stand_in)
            lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words = list(lexer)
            env = {}
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
                name, _, value = words.pop(0).partition("=")
                env[name] = value
            if words[:3] == ["python3", "-m", "pytest"]:
                words = ["pytest", *words[3:]]
            if not words or words[0] != "pytest":
                continue
            args = []
            for word in words[1:]:
                if set(word) <= set(";&|"):
                    break
                args.append(word)
            examples.append(Example(page, number, env, tuple(args)))
    return examples


EXAMPLES = [example for page in pages() for example in pytest_examples(page)]


class Guard:
    """Stops the run once every plugin has configured (the kunit plugin has read and checked every setting), before
    anything is collected, built or booted."""

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        raise pytest.UsageError(GUARD_MESSAGE)


def _stand_ins(args: tuple[str, ...], home: Path) -> None:
    """The files and directories an example names and the plugin checks at start-up (a kernel tree, a patch series,
    an architecture file, a saved console), made under `home` so that the check passes as on the writer's machine."""
    words = list(args)
    for index, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if flag not in ON_DISK:
            continue
        if not equals:
            if index + 1 >= len(words):
                continue
            value = words[index + 1]
        if Path(value).is_absolute():
            continue  # named as it is on every machine: it must exist, here too
        target = home / value.removeprefix("~/")
        if flag == "--kunit-kernel-src":
            target.mkdir(parents=True, exist_ok=True)
        elif flag == "--kunit-patches" and value != "none":
            target.mkdir(parents=True, exist_ok=True)
            (target / "0001-x.patch").write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
        elif flag == "--kunit-arch-config":
            target.write_text(_toml_of(ROOT / "docs" / "architectures.md"))
        elif flag == "--kunit-replay" and value != "-":
            target.write_bytes((ROOT / "tests" / "data" / "kunit-6.1.192-filter-simple.log").read_bytes())


def _toml_of(page: Path) -> str:
    """The page's own architecture file example (its first ```toml block)."""
    match = re.search(r"^```toml\n(.*?)^```", page.read_text(), flags=re.S | re.M)
    assert match, f"{page} shows no architecture file"
    return match.group(1)


def refusal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], env: dict[str, str]
) -> str | None:
    """What pytest says refusing the command, or None when it accepts it (options and values, as --kunit reads them)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "cache"))  # never the user's cache
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _stand_ins(args, pytester.path)
    # unraisableexception's gc passes at the end cost a fifth of a second a run, and it reads no option.
    result = pytester.runpytest_inprocess(*args, "-p", "no:unraisableexception", plugins=[Guard()])
    said = [line for line in result.errlines + result.outlines if line.strip()]
    if result.ret == 0 or said == [f"ERROR: {GUARD_MESSAGE}"]:
        return None
    return "\n".join(said) or f"exit status {result.ret}"


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.name)
def test_every_relative_link_reaches_its_file_and_heading(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_or_heading_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## Its part\n\n## Against kunit.py's `kunit_module`\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[fine](docs/other.md#its-part) [gone](docs/gone.md) [wrong](docs/other.md#no-part) `[code](not/a/link)`\n"
        "[as GitHub names it](docs/other.md#against-kunitpys-kunit_module) [here](#)\n"
        "```sh\n[x](not/a/link/either)\n```\n[web](https://example.org/x)\n"
    )
    assert broken_links(page) == [
        "docs/gone.md: no such file",
        "docs/other.md#no-part: no heading 'no-part' in other.md",
    ]


def test_the_pages_show_examples() -> None:
    """The examples below are read from the pages: none found would make them check nothing."""
    shown = {example.page.name for example in EXAMPLES}
    assert {"README.md", "features.md", "architectures.md", "kunit-tool.md"} <= shown
    assert len(EXAMPLES) >= 30


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_every_pytest_example_is_accepted(
    example: Example, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert refusal(pytester, monkeypatch, example.args, example.env) is None


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("pytest --kunit --kunit-timout 10 lib/kunit/", "unrecognized arguments: --kunit-timout"),
        ("pytest --kunit --kunit-timeout ten lib/kunit/", "--kunit-timeout: 'ten' is not a whole number"),
        ("pytest --kunit --kunit-arch arm46 lib/kunit/", "--kunit-arch: 'arm46' is not one of"),
        ("pytest --kunit --kunit-kernel-src=/no/such/tree lib/kunit/", "not an existing kernel tarball or directory"),
    ],
)
def test_a_misspelt_example_is_refused(
    written: str, said: str, tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"Text.\n\n```sh\ncd ~/linux\n{written}   # a comment\n```\n")
    (example,) = pytest_examples(page)
    assert example.line == 5
    refused = refusal(pytester, monkeypatch, example.args, example.env)
    assert refused is not None and said in refused


def test_examples_are_split_as_a_shell_splits_them(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\n"
        'CCACHE_DIR=/srv/ccache pytest --kunit -k "a or b" \\\n'
        "    --kunit-jobs=$(distcc -j) x.kunitconfig; kill 1\n"
        "scripts/kunit.sh -k example\n"
        "```\n"
        "```text\npytest --not-checked\n```\n"
    )
    (example,) = pytest_examples(page)
    assert (example.line, example.env) == (2, {"CCACHE_DIR": "/srv/ccache"})
    assert example.args == ("--kunit", "-k", "a or b", "--kunit-jobs=8", "x.kunitconfig")


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.name)
def test_every_kunit_flag_named_is_declared(page: Path) -> None:
    named = set(re.findall(r"--kunit(?:-[a-z0-9]+)*", page.read_text()))
    assert named - FLAGS - bench_flags() == set()


def test_the_options_checked_on_disk_are_declared() -> None:
    assert ON_DISK <= FLAGS


def test_a_flag_no_one_declares_is_found(tmp_path: Path) -> None:
    named = set(re.findall(r"--kunit(?:-[a-z0-9]+)*", "`--kunit-timeout`, `--kunit-buld DIR` and `--kunit-*`"))
    assert named - FLAGS - bench_flags() == {"--kunit-buld"}


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES
    headings = [line for line in lines if line.startswith("## ")]
    # the kernel developer's own tree comes before this repository's own commands
    assert headings.index("## In your own kernel tree") < headings.index("## This repository: the two commands")
