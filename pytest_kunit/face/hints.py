"""What a newcomer's first mistakes get said to them: kunit.py's habits (a glob for -k, a directory named for its
.kunitconfig) and pytest's own surprises (a path option's value taken for a test path), each with the way out."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

import pytest

from ..errors import KunitWarning
from ..fragments.files import IN_TREE_NAME, fragments_in_run
from ..fragments.session import STATE
from ..options import OPTIONS
from ..scaleout.workers import is_worker
from .nodes import KunitCase

_GLOB_CHARACTERS = re.compile(r"[*?]")  # never in a -k expression pytest reads; always in a kunit.py glob
_WORD = re.compile(r"[A-Za-z0-9_]+")
# Files pytest reads its configuration from, which a rootdir search may stop at.
_INI_NAMES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def glob_as_keywords(glob: str) -> str:
    """kunit.py's filter glob (`suite.case`, with * and ?; several with commas) as the -k expression that selects
    about the same cases: the words it names, each a substring of the node id."""
    alternatives = []
    for one in glob.split(","):
        words = [word for part in one.split(".") for word in _WORD.findall(part)]
        if words:
            alternatives.append(" and ".join(words))
    if len(alternatives) > 1:
        return " or ".join(f"({words})" if " and " in words else words for words in alternatives)
    return alternatives[0] if alternatives else ""


def keyword_glob_error(keyword: str) -> str | None:
    """A -k that pytest cannot read and that is a kunit.py glob: how to write it for pytest."""
    if not _GLOB_CHARACTERS.search(keyword):
        return None
    words = glob_as_keywords(keyword)
    instead = f"-k {words!r}" if words else "no -k at all (it selects every case)"
    return (
        f"-k {keyword!r} is a kunit.py filter glob (suite.case with * and ?), which pytest's -k does not read: -k "
        "takes a keyword expression, each word a part of a case's node id (fragment::suite::case), joined by and, "
        f"or, not. For this glob write {instead}; or name the cases by node id (FRAGMENT::SUITE::CASE, one "
        "argument each)."
    )


def split_path_option(config: pytest.Config) -> str | None:
    """A path option written with a space (`--kunit-kernel-src ~/linux`) when it moved pytest's rootdir: pytest picks
    its rootdir from the command line before plugins load, taking the value for a test path."""
    if config.getoption("rootdir", None):
        return None
    words = [str(word) for word in config.invocation_params.args]
    flags = {option.flag for option in OPTIONS if option.type.path}
    base = config.invocation_params.dir
    split = [
        (flag, value)
        for flag, value in itertools.pairwise(words)
        if flag in flags and not value.startswith("-") and (base / value).exists()
    ]
    if not split:
        return None
    named = [base / arg.split("::")[0] for arg in config.args] if config.args_source is config.ArgsSource.ARGS else []
    tests = [path.resolve() for path in named if path.exists()] or [base.resolve()]
    without = _rootdir_without_values(config, Path(os.path.commonpath(tests)))
    if without is None or without == config.rootpath:
        return None
    written = " ".join(f"{flag} {value}" for flag, value in split)
    fixed = " ".join(f"{flag}={value}" for flag, value in split)
    return (
        f"pytest-kunit: {written} is written with a space: pytest chooses its rootdir before plugins load, so it took "
        f"the value for a test path, and chose the rootdir {config.rootpath} instead of {without}; every node id is "
        f"named from there. Write {fixed}, or give --rootdir={without}."
    )


def _rootdir_without_values(config: pytest.Config, ancestor: Path) -> Path | None:
    """The rootdir pytest would have chosen from the tests alone (their common `ancestor`): the directory of the ini
    file found above them, else of a setup.py, else that ancestor with where pytest was started; None where an ini
    file between them and the one found leaves it unsure."""
    if config.inipath is not None:
        found = config.inipath.parent
        if not ancestor.is_relative_to(found):
            return None
        between = [ancestor, *ancestor.parents][: len(ancestor.parts) - len(found.parts)]
        return None if any((place / name).is_file() for place in between for name in _INI_NAMES) else found
    for place in (ancestor, *ancestor.parents):
        if (place / "setup.py").is_file():
            return place
    start = config.invocation_params.dir.resolve()
    common = Path(os.path.commonpath([start, ancestor]))
    return ancestor if common == Path(common.anchor) else common


def check_command_line(config: pytest.Config) -> None:
    """At configure time: a kunit.py glob given to -k is a usage error that says how to write it; a path option
    that moved the rootdir, a warning with the fix."""
    error = keyword_glob_error(config.getoption("keyword", "") or "")
    if error is not None:
        raise pytest.UsageError(error)
    moved = split_path_option(config)
    if moved is not None:
        config.issue_config_time_warning(KunitWarning(moved), stacklevel=2)


def no_fragment_hint(directory: Path, base: Path) -> str:
    shown = f"{directory.relative_to(base).as_posix()}/" if directory.is_relative_to(base) else f"{directory}/"
    return (
        f"kunit: no kunitconfig fragment in {shown} or below: pytest --kunit collects files named {IN_TREE_NAME} "
        f"(kunit.py run --kunitconfig={shown} reads {shown}{IN_TREE_NAME}) and NAME.kunitconfig, and found none. "
        f"Write {shown}{IN_TREE_NAME} (CONFIG_KUNIT=y and your suites' CONFIG_ options), or name a fragment: "
        "pytest --kunit path/to/x.kunitconfig."
    )


class Hints:
    """The hints said at a run's end (registered by face/hooks.py)."""

    def __init__(self) -> None:
        self.collected: bool | None = None  # whether collection found a kernel case; None where it did not run here

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = any(isinstance(item, KunitCase) for item in session.items)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        """Each directory named (or collected by default) that holds no fragment, when no case was collected; none
        for a replay, which collects its console in place of the default directories."""
        if self.collected or is_worker(config) or config.stash[STATE].replayed is not None:
            return
        base = config.invocation_params.dir.resolve()
        named = [(base / arg.split("::")[0]).resolve() for arg in config.args]
        directories = [path for path in named if path.is_dir()]
        if not directories:
            return
        found = fragments_in_run(config)
        for directory in directories:
            if not any(fragment.is_relative_to(directory) for fragment in found):
                terminalreporter.write_line(no_fragment_hint(directory, base))
