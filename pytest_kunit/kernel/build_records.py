"""The build directory's own records, which pytest-kunit writes beside Kbuild's: the stamp (the inputs, the run and the
image of the last build), what that build was built from, when it started reading the tree, and what of the tree its
last full make read; and what they say when a build starts."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..host.cache import CacheWarning, write_atomically
from ..kbuild.read_dirs import ReadScope, read_scope, widened
from .build_request import BuildRequest, key_digest
from .freshness import TreeLook
from .image import ImageCheck, ImageRecord, check_image, file_digest
from .wrapper_scripts import TREE_LINK

STAMP = ".pytest-kunit-stamp"
RECORD = ".pytest-kunit-built.json"  # what a finished build was built from: reuse.py finds kernels that serve others
SOURCES = ".pytest-kunit-sources"  # when the last build started reading the tree (ns), and what had changed just before
READ = ".pytest-kunit-read"  # what of the tree the last full make read (kbuild/read_dirs.py: ReadScope)


@dataclass(frozen=True)
class BuildRecord:
    """What a finished build was built from, kept beside it (RECORD) so that a later run can ask it again."""

    tree: str  # PreparedTree.key
    arch: str
    fragment: str  # the request's fragment (the architecture's lines come from arch.py)
    extra_key: str
    placed: tuple[tuple[str, str], ...]
    label: str = ""
    make_options: tuple[str, ...] = ()

    def text(self) -> str:
        return json.dumps(
            {"tree": self.tree, "arch": self.arch, "fragment": self.fragment, "extra_key": self.extra_key}
            | {"placed": [list(pair) for pair in self.placed], "label": self.label}
            | {"make_options": list(self.make_options)}
        )

    @staticmethod
    def read(path: Path) -> BuildRecord | None:
        """The record in `path`; None if missing or not whole (a build that never finished has none)."""
        try:
            fields = json.loads(path.read_text())
            placed = tuple((str(name), str(digest)) for name, digest in fields["placed"])
            return BuildRecord(
                str(fields["tree"]),
                str(fields["arch"]),
                str(fields["fragment"]),
                str(fields["extra_key"]),
                placed,
                str(fields.get("label", "")),
                tuple(str(word) for word in fields.get("make_options", [])),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class PreviousBuild:
    """What the build directory says of its last build."""

    stamp: str  # what the request's inputs give: the stamp's first line when they are the recorded build's
    record: ImageRecord | None  # the image it recorded
    checked: ImageCheck | None  # the image there now, if whole
    same_inputs: bool  # the recorded build had the request's inputs, and its image is whole
    built_by_this_run: bool  # ... and this very pytest run built it


def image_digest(build_dir: Path, image: Path) -> str | None:
    """The digest of `image` as it is now: the one its build recorded while the file is unchanged since (its size and
    time, as check_image vouches), else read; None without an image."""
    try:
        stamp = (build_dir / STAMP).read_text().split() if (build_dir / STAMP).exists() else []
        seen = image.stat()
        recorded = ImageRecord.parse(stamp[2:])
        if recorded is not None and (recorded.size, recorded.mtime_ns) == (seen.st_size, seen.st_mtime_ns):
            return recorded.digest
        return file_digest(image)
    except OSError:
        return None


def previous_build(request: BuildRequest, build_dir: Path, image: Path) -> PreviousBuild:
    stamp = key_digest(build_dir.name, request.extra_key)
    stamp_file = build_dir / STAMP
    recorded = stamp_file.read_text().split() if stamp_file.exists() else []
    record = ImageRecord.parse(recorded[2:])
    checked = _whole_image(image, request.arch.make.elf, record)
    same_inputs = checked is not None and recorded[:1] == [stamp]
    # Any tree may have been edited since its last build, the extracted packaged one as much as a checkout (the
    # edit-build-test loop): it is current if this very run built it, or no file in it is newer than the start of
    # its last build.
    built_by_this_run = same_inputs and recorded[1:2] == [request.session]
    return PreviousBuild(stamp, record, checked, same_inputs, built_by_this_run)


def _whole_image(image: Path, elf: bool, recorded: ImageRecord | None) -> ImageCheck | None:
    """The image's check if it is there and whole; a damaged one is deleted with a note, so make builds it again
    (make would take a damaged file newer than its inputs for up to date)."""
    if not image.exists():
        return None
    checked = check_image(image, elf, recorded)
    if not checked.problem:
        return checked
    image.unlink()
    warnings.warn(
        CacheWarning(f"pytest-kunit: discarded the damaged kernel image {image} ({checked.problem}); rebuilding it"),
        stacklevel=2,
    )
    return None


def store_scope(request: BuildRequest, build_dir: Path) -> None:
    """What of the tree this full make read, by its records: the next run looks at that alone."""
    scope = read_scope(build_dir, request.tree.path, TREE_LINK)
    if scope is not None:
        write_atomically(build_dir / READ, scope.text())


def store_widened_scope(request: BuildRequest, build_dir: Path, scope: ReadScope | None, started: int) -> None:
    """After a link-only or module-only build: the last full make's scope, and what this build's compiles read (a
    header from a directory no record named before). No scope before, none after: the next look is the whole tree."""
    wider = widened(scope, build_dir, request.tree.path, TREE_LINK, started) if scope is not None else None
    if wider is not None:
        write_atomically(build_dir / READ, wider.text())


def stored_scope(build_dir: Path) -> ReadScope | None:
    try:
        return ReadScope.parse((build_dir / READ).read_text())
    except OSError:
        return None


def record_build(
    request: BuildRequest,
    build_dir: Path,
    before: PreviousBuild,
    checked: ImageCheck,
    look: TreeLook | None,
    rebuilt: bool,
) -> None:
    """Write what the build directory must say of this build: its stamp, when it started reading the tree, and what
    it was built from."""
    if rebuilt or checked.record != before.record:  # a new image, or one recorded less fully (older stamps)
        write_atomically(build_dir / STAMP, f"{before.stamp}\n{request.session}\n{checked.record.lines()}")
    if look is not None and rebuilt:
        write_atomically(build_dir / SOURCES, look.sources)
    if rebuilt or not (build_dir / RECORD).exists():
        record_of = BuildRecord(
            request.tree.key,
            request.arch.name,
            request.fragment.text(),
            request.extra_key,
            request.placed,
            request.label,
            request.make_options,
        )
        write_atomically(build_dir / RECORD, record_of.text())
