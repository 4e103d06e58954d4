"""Kernels built before that serve a fragment never built (--kunit-reuse-kernels, on by default).

A fragment whose own kernel was never built may run in a kernel built earlier (by another fragment, a union of
--kunit-share-kernels, another session) for the same tree, patches and architecture, when that kernel provably runs
the fragment's suites as the fragment's own kernel would: every setting of the fragment's own configuration holds
there, and no source its suites are compiled from tests a symbol the two set differently (membership.py). The
fragment then runs only its own suites, in boots of its own, as in a shared kernel. Anything less sure, and it builds
its own kernel, as without the option. Each finished build records what it was built from (build_records.RECORD);
the kernel is brought up to date with the tree before it serves (an edit since builds it incrementally).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BuildError, ConfigError
from ..host.cache import load_shared_suites
from ..kbuild import membership
from ..kbuild.membership import unrepresentable
from ..kernel.build_records import BuildRecord, image_digest
from ..kernel.build_request import BuildRequest
from ..kernel.configuring import completed_config, completed_flags, flags_of
from ..kernel.kconfig import parse_fragment, read_dotconfig
from ..kernel.out_of_tree import suite_dir_for
from ..kernel.seeding import candidates
from ..model import Kernel
from .sharing import own_suites, served_key, shown_path

if TYPE_CHECKING:
    import pytest

    from ..kernel.treechoice import TreeChoice
    from .pipeline import Pipeline


class Reuse:
    """One session's look for kernels that serve its fragments."""

    def __init__(self, pipeline: Pipeline, config: pytest.Config) -> None:
        self.pipeline = pipeline
        self.config = config

    def kernel(self, path: Path, key: str, request: BuildRequest, choice: TreeChoice) -> Kernel | None:
        """A kernel built before that serves `path` (its node id `key`), holding only its own suites; None: build."""
        found = candidates(request)
        if not found:
            return None  # nothing to ask: the configuration alone need not be completed
        suite = suite_dir_for(path)
        wanted = (suite.name, suite.digest()) if suite else None
        try:
            alone_text = completed_config(request, self.pipeline.progress())
        except (BuildError, ConfigError):
            return None  # its own build says why
        alone = read_dotconfig(alone_text)
        for directory, record in found:
            if wanted is not None and wanted not in record.placed:
                continue  # built without this out-of-tree suite, or from other sources of it
            try:
                held = read_dotconfig((directory / ".config").read_text())
            except OSError:
                continue
            if unrepresentable(held, alone):
                continue  # the cheap refusal: a setting of the fragment's own that this kernel lacks
            image = directory / request.arch.make.image
            if not self._served_before(image, alone_text) and not self._covers(path, request, directory, held, alone):
                continue
            described = f"the kernel built for {record.label or 'another fragment'} ({directory})"
            served = self._served(path, key, request, choice, record, described)
            if served is not None:
                return served
        return None

    def _served_before(self, image: Path, alone_text: str) -> bool:
        """Whether own_suites found this very image (by its digest) serving this configuration before, and kept its
        answer in the cache: membership's reading of the same build would say the same."""
        digest = image_digest(image.parent, image)
        if digest is None:
            return False
        return load_shared_suites(self.pipeline.settings.cache_dir, served_key(digest, alone_text)) is not None

    def _covers(
        self, path: Path, request: BuildRequest, directory: Path, held: dict[str, str], alone: dict[str, str]
    ) -> bool:
        """membership's answer from the kernel's build as it stands, before anything is built to bring it up to date
        (own_suites asks again of the kernel as it then is)."""
        try:
            why = membership.before_build(held, alone, flags_of(request, directory), completed_flags(request))
            if why:
                raise membership.Unknown(why)
            with tempfile.TemporaryDirectory(dir=self.pipeline.settings.cache_dir) as scratch:
                membership.suites_alone(request.tree.path, directory, held, alone, Path(scratch))
        except (membership.Unknown, BuildError, OSError) as why:
            shown = shown_path(path.resolve(), self.config.invocation_params.dir.resolve())
            self.pipeline.progress().phase(f"{shown} does not run in the kernel in {directory}: {why}")
            return False
        return True

    def _served(
        self, path: Path, key: str, request: BuildRequest, choice: TreeChoice, record: BuildRecord, described: str
    ) -> Kernel | None:
        pipeline = self.pipeline
        theirs = replace(
            request,
            fragment=parse_fragment(record.fragment, f"the build record of {described}"),
            extra_key=record.extra_key,
            placed=record.placed,
            label=record.label,
        )
        shown = shown_path(path.resolve(), self.config.invocation_params.dir.resolve())
        try:
            kernel = pipeline.built(f"{shown} (reusing {described})", key, theirs, choice)
        except (BuildError, ConfigError) as error:
            pipeline.progress().phase(f"{shown} does not reuse {described}: {error.args[0]}")
            return None
        suites = own_suites(pipeline, self.config, path, kernel, described)
        if suites is None:
            return None
        return replace(kernel, suites=frozenset(suites))
