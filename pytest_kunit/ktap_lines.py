"""The grammar of single console lines for the KTAP parser: printk prefixes and the KTAP/TAP line forms.

Everything here looks at one line and knows nothing of the lines around it; `ktap.py` holds the state machine.
Each function takes a line already passed through `clean`, without its indentation, and returns None when the line
is not of its form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# printk's own prefix: `[    0.060000]`, and with CONFIG_PRINTK_CALLER `[    0.060000][    T1]` (thread) or
# `[    0.060000][    C0]` (CPU); with printk.time=0 only the caller id is left.
_PRINTK_PREFIX = re.compile(r"^(?:\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])?|\[\s*[TC]\d+\]) ?")
_VERSION = re.compile(r"^K?TAP version \d+\s*$")
_PLAN = re.compile(r"^1\.\.(\d+)\s*$")
_SUBTEST = re.compile(r"^# Subtest: (?P<name>.*?)\s*$")
_RESULT = re.compile(r"^(?P<ok>not ok|ok) (?P<number>\d+)(?: -)?(?: (?P<name>[^#]*?))?\s*(?:#\s*(?P<comment>.*?))?\s*$")
# KTAP's directives (Documentation/dev-tools/ktap.rst); TAP also spells SKIP as SKIPPED, skip, ...
_DIRECTIVE = re.compile(r"^(?P<word>SKIP\w*|TODO|XFAIL|TIMEOUT|ERROR)\b\s*(?P<reason>.*)$", re.IGNORECASE)
# What lib/kunit/attributes.c prints: `# speed: slow` for a suite, `# case_name.speed: slow` for a case.
SUITE_ATTRIBUTES = ("speed", "module", "is_init")
_SUITE_ATTRIBUTE = re.compile(rf"^# (?P<key>{'|'.join(SUITE_ATTRIBUTES)}): (?P<value>.*?)\s*$")
_CASE_ATTRIBUTE = re.compile(r"^# (?P<case>[^\s:]+)\.(?P<key>\w+): (?P<value>.*?)\s*$")
# 5.11 to 5.15 printed each parameter as a diagnostic of its case: `# case: ok 1 - description`.
_OLD_PARAM = re.compile(r"^# (?P<case>[^\s:]+): (?P<result>(?:not )?ok \d+ .*)$")
_LISTED = re.compile(r"^(?P<suite>[^\s#]+)\.(?P<case>[A-Za-z_]\w*)$")
_BARE_NAME = re.compile(r"^[^\s#]+$")


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
    match = _SUBTEST.match(content)
    return match["name"] if match else None


def result(content: str) -> Result | None:
    match = _RESULT.match(content)
    if not match:
        return None
    comment = match["comment"] or ""
    directive = _DIRECTIVE.match(comment)
    word = directive["word"].upper() if directive else None
    if word is not None and word.startswith("SKIP"):
        word = "SKIP"
    reason = directive["reason"] if directive else comment
    return Result(match["ok"] == "ok", int(match["number"]), (match["name"] or "").strip(), word, reason.strip())


def suite_attribute(content: str) -> tuple[str, str] | None:
    match = _SUITE_ATTRIBUTE.match(content)
    return (match["key"], match["value"]) if match else None


def case_attribute(content: str) -> tuple[str, str, str] | None:
    """(case, key, value) of a `# case.key: value` line."""
    match = _CASE_ATTRIBUTE.match(content)
    return (match["case"], match["key"], match["value"]) if match else None


def old_param(content: str) -> tuple[str, Result] | None:
    """(case, result) of a pre-6.0 parameter line, `# case: ok 1 - description`."""
    match = _OLD_PARAM.match(content)
    parsed = result(match["result"]) if match else None
    return (match["case"], parsed) if match and parsed else None


def listed(content: str) -> tuple[str, str] | None:
    """(suite, case) of a `suite.case` line, as `kunit.action=list` prints them."""
    match = _LISTED.match(content.rstrip())
    return (match["suite"], match["case"]) if match else None


def bare_name(content: str) -> str | None:
    """A line holding one word: how `kunit.action=list` (6.6+) names each suite before its cases."""
    stripped = content.rstrip()
    return stripped if _BARE_NAME.match(stripped) else None
