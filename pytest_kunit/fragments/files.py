"""The kunitconfig fragments a run collects: which files are fragments, and the ones the xdist controller finds itself
(it collects no items), the only ones its image service builds for workers, each under a token it hands out, so no
worker ever names a path to the controller.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

# A fragment whose lines include this is collected only when named on the command line (suites that fail on purpose).
MANUAL = "# pytest-kunit: manual"
# --kunit-alltests' fragment, found when first asked (fragments/alltests.py): collected alone when no path is named,
# beside the paths named otherwise.
ALLTESTS_FRAGMENT = pytest.StashKey[Callable[[], Path]]()
IN_TREE_NAME = ".kunitconfig"  # kunit.py's name for a subsystem's fragment: fs/ext4/.kunitconfig


def is_fragment(path: Path) -> bool:
    return path.name == IN_TREE_NAME or path.suffix == ".kunitconfig"


def _named_on_command_line(config: pytest.Config, path: Path) -> bool:
    """Whether an argument names this fragment, or the directory holding it as `.kunitconfig` (kunit.py's habit)."""
    base = config.invocation_params.dir
    for arg in config.args:
        named = (base / arg.split("::")[0]).resolve()
        if named == path.resolve() or (path.name == IN_TREE_NAME and named == path.resolve().parent):
            return True
    return False


def collects(config: pytest.Config, path: Path) -> bool:
    """Whether `path` is a kunitconfig fragment this run collects."""
    if not is_fragment(path):
        return False
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    return MANUAL not in text.splitlines() or _named_on_command_line(config, path)


def fragment_name(rootpath: Path, path: Path) -> str:
    """The one name the controller and every worker give a fragment: its path under the rootdir (which may lie
    elsewhere on another host), else its absolute path."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(rootpath.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


@dataclass(frozen=True)
class FragmentTable:
    paths: dict[str, Path]  # by token: the controller's own file
    tokens: dict[str, str]  # by fragment_name: what workers are handed

    def path(self, token: object) -> Path | None:
        """The file behind a token the controller handed out; None for anything else a worker may send."""
        return self.paths.get(token) if isinstance(token, str) else None


def fragments_in_run(config: pytest.Config) -> list[Path]:
    """The fragments this run collects, found as pytest will find them (its arguments, its ignore rules), resolved.
    For shared kernels a miss only means a fragment built alone, an extra one only more suites in a union; for the
    image service a miss is a worker refused with the fragment's name, an extra one a fragment no worker asks for."""
    found: dict[Path, None] = {}
    base = config.invocation_params.dir
    alltests = config.stash.get(ALLTESTS_FRAGMENT, None)
    if alltests is not None and config.args_source is not pytest.Config.ArgsSource.ARGS:
        return [alltests().resolve()]

    def ignored(path: Path) -> bool:
        return bool(config.hook.pytest_ignore_collect(collection_path=path, config=config))

    for arg in config.args:
        top = base / arg.split("::")[0]
        if top.is_file():
            if collects(config, top):
                found[top.resolve()] = None
            continue
        for directory, subdirectories, files in os.walk(top):
            here = Path(directory)
            subdirectories[:] = sorted(name for name in subdirectories if not ignored(here / name))
            for name in sorted(files):
                path = here / name
                if is_fragment(path) and not ignored(path) and collects(config, path):
                    found[path.resolve()] = None
    if alltests is not None:
        found[alltests().resolve()] = None
    return list(found)


def find_fragments(config: pytest.Config) -> FragmentTable:
    named = sorted({fragment_name(config.rootpath, path): path for path in fragments_in_run(config)}.items())
    paths = {f"fragment-{index}": path for index, (_, path) in enumerate(named)}
    tokens = {name: f"fragment-{index}" for index, (name, _) in enumerate(named)}
    return FragmentTable(paths, tokens)
