"""--kunit-alltests' collection: the tree's all_tests.config (fragments/alltests.py) collected as if named on the
command line."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from ..errors import KunitError
from ..fragments.alltests import NODEID, alltests_file
from ..fragments.files import ALLTESTS_FRAGMENT
from ..model import Settings
from ..versions import ALLTESTS
from .nodes import KunitconfigFile


def register(config: pytest.Config, settings: Settings) -> None:
    """With --kunit-alltests, collect the tree's all_tests.config; a replayed console has no tree to take it from."""
    if not settings.alltests:
        return
    if settings.replay is not None:
        raise pytest.UsageError(
            "--kunit-alltests builds and runs the tree's all_tests.config, and --kunit-replay builds nothing: "
            "leave one of them out (to replay an alltests run, name the console alone)."
        )
    collection = AlltestsCollection()
    config.pluginmanager.register(collection, "kunit-alltests")
    config.stash[ALLTESTS_FRAGMENT] = lambda: collection.path(config)


class AlltestsCollection:
    """Adds the all_tests.config fragment to what the session collects: to the paths named, or, with none named,
    in place of the default ones (testpaths, the current directory), as kunit.py runs it alone. Named itself (its
    path in the tree, with `::suite::case` or not), it is collected as any fragment named."""

    def __init__(self) -> None:
        self._path: Path | None = None

    def path(self, config: pytest.Config) -> Path:
        """The fragment's file, found once."""
        if self._path is None:
            try:
                self._path = alltests_file(config).resolve()
            except KunitError as error:
                raise pytest.UsageError(error.render()) from None
        return self._path

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if file_path.name != ALLTESTS.name or file_path.resolve() != self.path(parent.config):
            return None
        return KunitconfigFile.from_parent(parent, path=file_path, nodeid=NODEID)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, None]:
        made = yield
        if not isinstance(collector, pytest.Session):
            return
        config = collector.config
        path = self.path(config)
        report = made.get_result()
        if config.args_source is not pytest.Config.ArgsSource.ARGS:
            report.result[:] = [KunitconfigFile.from_parent(collector, path=path, nodeid=NODEID)]
            return
        # A path named that holds the file (a tree's root, the file itself) collects it already.
        base = config.invocation_params.dir
        named = [(base / arg.split("::")[0]).resolve() for arg in config.args]
        if not any(path == top or top in path.parents for top in named):
            report.result.append(KunitconfigFile.from_parent(collector, path=path, nodeid=NODEID))
