"""docs/options.md, the options reference, rendered from the declarations in options.py:

    python -m pytest_kunit.face.reference > docs/options.md

tests/unit/test_options.py checks that the committed page is this rendering.
"""

from __future__ import annotations

from ..options import OPTIONS
from ..optiontypes import Option

HEADER = """\
# Options

<!-- Rendered from pytest_kunit/options.py by `python -m pytest_kunit.face.reference > docs/options.md`: edit the
declarations there, not this page. -->

Each option has an ini twin (in `pytest.ini`, `pyproject.toml`'s `[tool.pytest.ini_options]`, `tox.ini` or
`setup.cfg`). Precedence: command line, then pytest's `-o key=value`, then ini key, then default. A bad value is a
usage error naming where it came from (`--kunit-timeout`, `-o kunit_timeout`, or `ini key 'kunit_timeout' in FILE`).
Settings are read only with `--kunit` (or `kunit = true`): without it no other setting is checked, so a run of a
project's ordinary tests is never refused for one. A relative path is relative to the directory pytest was started
in when typed (a flag or `-o`), to the rootdir when written in an ini file. A repeatable option adds each occurrence
after the last, as kunit.py's repeatable options do; its ini key takes one occurrence a line.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def usage(option: Option) -> str:
    """The option as typed: `--kunit-arch ARCH[,ARCH...]`, `--kunit-coverage[=DIR]`, `--kunit` alone."""
    metavar = option.shown_metavar
    if metavar is None:
        return option.flag
    if option.type.shape == "optional":
        return f"{option.flag}[={metavar}]"
    return f"{option.flag} {metavar}"


def row(option: Option) -> str:
    ini = _code(option.name) + (" (one a line)" if option.repeatable else "")
    kunitpy = "" if option.kunitpy is None else _code(option.kunitpy)
    cells = (_code(usage(option)), ini, _cell(option.default_words()), kunitpy, _cell(option.what))
    return "| " + " | ".join(cells) + " |"


def markdown() -> str:
    table = ["| option | ini key | default | kunit.py | what it does |", "| --- | --- | --- | --- | --- |"]
    table.extend(row(option) for option in OPTIONS)
    return HEADER + "\n" + "\n".join(table) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
