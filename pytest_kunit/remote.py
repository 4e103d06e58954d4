"""Guests on hosts that share no cache with the xdist controller (`-d --tx ssh=HOST`, or popen workers with a cache
of their own): the controller builds each kernel once and serves its image by content hash over an execnet channel
it opens beside xdist's own; each host fetches an image once into its own cache, and has crash reports decoded where
the kernel was built (its vmlinux and tree stay there). Nothing is rsynced."""

from __future__ import annotations

import os
import queue
import threading
import traceback
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .build import BuildResult
from .cache import CaseList, case_list_data, case_list_from, load_case_list
from .errors import KunitError
from .image import ImageRecord, check_image, file_digest
from .initramfs import initramfs
from .locking import cache_lock
from .runner import Kernel
from .sources import case_locations
from .tree import TreeFeatures
from .workers import workerinput

if TYPE_CHECKING:
    import pytest

    from .arch import Arch
    from .runner import Stats
    from .session import SessionState

SERVICE_KEY = "kunit_service"  # workerinput: the channel to the controller's ImageService
CACHE_ID_KEY = "kunit_cache_id"  # workerinput: the controller's cache identity
CHUNK = 1 << 20


def cache_id(cache_dir: Path) -> str:
    """The cache's identity, made once: processes that read the same one share a cache (one host, or one mount)."""
    path = cache_dir / "cache-id"
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


@dataclass(frozen=True)
class Offer:
    """What the controller tells a worker of one fragment's kernel (sent as a dict)."""

    key: str
    image_digest: str
    image_name: str
    size: int
    executable: bool
    tree: str  # on the controller's host: named in reports, never read here
    features: dict[str, bool]
    locations: dict[str, list[Any]]  # case -> [file, line], from the controller's build
    listing: dict[str, Any] | None  # the controller's cached case list, if it has one (else the worker lists)
    boot_args: list[str]  # on every boot of this image (its sanitizers' own, its /init's)
    initramfs: bool  # whether it boots with the initramfs whose /init runs after KUnit (made on each host)
    suites: list[str] | None = None  # the fragment's own suites in a shared kernel (sharing.py); None: all


def _failure(error: BaseException) -> dict[str, str]:
    if isinstance(error, KunitError):
        return {"error": error.what, "remedy": error.remedy, "detail": error.detail}
    detail = "".join(traceback.format_exception(error))
    return {"error": f"The xdist controller failed to serve a worker: {error!r}", "remedy": "", "detail": detail}


