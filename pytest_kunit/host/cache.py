"""The small files the cache keeps between runs (case lists, suite durations, KVM's verdict, shared kernels' suites,
the guest's initramfs, the cache's identity): written atomically, validated on read, a damaged one discarded with a
note rather than served. Where each lives is cachelayout.py's."""

from __future__ import annotations

import json
import math
import os
import tempfile
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KunitWarning
from ..model import Attributes, CaseId, Durations
from .cachelayout import CacheLayout
from .locking import cache_lock

LIST_FORMAT = 5  # 5: C locations keyed by suite.case


class CacheWarning(KunitWarning):
    """A cache file was damaged and has been discarded: it will be rebuilt."""


def write_atomically(path: Path, content: str | bytes) -> None:
    """Readers see the old file or the whole new one, never a part (a crash mid-write leaves only a temp file)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content.encode() if isinstance(content, str) else content)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read_json(path: Path, valid: Callable[[Any], bool]) -> Any | None:
    """The file's JSON if it exists and `valid` accepts it; a damaged file is removed with a warning."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw.decode())
        if valid(data):
            return data
    except (ValueError, TypeError, KeyError, AttributeError):  # undecodable, not JSON, or not the expected shape
        pass
    # Gone before the note, so a run that turns warnings into errors still finds the file rebuilt next time.
    path.unlink(missing_ok=True)
    warnings.warn(
        CacheWarning(f"pytest-kunit: discarded the damaged cache file {path}; it will be rebuilt"), stacklevel=2
    )
    return None


@dataclass(frozen=True)
class CaseList:
    """What a complete `kunit.action=list` boot of one image said, and where each case is defined."""

    cases: tuple[CaseId, ...]
    locations: dict[str, tuple[str, int]]
    attributes: dict[CaseId, Attributes] = field(default_factory=dict)
    empty_suites: tuple[str, ...] = ()  # suites listed with no case in this kernel


def _valid_list(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("format") == LIST_FORMAT
        and isinstance(data.get("cases"), list)
        and all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            for pair in data["cases"]
        )
        and isinstance(data.get("locations"), dict)
        and all(
            isinstance(where, list) and len(where) == 2 and isinstance(where[0], str) and type(where[1]) is int
            for where in data["locations"].values()
        )
        and isinstance(data.get("attributes"), list)
        and all(
            isinstance(entry, list)
            and len(entry) == 3
            and isinstance(entry[0], str)
            and isinstance(entry[1], str)
            and isinstance(entry[2], list)
            and all(isinstance(pair, list) and len(pair) == 2 for pair in entry[2])
            for entry in data["attributes"]
        )
        and isinstance(data.get("empty_suites", []), list)
        and all(isinstance(suite, str) for suite in data.get("empty_suites", []))
    )


def case_list_from(data: Any) -> CaseList | None:
    """A case list from its JSON form (as kept in the cache, or sent by an xdist controller); None if malformed."""
    if not _valid_list(data):
        return None
    cases = tuple((suite, case) for suite, case in data["cases"])
    locations = {name: (file, line) for name, (file, line) in data["locations"].items()}
    attributes = {
        (suite, case): tuple((key, value) for key, value in pairs) for suite, case, pairs in data["attributes"]
    }
    return CaseList(cases, locations, attributes, tuple(data.get("empty_suites", [])))


def case_list_data(listing: CaseList) -> dict[str, Any]:
    attributes = [[suite, case, [list(pair) for pair in pairs]] for (suite, case), pairs in listing.attributes.items()]
    cases = [list(case) for case in listing.cases]
    locations = {name: list(where) for name, where in listing.locations.items()}
    return {
        "format": LIST_FORMAT,
        "cases": cases,
        "locations": locations,
        "attributes": attributes,
        "empty_suites": list(listing.empty_suites),
    }


def load_case_list(cache_dir: Path, digest: str) -> CaseList | None:
    return case_list_from(_read_json(CacheLayout(cache_dir).case_list(digest), _valid_list))


def save_case_list(cache_dir: Path, digest: str, listing: CaseList) -> None:
    write_atomically(CacheLayout(cache_dir).case_list(digest), json.dumps(case_list_data(listing)))


def _valid_durations(data: Any) -> bool:
    return isinstance(data, dict) and all(
        isinstance(suites, dict)
        and all(type(seconds) in (int, float) and 0 <= seconds < math.inf for seconds in suites.values())
        for suites in data.values()
    )


def load_durations(cache_dir: Path, rootpath: Path) -> Durations:
    """Suite run times measured by earlier runs of this project: the weights batches are balanced by."""
    data = _read_json(CacheLayout(cache_dir).durations(rootpath), _valid_durations)
    return data if data is not None else {}


def save_durations(cache_dir: Path, rootpath: Path, measured: Durations) -> None:
    """Merge this run's suite times in; only the process that plans for everyone (never an xdist worker) writes."""
    if not measured:
        return
    path = CacheLayout(cache_dir).durations(rootpath)
    with cache_lock(cache_dir, f"durations-{path.stem}", "saving suite durations"):
        merged = load_durations(cache_dir, rootpath)
        for kernel, suites in measured.items():
            merged.setdefault(kernel, {}).update(suites)
        write_atomically(path, json.dumps(merged, indent=1, sort_keys=True))


def load_kvm_verdict(cache_dir: Path, key: str) -> str | None:
    """Why KVM failed on the machine `key` names (a QEMU binary on a host kernel), if it ever did."""
    path = CacheLayout(cache_dir).kvm_verdict(key)
    data = _read_json(path, lambda data: isinstance(data, dict) and isinstance(data.get("why"), str))
    return None if data is None else str(data["why"])


def save_kvm_verdict(cache_dir: Path, key: str, why: str) -> None:
    write_atomically(CacheLayout(cache_dir).kvm_verdict(key), json.dumps({"why": why}))


def load_shared_suites(cache_dir: Path, digest: str) -> set[str] | None:
    """The suites a fragment's own kernel would hold, as read from a shared kernel's build (sharing.py)."""
    data = _read_json(
        CacheLayout(cache_dir).shared_suites(digest),
        lambda data: isinstance(data, list) and all(isinstance(name, str) for name in data),
    )
    return None if data is None else set(data)


def save_shared_suites(cache_dir: Path, digest: str, suites: set[str]) -> None:
    write_atomically(CacheLayout(cache_dir).shared_suites(digest), json.dumps(sorted(suites)))


def saved_initramfs(cache_dir: Path, archive: bytes, crc: int) -> Path:
    """The initramfs `archive` (whose CRC-32 is `crc`) in the cache, written once."""
    path = CacheLayout(cache_dir).initramfs(crc)
    if not path.exists():
        write_atomically(path, archive)
    return path


def cache_id(cache_dir: Path) -> str:
    """The cache's identity, made once: processes that read the same one share a cache (one host, or one mount)."""
    path = CacheLayout(cache_dir).cache_id()
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        scratch = cache_dir / f".cache-id.{uuid.uuid4().hex}"
        scratch.write_text(uuid.uuid4().hex + "\n")
        try:
            os.link(scratch, path)  # whole or not at all, and the first process to make it wins
        except FileExistsError:
            pass
        finally:
            scratch.unlink()
    return path.read_text().strip()
