"""A guest's console split into lines as it streams, each cut to MAX_LINE characters while it is still arriving: a
guest that never prints a newline costs MAX_LINE characters of memory, not everything it printed."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..console.transcript import MAX_LINE, console_line


@dataclass
class LineSplitter:
    """Fed the console's text in chunks as they are read; hands back each whole line as the console keeps it
    (console_line: controls stripped, cut with a note of how much was cut)."""

    _kept: list[str] = field(default_factory=list)  # the start of the line still open, at most MAX_LINE characters
    _kept_length: int = 0
    _dropped: int = 0  # characters of the open line past MAX_LINE, counted and let go

    @property
    def held(self) -> int:
        """The characters of the open line held in memory."""
        return self._kept_length

    def feed(self, text: str) -> list[str]:
        """The lines `text` completes."""
        *whole, rest = text.split("\n")
        lines = []
        for part in whole:
            self._add(part)
            lines.append(self._close())
        self._add(rest)
        return lines

    def finish(self) -> str | None:
        """The last line, if the console ended with one that has no newline (and is not blank)."""
        if not self._dropped and not "".join(self._kept).strip():
            return None
        return self._close()

    def _add(self, part: str) -> None:
        room = MAX_LINE - self._kept_length
        if room > 0 and part:
            self._kept.append(part[:room])
            self._kept_length += min(len(part), room)
        self._dropped += max(0, len(part) - max(room, 0))

    def _close(self) -> str:
        kept, dropped = "".join(self._kept), self._dropped
        self._kept, self._kept_length, self._dropped = [], 0, 0
        return console_line(kept, dropped)
