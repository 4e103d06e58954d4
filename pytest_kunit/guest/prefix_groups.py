"""Suites grouped by the prefixes of their names, so that a set of whole groups is named by few globs.

A tree whose kunit.filter_glob takes one glob (every tree without this project's series, 6.12 included) can only run
a chosen set of suites in one boot when one glob matches exactly that set among all the kernel's suites. A glob can
name every suite under a prefix (`kunit_*`), or under several one-character extensions of one prefix
(`kunit_[aes]*`): the nodes of the trie of suite names. So batches are dealt as whole trie nodes (`prefix_groups`),
and a batch is named by the fewest trie nodes that cover it exactly (`covering_globs`): a few boots for a batch of
any size, where naming suites one by one took a boot each.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

# Characters a glob's class may hold as they are: the kernel's glob_match() and fnmatch read them alike. A `-` is a
# literal only at a class's start, where both read it so; every other character gets a glob of its own.
_CLASS_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# glob_match()'s special characters, each matched literally as a one-character class (the kernel's and fnmatch's).
_GLOB_SPECIAL = str.maketrans({"*": "[*]", "?": "[?]", "[": "[[]"})


def literal(name: str) -> str:
    """A glob matching exactly `name`."""
    return name.translate(_GLOB_SPECIAL)


def _children(prefix: str, names: Sequence[str]) -> dict[str, list[str]]:
    """The names longer than `prefix`, by their next character, in their first appearance's order."""
    children: dict[str, list[str]] = {}
    for name in names:
        if len(name) > len(prefix):
            children.setdefault(name[len(prefix)], []).append(name)
    return children


def prefix_groups(weights: Mapping[str, float], limit: float, at_least: int) -> list[list[str]]:
    """The suites (`weights`' keys, in their order) as trie nodes: each group every suite under one prefix, none
    heavier than `limit` unless it is one suite, and at least `at_least` groups where the suites allow."""

    def split(prefix: str, names: list[str]) -> list[tuple[str, list[str]]]:
        parts = [(prefix, [prefix])] if prefix in names else []
        parts += [(prefix + char, group) for char, group in _children(prefix, names).items()]
        if len(parts) == 1 and parts[0][1] == names:  # one child holds them all: look one character further
            return split(*parts[0])
        return parts

    def weight(names: Iterable[str]) -> float:
        return sum(weights[name] for name in names)

    pending, groups = [("", list(weights))], []
    while pending:
        prefix, names = pending.pop(0)
        if len(names) > 1 and weight(names) > limit:
            pending[:0] = split(prefix, names)
        else:
            groups.append((prefix, names))
    while len(groups) < at_least:
        splittable = [entry for entry in groups if len(entry[1]) > 1]
        if not splittable:
            break
        heaviest = max(splittable, key=lambda entry: weight(entry[1]))
        place = groups.index(heaviest)
        groups[place : place + 1] = split(*heaviest)
    return [names for _, names in groups]


def covering_globs(all_suites: Sequence[str], wanted: Collection[str]) -> list[str]:
    """Globs, each naming suites by a prefix, that together match exactly the `wanted` suites among `all_suites`
    (a boot each). Every wanted suite's name must be one kunit.filter_glob can say (planning.suite_glob): then so
    is each prefix of it, and the classes hold only characters that need no quoting."""
    wanted = set(wanted)

    def cover(prefix: str, names: list[str]) -> list[str]:
        chosen = [name for name in names if name in wanted]
        if not chosen:
            return []
        if len(chosen) == len(names):
            return [literal(names[0]) if len(names) == 1 else literal(prefix) + "*"]
        globs = [literal(prefix)] if prefix in wanted else []
        whole: list[tuple[str, list[str]]] = []
        partial: list[tuple[str, list[str]]] = []
        for char, group in _children(prefix, names).items():
            (whole if all(name in wanted for name in group) else partial).append((char, group))
        in_class = [char for char, _ in whole if char in _CLASS_SAFE or char == "-"]
        in_class.sort(key=lambda char: char != "-")  # a `-` first, where it is no range
        if len(in_class) > 1:
            globs.append(f"{literal(prefix)}[{''.join(in_class)}]*")
        for char, group in whole:
            if len(in_class) < 2 or char not in in_class:
                globs.append(literal(group[0]) if len(group) == 1 else literal(prefix + char) + "*")
        for char, group in partial:
            globs += cover(prefix + char, group)
        return globs

    return cover("", list(dict.fromkeys(all_suites)))