class ImageService:
    """The controller's side: builds what workers ask for (once per fragment), serves images by digest in chunks,
    decodes crash reports. Requests arrive in execnet's receiver thread and are served one at a time by a thread of
    their own, so a long build never holds up xdist's messages."""

    def __init__(self, state: SessionState) -> None:
        self.state = state
        self.requests: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        self.offers: dict[str, dict[str, Any]] = {}  # by node id: an Offer's fields, or a failure
        self.kernels: dict[str, Kernel] = {}  # by image digest
        self._thread: threading.Thread | None = None

    def open_for(self, node: Any) -> Any:
        """A channel to this service on the worker's gateway, for its workerinput."""
        channel = node.gateway.newchannel()
        channel.setcallback(lambda message: self.requests.put((channel, message)))
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="kunit-image-service", daemon=True)
            self._thread.start()
        return channel

    def _serve(self) -> None:
        while True:
            channel, message = self.requests.get()
            try:
                self._answer(channel, message)
            except OSError:
                pass  # the worker is gone: nobody to answer
            except Exception as error:  # one bad request must not leave every worker waiting
                channel.send(_failure(error))

    def _answer(self, channel: Any, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "kernel":
            _, relative, absolute, key = message
            if key not in self.offers:
                try:
                    self.offers[key] = self._offer(relative, absolute, key)
                except KunitError as error:
                    self.offers[key] = _failure(error)  # each worker hears it; the build is not tried again
            channel.send(self.offers[key])
        elif kind == "image":
            image = self.kernels[message[1]].build.image
            with image.open("rb") as stream:
                for block in iter(lambda: stream.read(CHUNK), b""):
                    channel.send(block)
            channel.send(b"")
        elif kind == "decode":
            kernel = self.kernels[message[1]]
            channel.send(list(self.state.runner.decode(kernel, tuple(message[2]))))

    def _offer(self, relative: str | None, absolute: str, key: str) -> dict[str, Any]:
        path = self.state.config.rootpath / relative if relative is not None else Path(absolute)
        if not path.is_file():
            raise KunitError(
                f"The xdist controller has no fragment {path} (a worker collected it as {key}).",
                "start pytest on the controller in a checkout of the same project the workers run in: each fragment "
                "must lie at the same place under the rootdir on both sides.",
            )
        kernel = self.state.build_kernel(path, key)
        digest = kernel.build.image_digest
        self.kernels[digest] = kernel
        image = kernel.build.image
        listing = load_case_list(self.state.settings.cache_dir, digest)
        locations = listing.locations if listing else case_locations(kernel.tree, kernel.build.build_dir)
        offer = Offer(
            key=key,
            image_digest=digest,
            image_name=image.name,
            size=image.stat().st_size,
            executable=os.access(image, os.X_OK),
            tree=str(kernel.tree),
            features=asdict(kernel.features),
            locations={name: list(where) for name, where in locations.items()},
            listing=case_list_data(listing) if listing else None,
            boot_args=list(kernel.boot_args),
            initramfs=kernel.initrd is not None,
            suites=sorted(kernel.suites) if kernel.suites is not None else None,
        )
        return asdict(offer)


class ImageClient:
    """A worker's side: asks the controller for each fragment's kernel, and keeps its image in this host's cache when
    a guest first boots it (one fetch per host: the cache lock makes the other workers wait and reuse it); a kernel
    none of whose cases is selected never travels."""

    def __init__(self, channel: Any, cache_dir: Path, stats: Stats) -> None:
        self.channel = channel
        self.cache_dir = cache_dir
        self.stats = stats
        self.unfetched: dict[str, Offer] = {}  # by image digest: offered, not yet in place here

    def _receive(self) -> Any:
        reply = self.channel.receive()
        if isinstance(reply, dict) and "error" in reply:
            raise KunitError(reply["error"], reply["remedy"], detail=reply["detail"])
        return reply

    def kernel(
        self, path: Path, key: str, rootpath: Path, arch: Arch
    ) -> tuple[Kernel, CaseList | None, dict[str, tuple[str, int]]]:
        """The fragment's kernel (its image where this host's cache keeps it, fetched before its first boot), the
        controller's case list if it had one, and its cases' C locations."""
        try:
            relative: str | None = path.resolve().relative_to(rootpath).as_posix()
        except ValueError:
            relative = None
        self.channel.send(("kernel", relative, str(path.resolve()), key))
        offer = Offer(**self._receive())
        image = self.cache_dir / "images" / offer.image_digest / offer.image_name
        self.unfetched[offer.image_digest] = offer
        build = BuildResult(image, offer.image_digest, image.parent, False, 0.0, image.parent / "build.log")
        features = TreeFeatures(**offer.features)
        initrd = initramfs(self.cache_dir, "the kernel's /init after KUnit") if offer.initramfs else None
        boot_args = tuple(offer.boot_args)
        suites = frozenset(offer.suites) if offer.suites is not None else None
        kernel = Kernel(
            key, build, arch, features, Path(offer.tree), cases=(), boot_args=boot_args, initrd=initrd, suites=suites
        )
        locations = {name: (str(where[0]), int(where[1])) for name, where in offer.locations.items()}
        return kernel, case_list_from(offer.listing), locations

    def obtain(self, kernel: Kernel) -> None:
        """The kernel's image in this host's cache, fetched unless a worker here has it already."""
        offer = self.unfetched.get(kernel.build.image_digest)
        if offer is not None:
            self._fetch(offer, kernel.arch)
            del self.unfetched[offer.image_digest]

    def _fetch(self, offer: Offer, arch: Arch) -> None:
        directory = self.cache_dir / "images" / offer.image_digest
        image = directory / offer.image_name
        record = ImageRecord(offer.image_digest, offer.size)
        with cache_lock(self.cache_dir, f"image-{offer.image_digest}", "fetching a kernel image from the controller"):
            if image.exists() and not check_image(image, arch.make.elf, record).problem:
                return
            directory.mkdir(parents=True, exist_ok=True)
            partial = directory / f".{offer.image_name}.partial"
            self.channel.send(("image", offer.image_digest))
            with partial.open("wb") as stream:
                while block := self._receive():
                    stream.write(block)
            if (partial.stat().st_size, file_digest(partial)) != (offer.size, offer.image_digest):
                partial.unlink()
                raise KunitError(
                    f"The kernel image {offer.image_digest} arrived from the xdist controller damaged.",
                    "run again; if it keeps happening, the controller's image changed while it was sent (another "
                    "session rebuilding it): let that session finish first.",
                )
            if offer.executable:
                partial.chmod(0o755)
            os.replace(partial, image)
            self.stats.fetches += 1
            self.stats.fetched_bytes += offer.size

    def decode(self, kernel: Kernel, lines: tuple[str, ...]) -> tuple[str, ...]:
        self.channel.send(("decode", kernel.build.image_digest, list(lines)))
        return tuple(self._receive())


def worker_client(config: pytest.Config, cache_dir: Path, stats: Stats) -> ImageClient | None:
    """The client of the controller's image service, on an xdist worker whose cache is not the controller's; None
    elsewhere (a worker sharing the cache builds for itself, under the cache's locks, as `-n N` always has)."""
    given = workerinput(config)
    if given is None or SERVICE_KEY not in given or given.get(CACHE_ID_KEY) == cache_id(cache_dir):
        return None
    return ImageClient(given[SERVICE_KEY], cache_dir, stats)
