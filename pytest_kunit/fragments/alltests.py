"""--kunit-alltests: kunit.py's `--alltests`, which runs the fragment kernel CI runs, the tree's own
`tools/testing/kunit/configs/all_tests.config` (6.1 and 6.12 have one each).

kunit.py's --alltests adds exactly that file ahead of any --kunitconfig; what it adds for the architecture
(arch_uml.config on UML, a qemu_configs record's lines on QEMU) it adds to every run, as pytest-kunit's architecture
records do. So here: the file of the tree in use (--kunit-kernel-src, else the kernel tree pytest runs in, else the
packaged tarball, extracted) is collected as if named on the command line, under the node id kunit.py's path gives
it, whatever tree it came from; alone when no path is named, beside those named otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..errors import ConfigError
from ..host.cache import write_atomically
from ..kernel.treechoice import choose_tree
from ..versions import ALLTESTS
from .session import STATE

NODEID = str(ALLTESTS)  # the fragment's node id, the same for every tree and on every xdist worker
COPIES = "alltests"  # the cache's directory of the files taken out of extracted tarballs, one per tree


def alltests_file(config: pytest.Config) -> Path:
    """The all_tests.config of the tree in use. A tree that is a directory gives its own file (the fragment lies in
    it, so it builds that tree); an extracted tarball's file is copied into the cache, outside any tree, so that it
    builds the tarball as given, with its patches."""
    state = config.stash[STATE]
    choice = choose_tree(state.settings, config.invocation_params.dir / ALLTESTS)
    if choice.source.is_dir():
        return _existing(choice.source / ALLTESTS, choice.source)
    tree = state.trees.prepared(choice, writable=False)
    found = _existing(tree.path / ALLTESTS, choice.source)
    copy = state.settings.cache_dir / COPIES / tree.key / ALLTESTS.name
    text = found.read_text(errors="replace")
    if not copy.is_file() or copy.read_text(errors="replace") != text:
        write_atomically(copy, text)
    return copy


def _existing(path: Path, source: Path) -> Path:
    if not path.is_file():
        raise ConfigError(
            f"--kunit-alltests: the kernel source {source} has no {ALLTESTS}, the fragment kunit.py's --alltests "
            "runs (trees before 5.13 have none).",
            "name a tree that has one with --kunit-kernel-src, or name the fragments to run instead of "
            "--kunit-alltests.",
        )
    return path
