"""--kunit-alltests' collection: the tree's all_tests.config (fragments/alltests.py) collected as if named on the
command line."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from ..errors import KunitError
from ..fragments.alltests import NODEID, alltests_file
from ..model import Settings
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
    config.pluginmanager.register(AlltestsCollection(), "kunit-alltests")


class AlltestsCollection:
    """Adds the all_tests.config fragment to what the session collects: to the paths named, or, with none named,
    in place of the default ones (testpaths, the current directory), as kunit.py runs it alone."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, None]:
        made = yield
        if not isinstance(collector, pytest.Session):
            return
        config = collector.config
        try:
            path = alltests_file(config)
        except KunitError as error:
            raise pytest.UsageError(error.render()) from None
        report = made.get_result()
        fragment = KunitconfigFile.from_parent(collector, path=path, nodeid=NODEID)
        if config.args_source is pytest.Config.ArgsSource.ARGS:
            report.result.append(fragment)
        else:
            report.result[:] = [fragment]
