"""Fragments that share one kernel (--kunit-share-kernels): one build for a run's fragments of one tree.

Before the first build, the fragments the run will collect are found (the same walk on every xdist worker); those
built from one tree with one set of patches form a group, and the group builds one kernel from all their lines, the
union; a group is first split, in order, into the parts whose union Kconfig (no build) shows able to stand for each
member's own kernel (6.12's 21 in-tree fragments: one debugging LOCKDEP or UBSAN in would rule out all the others).
Each fragment then runs, in boots of its own, exactly the suites its own kernel would hold: its configuration
is completed alone (`syncconfig`, seconds) and membership.suites_alone reads from the union's objects which suites
that configuration keeps, and that no source of those suites tests a symbol the two set differently (membership.py,
from Kbuild's own records). A fragment that sets a symbol another sets otherwise, one the architecture cannot
configure (its own build says why; the others share without it), a union that does not build, and a fragment whose
suites cannot be told for sure are built alone, as without the option: it never changes which cases a fragment has;
the real tier compares a fragment alone and shared verdict by verdict (tests/real/test_uml.py).
Out-of-tree suites join a group: the union's request places every member's folder into the tree.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..arch import Arch
from ..errors import BuildError, ConfigError
from ..host.cache import load_shared_suites, save_shared_suites
from ..kbuild import membership
from ..kernel.assembly import assemble
from ..kernel.build_request import BuildRequest
from ..kernel.configuring import completed_config, completed_flags, flags_of
from ..kernel.kconfig import Fragment, parse_fragment, read_dotconfig
from ..kernel.out_of_tree import suite_dir_for
from ..kernel.treechoice import choose_tree
from ..model import Kernel
from .files import fragments_in_run

if TYPE_CHECKING:
    import pytest

    from .pipeline import Pipeline


@dataclass(frozen=True)
class Group:
    """Fragments that share one kernel, in the order the run collects them."""

    members: tuple[Path, ...]

    def describe(self, base: Path) -> str:
        """One word (the "built" line's name): each member relative to `base` (in-tree fragments are all named
        .kunitconfig) where it lies below it."""
        return "+".join(shown_path(path, base) for path in self.members)


def shown_path(path: Path, base: Path) -> str:
    return os.path.relpath(path, base) if path.is_relative_to(base) else str(path)


def plan_groups(
    paths: Sequence[Path], fragment_of: Callable[[Path], Fragment | None], tree_of: Callable[[Path], Hashable | None]
) -> dict[Path, Group]:
    """Each shared fragment's group: fragments of one tree (`tree_of`; None: never shared), in order, leaving out
    one that sets a symbol an earlier member sets to another value (`# CONFIG_X is not set` included), and one that
    cannot be read (`fragment_of` None: its own build says why). A group needs two members."""
    by_tree: dict[Hashable, list[Path]] = {}
    fragments: dict[Path, Fragment] = {}
    for path in paths:
        tree, fragment = tree_of(path), fragment_of(path)
        if tree is not None and fragment is not None:
            by_tree.setdefault(tree, []).append(path)
            fragments[path] = fragment
    groups: dict[Path, Group] = {}
    for candidates in by_tree.values():
        chosen: list[Path] = []
        values: dict[str, str] = {}
        for path in candidates:
            entries = fragments[path].entries
            if any(values.get(entry.symbol, entry.value) != entry.value for entry in entries):
                continue
            chosen.append(path)
            values.update((entry.symbol, entry.value) for entry in entries)
        if len(chosen) > 1:
            group = Group(tuple(chosen))
            groups.update((path, group) for path in chosen)
    return groups


def partition(members: Sequence[Path], fits: Callable[[tuple[Path, ...]], bool]) -> list[Group]:
    """The members in kernels of their own: each joins the first earlier part whose kernel, with it, still `fits`
    every member, or starts one. Parts of one member are left out (built alone)."""
    parts: list[list[Path]] = []
    for path in members:
        joined = next((part for part in parts if fits((*part, path))), None)
        if joined is None:
            parts.append([path])
        else:
            joined.append(path)
    return [Group(tuple(part)) for part in parts if len(part) > 1]


def union_fragment(fragments: Iterable[Fragment]) -> Fragment:
    total = Fragment(())
    for fragment in fragments:
        total = total + fragment
    return total


def shown_names(build_dir: Path, cases: Sequence[tuple[str, str]], stored: set[str]) -> set[str]:
    """The names the kernel lists `stored` suites under: those the objects register them under (suitenames.py reads
    a module_test() suite's from its struct kunit_module, as the kernel names it at boot). A kernel that lists other
    suites than its objects register cannot be told: membership.Unknown names the difference."""
    registered = sorted(name for item in membership.suite_objects(build_dir) for name in item.suites)
    listed = sorted(dict.fromkeys(suite for suite, _ in cases))
    if registered != listed:
        only_listed = sorted(set(listed) - set(registered))
        only_registered = sorted(set(registered) - set(listed))
        raise membership.Unknown(
            f"the kernel lists {len(listed)} suites, its objects register {len(registered)} (listed only: "
            f"{', '.join(only_listed) or 'none'}; registered only: {', '.join(only_registered) or 'none'})"
        )
    return set(stored)


def yielding(explicit: Fragment, enabled: Mapping[str, str]) -> Fragment:
    """The members' own lines, but for one turning off what another member's configuration enables: the union holds
    what any member asks for, and a member asking for less is read from it (6.12's drivers/clk turns off UML's PCI,
    which DRM's fragments need there: the union keeps PCI, and clk's suites say whether it runs there)."""
    return Fragment(tuple(e for e in explicit.entries if e.value != "n" or enabled.get(e.symbol, "n") == "n"))


def superset(configs: Iterable[Mapping[str, str]]) -> str:
    """Fragment lines enabling every symbol one of `configs` enables (y over m), and setting every other value all
    of them that set it agree on (a string, a number); values they disagree on are left to Kconfig."""
    values: dict[str, set[str]] = {}
    for config in configs:
        for symbol, value in config.items():
            values.setdefault(symbol, set()).add(value)
    lines = []
    for symbol, seen in sorted(values.items()):
        if seen <= {"y", "m"}:
            lines.append(f"{symbol}={'y' if 'y' in seen else 'm'}")
        elif len(seen) == 1:
            lines.append(f"{symbol}={seen.pop()}")
    return "\n".join(lines) + "\n"


class Sharing:
    """One session's shared kernels: which fragments share, each union built once, each member's own suites."""

    def __init__(self, pipeline: Pipeline, config: pytest.Config, arch: Arch) -> None:
        self.pipeline = pipeline
        self.config = config
        self.arch = arch
        self._groups: dict[Path, Group] | None = None
        self._unions: dict[Group, Kernel | None] = {}
        self._fragments: dict[Path, Fragment] = {}
        self._owns: dict[Path, tuple[dict[str, str], dict[str, str]]] = {}

    def _fragment(self, path: Path) -> Fragment:
        """A member's fragment, read (and its pytest_kunit_kconfig hooks called) once a session."""
        if path not in self._fragments:
            self._fragments[path] = assemble(path, self.arch, self.pipeline.additions)
        return self._fragments[path]

    def kernel(self, path: Path, key: str) -> Kernel | None:
        """The shared kernel `path` runs on, holding only its own suites; None: build it alone."""
        group = self.groups().get(path.resolve())
        if group is None:
            return None
        union = self._union(group, key)
        if union is None:
            return None
        suites = self._own_suites(path, group, union)
        if suites is None:
            return None
        if key != union.key:  # the first member's record carries the build's seconds; the others built nothing
            kernels = self.pipeline.kernels
            kernels[key] = replace(kernels[union.key], key=key, seconds=None)
        return replace(union, key=key, suites=frozenset(suites))

    def _describe(self, group: Group) -> str:
        return group.describe(self.config.invocation_params.dir.resolve())

    def _shown(self, path: Path) -> str:
        return shown_path(path.resolve(), self.config.invocation_params.dir.resolve())

    def groups(self) -> dict[Path, Group]:
        if self._groups is None:
            paths = fragments_in_run(self.config)
            planned = plan_groups(paths, self._fragment_or_none, self._tree_of)
            # A member this architecture cannot configure (6.12's drm/vc4 on UML) builds alone, which says why; the
            # others share without it, where it would fail their union.
            refused = {path for path in planned if not self._configurable(path)}
            kept = [path for path in paths if path not in refused]
            lined = plan_groups(kept, self._fragment_or_none, self._tree_of) if refused else planned
            # A union is only worth building for the members it can stand for: 6.12's drivers/gpu/drm/xe turns on
            # LOCKDEP and net/sunrpc UBSAN, which every other in-tree fragment's kernel lacks.
            self._groups = {}
            for group in dict.fromkeys(lined.values()):
                for part in partition(group.members, self._fits):
                    self._groups.update((path, part) for path in part.members)
        return self._groups

    def _fits(self, members: tuple[Path, ...]) -> bool:
        """Whether one kernel can stand for each member's own, as its configuration drafted (Kconfig, no build)
        tells (membership.before_build); says why not."""
        _, drafted, flags = self._draft(members)
        held = read_dotconfig(drafted)
        for path in members:
            alone, alone_flags = self._own(path)
            why = membership.before_build(held, alone, flags, alone_flags)
            if why:
                joining, others = self._shown(members[-1]), "+".join(self._shown(other) for other in members[:-1])
                self.pipeline.progress().phase(
                    f"{joining} does not join the kernel of {others}: for {self._shown(path)}, {why}"
                )
                return False
        return True

    def _own(self, path: Path) -> tuple[dict[str, str], dict[str, str]]:
        """The member's configuration completed alone and its compile flags, asked of the cache once a session (the
        parts ask for each member again with every member after it). Raises as completed_config does."""
        if path not in self._owns:
            request, progress = self._request(path, self._fragment(path)), self.pipeline.progress()
            self._owns[path] = (read_dotconfig(completed_config(request, progress)), completed_flags(request, progress))
        return self._owns[path]

    def _draft(self, members: Sequence[Path]) -> tuple[Fragment, str, dict[str, str]]:
        """The union's lines, the configuration Kconfig completes from them, and its compile flags. The lines: every
        symbol any member's completed configuration enables (a fragment's lines alone would let one member's EXPERT=y
        turn off defaults the others keep), then every member's own lines. Unchecked: what Kconfig cannot keep of the
        members' lines together is left out, and each member's own suites (membership.py) say whether it runs on the
        rest."""
        explicit = union_fragment(self._fragment(path) for path in members)
        enabled = superset(self._own(path)[0] for path in members)
        wanted = parse_fragment(enabled, "the members' configurations") + yielding(explicit, read_dotconfig(enabled))
        request = self._request(members[0], wanted, members[1:])
        progress = self.pipeline.progress()
        drafted = completed_config(request, progress, checked=False)
        return wanted, drafted, completed_flags(request, progress, checked=False)

    def _configurable(self, path: Path) -> bool:
        """Whether the member's configuration completes alone (in seconds, kept in the cache for the union's build)."""
        try:
            self._own(path)
        except (BuildError, ConfigError):
            return False
        return True

    def _fragment_or_none(self, path: Path) -> Fragment | None:
        try:
            return self._fragment(path)
        except ConfigError:
            return None

    def _tree_of(self, path: Path) -> Hashable | None:
        choice = choose_tree(self.pipeline.settings, path)
        # A directory is built in place, unless out-of-tree suites must be placed into a copy of it.
        copied = choice.source.is_dir() and suite_dir_for(path) is not None
        return (choice.source, choice.patch_dirs, copied)

    def _union(self, group: Group, key: str) -> Kernel | None:
        """The group's kernel, built once (registered under the first asking fragment's key); None if it fails:
        each member's own build then says what it says alone."""
        if group not in self._unions:
            try:
                self._unions[group] = self._build_union(group, key)
            except (BuildError, ConfigError) as error:
                message = f"the kernel shared by {self._describe(group)} failed; each builds alone: {error.args[0]}"
                self.pipeline.progress().phase(message)
                self._unions[group] = None
        return self._unions[group]

    def _build_union(self, group: Group, key: str) -> Kernel:
        """A kernel whose configuration holds each member's own (_draft); whatever Kconfig does not keep of its lines
        is left out before the build, so that the build's check of its lines passes and membership.py finds what the
        union lacks."""
        pipeline, first, others = self.pipeline, group.members[0], group.members[1:]
        wanted, drafted, _ = self._draft(group.members)
        held = read_dotconfig(drafted)
        kept = Fragment(tuple(entry for entry in wanted.entries if held.get(entry.symbol, "n") == entry.value))
        choice = choose_tree(pipeline.settings, first)
        request = pipeline.requests.request(first, kept, choice, self.arch, together=others)
        return pipeline.built(self._describe(group), key, request, choice)

    def _request(self, path: Path, fragment: Fragment, together: Sequence[Path] = ()) -> BuildRequest:
        choice = choose_tree(self.pipeline.settings, path)
        return self.pipeline.requests.request(path, fragment, choice, self.arch, together)

    def _own_suites(self, path: Path, group: Group, union: Kernel) -> set[str] | None:
        return own_suites(self.pipeline, self.config, path, union, f"the kernel shared by {self._describe(group)}")


def served_key(image_digest: str, alone_text: str) -> str:
    """The key own_suites keeps its answer under: whatever changes either side's answer changes the image or the
    configuration completed alone."""
    return hashlib.sha256(f"v3\0{image_digest}\0{alone_text}".encode()).hexdigest()[:16]


def own_suites(
    pipeline: Pipeline, config: pytest.Config, path: Path, kernel: Kernel, described: str
) -> set[str] | None:
    """The suites `path`'s own kernel would hold, read from `kernel`'s build (a kernel configured for more), by the
    names the kernel prints, when `kernel` provably runs them as `path`'s own would (membership.py); kept in the
    cache for the next run. None (said why) if not."""
    progress = pipeline.progress()
    build_dir = kernel.build.build_dir
    shown = shown_path(path.resolve(), config.invocation_params.dir.resolve())
    try:
        fragment = assemble(path, kernel.arch, pipeline.additions)
        request = pipeline.requests.request(path, fragment, choose_tree(pipeline.settings, path), kernel.arch)
        alone_text = completed_config(request)
        digest = served_key(kernel.build.image_digest, alone_text)
        known = load_shared_suites(pipeline.settings.cache_dir, digest)
        if known is not None:
            suites = known
        else:
            shared = read_dotconfig((build_dir / ".config").read_text())
            why = membership.before_build(
                shared, read_dotconfig(alone_text), flags_of(request, build_dir), completed_flags(request)
            )
            if why:
                raise membership.Unknown(why)
            with tempfile.TemporaryDirectory(dir=pipeline.settings.cache_dir) as scratch:
                stored = membership.suites_alone(
                    kernel.tree, build_dir, shared, read_dotconfig(alone_text), Path(scratch)
                )
            suites = shown_names(build_dir, pipeline.case_lists.listing(kernel, pipeline.runner).cases, stored)
            save_shared_suites(pipeline.settings.cache_dir, digest, suites)
    except (membership.Unknown, BuildError, ConfigError, OSError) as why:
        progress.phase(f"{shown} builds alone, not in {described}: {why}")
        return None
    progress.done(f"{shown} runs in {described}: {len(suites)} suites of its own")
    return suites
