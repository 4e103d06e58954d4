"""Errors the plugin raises, each carrying what happened and what to do about it."""

from __future__ import annotations


class KunitWarning(UserWarning):
    """Something a user should know that did not stop the run: a fallback taken, a damaged cache file replaced."""


def warning_as_error(warning: KunitWarning) -> str:
    """A note that -W error (or a filterwarnings entry) turned into an error: its own words, not a traceback."""
    return f"{warning}\n(a pytest-kunit note, raised as an error by -W or filterwarnings; it has been acted on)"


class KunitError(Exception):
    """A problem the user can act on: rendered as one paragraph, never a traceback."""

    def __init__(self, what: str, remedy: str = "", *, detail: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.remedy = remedy
        self.detail = detail

    def repeated(self, first: str) -> KunitError:
        """The same error for another item it stops: its headline, and where the whole paragraph was reported."""
        return type(self)(self.what, detail=f"Not tried again: the same error as for {first}, reported there in full.")

    def render(self) -> str:
        parts = [self.what]
        if self.remedy:
            parts.append(f"What to do: {self.remedy}")
        if self.detail:
            parts.append(self.detail.rstrip())
        return "\n".join(parts)


class ConfigError(KunitError):
    """A kunitconfig fragment that does not parse or does not hold in .config."""


class TreeError(KunitError):
    """The kernel source is missing or a patch does not apply."""


class BuildError(KunitError):
    """`make` failed; `detail` holds the compiler's own error lines."""


class BootError(KunitError):
    """QEMU is missing, or the guest died before KUnit reported anything."""
