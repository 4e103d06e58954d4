"""pytest-kunit's entry point (`pytest11`): its options and hook specifications, and at configure time, with --kunit
only, the session's own hooks (face/hooks.py). A pytest run without --kunit imports, checks, prints and runs nothing
else of it: not even its other settings are read, so a project's stray kunit_* ini key cannot fail an ordinary run. Its
one word there is for a kunitconfig file named on the command line, which pytest alone would call "not found"."""

from __future__ import annotations

import pytest

from . import options
from .face import switch


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--kunit-cache-prune: prune the cache, say what went, and exit, as --cache-show shows and exits."""
    if not switch.is_enabled(config) or not switch.flag(config, "kunit_cache_prune"):
        return None
    from .errors import KunitError
    from .face import settings
    from .host.cachedir import trusted_cache_dir
    from .host.cacheprune import Bounds, prune, summary

    cache = settings.cache_dir(config)
    bounds = Bounds(*settings.cache_bounds(config))
    try:
        removed = prune(trusted_cache_dir(cache), bounds)
    except KunitError as error:
        raise pytest.UsageError(error.render()) from None
    for entry in removed:
        print(f"removed {entry.path} ({entry.size / 1e6:.1f} MB): {entry.why}")
    print(f"kunit cache {cache}: {summary(removed)}")
    return 0


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not switch.is_enabled(config):
        _fragment_without_kunit(config)
        return
    from .arch import ARCHES, Arch
    from .arch.userfile import ArchFileError, load
    from .face import hooks, settings

    arches = dict(ARCHES)
    user_file = settings.arch_config_path(config)
    if user_file is not None:
        try:
            arches.update(load(user_file))
        except ArchFileError as error:
            source = switch.given(config, "kunit_arch_config")
            raise pytest.UsageError(f"{source}: {error}") from None
    config.hook.pytest_kunit_add_arches(config=config, arches=arches)
    for name, arch in arches.items():
        if not isinstance(arch, Arch) or arch.name != name:
            raise pytest.UsageError(
                f"A pytest_kunit_add_arches hook added {name!r}: {arch!r}; "
                "add a pytest_kunit.arch.Arch under its own name."
            )
    resolved = settings.resolve(config, arches)
    hooks.start(config, resolved, {name: arches[name] for name in resolved.arches})
    config.pluginmanager.register(hooks, "kunit-session")


def _fragment_without_kunit(config: pytest.Config) -> None:
    """`pytest x.kunitconfig`, without --kunit: the file exists, yet pytest alone would say it found nothing there."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return
    for arg in config.args:
        path = config.invocation_params.dir / arg.split("::")[0]
        if path.name.endswith(".kunitconfig") and path.is_file():
            raise pytest.UsageError(
                f"{arg} is a kunitconfig fragment, which pytest collects only with --kunit: pytest --kunit {arg}"
            )
