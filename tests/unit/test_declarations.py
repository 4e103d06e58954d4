"""Each option declared once (options.py): pytest's help, the ini keys, the Settings fields, the resolver and
docs/options.md all come from or agree with that one declaration, so none can drift from it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pytest_kunit.face import readers, reference, settings
from pytest_kunit.guest.boot import boot_deadline
from pytest_kunit.model import Settings
from pytest_kunit.options import BOOT_ALLOWANCE, OPTIONS, cache_home
from pytest_kunit.optiontypes import SECONDS, Decided, Option

DOCS = Path(__file__).resolve().parents[2] / "docs" / "options.md"


def test_the_committed_reference_is_the_rendering_of_the_declarations() -> None:
    """docs/options.md is made by `python -m pytest_kunit.face.reference > docs/options.md`: run it again after
    changing a declaration."""
    assert DOCS.read_text() == reference.markdown()


def test_the_reference_lists_every_option_once_with_its_ini_key_and_kunit_py_equivalent() -> None:
    rows = [line for line in DOCS.read_text().splitlines() if line.startswith("| `--kunit")]
    assert len(rows) == len(OPTIONS)
    for option, line in zip(OPTIONS, rows, strict=True):
        assert line.startswith(f"| `{reference.usage(option).replace('|', chr(92) + '|')}` | `{option.name}`")
        if option.kunitpy:
            assert f"`{option.kunitpy.replace('|', chr(92) + '|')}`" in line


def squeezed(text: str) -> str:
    """Text without whitespace: the help formatter wraps lines anywhere, also after a hyphen."""
    return re.sub(r"\s+", "", text)


def test_pytest_help_shows_each_options_metavar_and_default(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--help")
    assert result.ret == 0
    shown = squeezed(result.stdout.str())
    for option in OPTIONS:
        metavar = option.shown_metavar
        if option.type.shape == "flag":
            assert metavar is None
            assert squeezed(f"{option.flag} {option.what}") in shown, option.flag
            continue
        assert metavar, option.name
        typed = f"[{metavar}]" if option.type.shape == "optional" else metavar
        assert squeezed(f"{option.flag}={typed}") in shown, option.flag
        assert squeezed(f"{option.what} (default: {option.default_words()})") in shown, option.flag


def test_no_help_text_states_a_default_of_its_own() -> None:
    """The default in the help is rendered from the declared one: a default typed into the text (as the boot
    timeout's once said 60 where the code had 300) could drift from it."""
    for option in OPTIONS:
        assert "default" not in option.help.lower(), option.name
        described = option.described
        if option.type.shape == "flag":
            assert option.default is False and "default" not in described
        else:
            assert described.count("default") == 1
            assert described.endswith(f" (default: {option.default_words()})")


def test_each_declared_default_is_what_a_run_given_nothing_gets(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "xdg"))
    resolved = settings.resolve(pytester.parseconfigure("-p", "no:cacheprovider"))
    for option in OPTIONS:
        if option.settings_field is not None:
            assert getattr(resolved, option.settings_field) == option.default_value(), option.name
    assert resolved.cache_dir == cache_home() == pytester.path / "xdg" / "pytest-kunit"
    assert resolved.arch == "x86_64"


def test_the_boot_timeouts_stated_default_is_the_deadline_a_boot_gets() -> None:
    (option,) = [option for option in OPTIONS if option.name == "kunit_boot_timeout"]
    assert isinstance(option.default, Decided) and option.default_value() is None
    assert option.default_words() == f"{BOOT_ALLOWANCE:g} plus the case timeout for each case the boot runs"
    assert boot_deadline(120, 3) == BOOT_ALLOWANCE + 3 * 120
    assert BOOT_ALLOWANCE == 300


def test_the_settings_fields_are_the_declared_options() -> None:
    declared = {option.settings_field for option in OPTIONS} - {None}
    assert declared | {"arch"} == {field.name for field in dataclasses.fields(Settings)}


def test_the_settings_records_own_defaults_are_the_declared_ones() -> None:
    """model.Settings keeps defaults for code that builds one directly (tests, a worker): they must not drift."""
    fields = {field.name: field for field in dataclasses.fields(Settings)}
    del fields["arches"]  # () there means `arch` alone, which has no default
    for option in OPTIONS:
        field = fields.get(option.settings_field or "")
        if field is not None and field.default is not dataclasses.MISSING:
            assert field.default == option.default_value(), option.name


def test_every_declared_type_has_a_reader() -> None:
    assert {option.type.name for option in OPTIONS} <= set(readers.READERS)


def test_names_are_unique_and_kunit_prefixed() -> None:
    names = [option.name for option in OPTIONS]
    assert len(set(names)) == len(names)
    assert all(name == "kunit" or name.startswith("kunit_") for name in names)


def test_an_added_option_renders_into_help_and_the_reference() -> None:
    """The declaration format the docstring of options.py shows: a new option needs no other text."""
    added = Option("kunit_make_deadline", "seconds one make run may take", SECONDS, 3600.0, "SECONDS")
    assert added.flag == "--kunit-make-deadline" and added.settings_field == "make_deadline"
    assert added.described == "seconds one make run may take (default: 3600)"
    assert reference.row(added) == (
        "| `--kunit-make-deadline SECONDS` | `kunit_make_deadline` | 3600 |  | seconds one make run may take |"
    )
