"""The grammar of single console lines for the KTAP parser: printk prefixes and the KTAP/TAP line forms.

Everything here looks at one line and knows nothing of the lines around it; `ktap.py` holds the state machine.
Each function takes a line already passed through `clean`, without its indentation, and returns None when the line
is not of its form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Every pattern here runs in time linear in the line (no nested or adjacent quantifiers that can trade characters):
# a hostile console line must not stall the run, and the watchdog cannot fire while a line is parsed.
# printk's own prefix: `[    0.060000]`, and with CONFIG_PRINTK_CALLER `[    0.060000][    T1]` (thread) or
# `[    0.060000][    C0]` (CPU); with printk.time=0 only the caller id is left.
_PRINTK_PREFIX = re.compile(r"^(?:\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])?|\[\s*[TC]\d+\]) ?")
_VERSION = re.compile(r"^K?TAP version \d+\s*$")
# Numbers have at most 18 digits: no kernel prints more, and int() refuses a string of thousands (ValueError).
_NUMBER = r"\d{1,18}"
_PLAN = re.compile(rf"^1\.\.({_NUMBER})\s*$")
_SUBTEST = "# Subtest: "
# The result word and number; the rest of the line (name, `#` comment) is split in Python, not by backtracking. What
# follows the number starts with a space, or is whitespace, or a comment after whitespace: `ok 3#x` is no result.
_RESULT = re.compile(rf"^(?P<ok>not ok|ok) (?P<number>{_NUMBER})(?P<rest>(?: .*)?|\s*|\s+#.*)$", re.DOTALL)
# A comment opens at a `#` that starts the text or follows whitespace: a name may hold a `#` of its own.
_COMMENT = re.compile(r"(?:^|\s)#")
# KTAP's directives (Documentation/dev-tools/ktap.rst); TAP also spells SKIP as SKIPPED, skip, ...
_DIRECTIVE = re.compile(r"^(?P<word>SKIP\w*|TODO|XFAIL|TIMEOUT|ERROR)\b(?P<reason>.*)$", re.IGNORECASE | re.DOTALL)
# What lib/kunit/attributes.c prints: `# speed: slow` for a suite, `# case_name.speed: slow` for a case.
SUITE_ATTRIBUTES = ("speed", "module", "is_init")
_SUITE_ATTRIBUTE = re.compile(rf"^# (?P<key>{'|'.join(SUITE_ATTRIBUTES)}): (?P<value>.*)$", re.DOTALL)
# The case's name is everything before the last `.key: ` (a name may hold spaces, dots and colons).
_CASE_ATTRIBUTE = re.compile(r"^# (?P<case>.+)\.(?P<key>\w+): (?P<value>.*)$", re.DOTALL)
# 5.11 to 5.15 printed each parameter as a diagnostic of its case: `# case: ok 1 - description`.
_OLD_PARAM = re.compile(r"^# (?P<case>[^:]+): (?P<result>(?:not )?ok \d+ .*)$", re.DOTALL)
# A kernel message (`clocksource: Switched to ...`), told from a listed name by the `: ` after its prefix.
_MESSAGE_PREFIX = ": "


@dataclass(frozen=True)
class Result:
    """An `ok`/`not ok` line. `directive` is SKIP, TODO, XFAIL, TIMEOUT, ERROR or None; `reason` is the rest of the
    text after `#` (all of it when no directive opens it)."""

    ok: bool
    number: int
    name: str
    directive: str | None
    reason: str


def clean(raw: str) -> str:
    """The line as the kernel printed it: no line terminator, no stray carriage return, no printk prefix."""
    return _PRINTK_PREFIX.sub("", raw.rstrip("\r\n").replace("\r", ""), count=1)


def is_version(content: str) -> bool:
    return bool(_VERSION.match(content))


def plan(content: str) -> int | None:
    match = _PLAN.match(content)
    return int(match[1]) if match else None


def subtest(content: str) -> str | None:
    return content[len(_SUBTEST) :].rstrip() if content.startswith(_SUBTEST) else None


def result(content: str) -> Result | None:
    match = _RESULT.match(content)
    if not match:
        return None
    rest = match["rest"]
    if rest.startswith(" -") and len(rest) > 2 and rest[2].isspace():
        rest = rest[2:]  # TAP's optional dash before the name (alone, `-` is a name: `ok 2 -` closes suite `-`)
    # A name may start with `#` (`ok 1 #hash`): a `#` there opens a comment only when a space follows (`# SKIP`).
    named = rest.lstrip()
    hashed = named.startswith("#") and not named[1:2].isspace()
    opens = _COMMENT.search(rest, len(rest) - len(named) + 1) if hashed else _COMMENT.search(rest)
    name, comment = (rest[: opens.start()], rest[opens.end() :].strip()) if opens else (rest, "")
    directive = _DIRECTIVE.match(comment)
    word = directive["word"].upper() if directive else None
    if word is not None and word.startswith("SKIP"):
        word = "SKIP"
    reason = directive["reason"] if directive else comment
    return Result(match["ok"] == "ok", int(match["number"]), name.strip(), word, reason.strip())


def suite_attribute(content: str) -> tuple[str, str] | None:
    match = _SUITE_ATTRIBUTE.match(content)
    return (match["key"], match["value"].rstrip()) if match else None


def case_attribute(content: str) -> tuple[str, str, str] | None:
    """(case, key, value) of a `# case.key: value` line."""
    match = _CASE_ATTRIBUTE.match(content)
    return (match["case"], match["key"], match["value"].rstrip()) if match else None


def old_param(content: str) -> tuple[str, Result] | None:
    """(case, result) of a pre-6.0 parameter line, `# case: ok 1 - description`."""
    match = _OLD_PARAM.match(content)
    parsed = result(match["result"]) if match else None
    return (match["case"], parsed) if match and parsed else None


def is_message(content: str) -> bool:
    """A kernel message outside KUnit (`random: crng init done`): a prefix, then `: `."""
    return _MESSAGE_PREFIX in content


def listed(content: str, suite: str = "") -> tuple[str, str] | None:
    """(suite, case) of a `suite.case` line, as `kunit.action=list` prints them. Names may hold spaces, `: `, a
    leading `#` and any punctuation: a line that starts with `suite.` (the suite line printed last) belongs to it; any
    other is split at its first `.`, as the kernel splits kunit.filter_glob (the parser takes it back if the next
    line shows it was a suite's own line)."""
    stripped = content.rstrip()
    if suite and stripped.startswith(suite + ".") and len(stripped) > len(suite) + 1:
        return suite, stripped[len(suite) + 1 :]
    name, dot, case = stripped.partition(".")
    return (name, case) if dot and name and case else None


def looks_like_message(content: str) -> bool:
    """A line a list boot may hold that is no name for certain: a kernel message (`random: crng init done`) or a
    comment. A suite may be named so too: such a line is a suite's only when its cases follow it."""
    stripped = content.strip()
    return stripped.startswith("#") or is_message(stripped)
