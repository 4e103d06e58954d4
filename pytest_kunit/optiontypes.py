"""What an option's declaration (options.py) is made of: the type of its value, a default said in words, the
record itself with its flag, metavar and help."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from .versions import MAX_CASE_TIMEOUT

SANITIZER_NAMES = "kasan, ubsan, lockdep, atomic-sleep, debugobjects, kcsan, kmemleak"


@dataclass(frozen=True)
class Type:
    """What an option's value must be. The resolver has one reader for each name (face/readers.py); `expected`
    ends a bad value's refusal: "--kunit-jobs: '0' is not a positive whole number"."""

    name: str
    expected: str = ""
    shape: str = "value"  # "flag": given alone; "optional": alone or with =VALUE; "value": with one
    path: bool = False  # a path, relative to the rootdir when written in an ini file
    choices: type[enum.Enum] | None = None  # the values it takes, in the order its refusal names them


def choice(values: type[enum.Enum]) -> Type:
    return Type("choice", "one of " + ", ".join(str(value.value) for value in values), choices=values)


FLAG = Type("flag", shape="flag")
PROGRAM = Type("program", "a program")
PATH = Type("path", "a path", path=True)
EXISTING_FILE = Type("existing path", "an existing file", path=True)
KERNEL_SOURCE = Type("kernel source", "an existing kernel tarball or directory", path=True)
PATCH_DIRS = Type("patch directories", path=True)  # its reader resolves each one itself
COVERAGE = Type("coverage", shape="optional")
CONSOLE = Type("console", path=True)  # its reader resolves it itself (or takes - for stdin)
POSITIVE_WHOLE = Type("positive whole", "a positive whole number")
WHOLE = Type("whole", "a whole number, 0 or more")
CASE_SECONDS = Type(
    "case seconds",
    f"a whole number of seconds from 1 to {MAX_CASE_TIMEOUT} (what the kernel's kunit.timeout accepts)",
)
SECONDS = Type("seconds", "a positive number of seconds")
MAKE_SECONDS = Type("make seconds", "whole seconds, 0: none")
YES_NO = Type("yes/no", "yes or no")
NAMES = Type("names", "one architecture or a comma-separated list of them")
SANITIZERS = Type("sanitizers", "a comma-separated list of: " + SANITIZER_NAMES)
ORIGIN = Type("origin", "an origin of a-z, 0-9 and _")
# kunit.py's knobs, each checked by face/knobs.py.
KCONFIG_LINES = Type("kconfig lines")
MAKE_WORDS = Type("make words")
KERNEL_WORDS = Type("kernel words")
SHELL_WORDS = Type("shell words")
PREFIX = Type("prefix")


@dataclass(frozen=True)
class Decided:
    """A default no value says: `words` in help and docs; `compute` gives the value, or, without it, the value is
    None and a later step decides as the words say."""

    words: str
    compute: Callable[[], object] | None = None


@dataclass(frozen=True)
class Option:
    """One option, declared once: options.py's docstring says how to add one."""

    name: str  # the ini key; the command-line flag is --name with dashes
    help: str  # without the default, which `described` adds from `default`
    type: Type
    default: object = None
    metavar: str | None = None  # None: a choice's values, or none (a flag)
    kunitpy: str | None = None  # kunit.py's equivalent (an option of `kunit.py run` unless it names a command)
    repeatable: bool = False
    field: str | None = ""  # its model.Settings field: "" for the name without `kunit_`, None for none

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def settings_field(self) -> str | None:
        return self.name.removeprefix("kunit_") if self.field == "" else self.field

    @property
    def shown_metavar(self) -> str | None:
        if self.metavar is None and self.type.choices is not None:
            return "|".join(str(value.value) for value in self.type.choices)
        return self.metavar

    def default_value(self) -> object:
        """What a run gets when the option is given nowhere."""
        if isinstance(self.default, Decided):
            return None if self.default.compute is None else self.default.compute()
        return self.default

    def default_words(self) -> str:
        default = self.default
        if isinstance(default, Decided):
            return default.words
        if isinstance(default, bool):
            return ("yes" if default else "no") if self.type == YES_NO else ("on" if default else "off")
        if isinstance(default, enum.Enum):
            return str(default.value)
        if isinstance(default, tuple):
            return ",".join(default) or "none"
        if isinstance(default, float) and default.is_integer():
            return str(int(default))
        return "none" if default is None else str(default)

    @property
    def what(self) -> str:
        """What the option does, and whether it is repeatable."""
        return self.help + ("; repeatable, each occurrence after the last" if self.repeatable else "")

    @property
    def described(self) -> str:
        """The help: what the option does and, unless it is a flag (off unless given), its default."""
        return self.what + ("" if self.type.shape == "flag" else f" (default: {self.default_words()})")
