"""What a build is asked for: the tree, the fragment, the architecture and make's words, the whole fragment they give,
and the directory in the cache they name."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..arch import Arch
from ..host.cachelayout import CacheLayout
from ..options import DEFAULT_MAKE_TIMEOUT, Wrapper
from . import modules
from .kconfig import Fragment, parse_fragment
from .tree import PreparedTree


@dataclass(frozen=True)
class BuildRequest:
    tree: PreparedTree
    fragment: Fragment
    arch: Arch
    jobs: int
    cache_dir: Path
    extra_key: str = ""  # anything else that feeds the build (out-of-tree suite sources)
    placed: tuple[tuple[str, str], ...] = ()  # the out-of-tree suites placed into the tree for it: (name, digest)
    session: str = ""  # the pytest run: xdist workers of one run share it, so they build once between them
    wrapper: Wrapper = Wrapper.NONE  # not part of the build key: a wrapper only changes how objects are made
    label: str = ""  # what the build is for, in a person's words (its fragments): not part of the build key
    # More words for every make run (--kunit-make-options, then --kunit-cross-compile's CROSS_COMPILE=): part of the
    # build key, as each can change what is built (a compiler, its flags).
    make_options: tuple[str, ...] = ()
    modules: bool = False  # --kunit-modules: the suites built as modules (modules.py); keys the build
    serving: bool = False  # a kept guest runs its built-in suites again (SERVE_LINES); keys the build
    make_timeout: float = DEFAULT_MAKE_TIMEOUT  # seconds one make run may take (--kunit-make-timeout); 0: none
    seed: bool = True  # a new build starts from a copy of the nearest one (seeding.py); not part of the build key


# What a kernel needs whose guest may be kept up to run its built-in suites again (--kunit-keep-guest on a tree with
# kunit.autorun, without --kunit-modules): what /init's serve loop needs (findings/guest_init.py's KCONFIG: an
# initramfs, busybox's ELF and script, debugfs) and KUnit's debugfs files, a suite's run file among them.
SERVE_LINES = (
    "CONFIG_BLK_DEV_INITRD=y",
    "CONFIG_BINFMT_ELF=y",
    "CONFIG_BINFMT_SCRIPT=y",
    "CONFIG_DEBUG_FS=y",
    "CONFIG_KUNIT_DEBUGFS=y",
)


def full_fragment(request: BuildRequest) -> Fragment:
    arch_fragment = parse_fragment("\n".join(request.arch.kconfig), f"arch.py:{request.arch.name}")
    mode = modules.mode_fragment() if request.modules else Fragment(())
    served = parse_fragment("\n".join(SERVE_LINES), "--kunit-keep-guest") if request.serving else Fragment(())
    return arch_fragment + request.fragment + mode + served


def key_digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def build_key(request: BuildRequest) -> str:
    """What names a build's directory: tree, architecture, configuration, and make's options where there are any
    (so a build without them keeps the directory it always had)."""
    parts = (request.tree.key, request.arch.name, full_fragment(request).text())
    return key_digest(*parts, "make", *request.make_options) if request.make_options else key_digest(*parts)


def build_dir_of(request: BuildRequest) -> Path:
    """Where the request is built: one directory per (tree, architecture, configuration)."""
    return CacheLayout(request.cache_dir).build_dir(build_key(request))
