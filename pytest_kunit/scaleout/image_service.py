"""Guests on hosts that share no cache with the xdist controller (`-d --tx ssh=HOST`, or popen workers with a cache
of their own): the controller builds each kernel once and serves its image by content hash over an execnet channel
it opens beside xdist's own; each host fetches an image once into its own cache, and has crash reports decoded where
the kernel was built (its vmlinux and tree stay there). Nothing is rsynced."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import execnet

from ..compat import open_worker_channel
from ..console.transcript import strip_controls
from ..errors import KunitError
from ..fragments.files import FragmentTable, fragment_name
from ..guest.initramfs import initramfs
from ..host.cache import CaseList, cache_id, case_list_data, case_list_from, load_case_list
from ..host.cachelayout import IMAGES, CacheLayout
from ..host.locking import cache_lock
from ..kbuild.case_locations import case_locations
from ..kernel.image import ImageRecord, check_image, file_digest
from ..model import BuildResult, Kernel, kernel_key
from ..versions import TreeFeatures

if TYPE_CHECKING:
    from ..arch import Arch
    from ..fragments.session import SessionState
    from ..model import Stats
    from .protocol import WorkerInput

CHUNK = 1 << 20
PROGRESS = "kunit-progress"  # the key of a worker's progress line for the controller's terminal: no answer
PROGRESS_CHARACTERS = 300  # a progress line's length on the controller's terminal, at most
WAITING = "kunit-waiting"  # what the controller sends a worker whose request it has not answered yet
HEARTBEAT = 30.0  # seconds between WAITING notes
RECEIVE_TIMEOUT = 600.0  # seconds of silence after which a worker gives the controller up


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
    # Where it failed, not what it said: an error's message may quote a file the worker has no business reading.
    detail = "".join(traceback.format_tb(error.__traceback__))
    return {
        "error": f"The xdist controller failed to serve a worker ({type(error).__name__}).",
        "remedy": "",
        "detail": detail,
    }


def _refusal(what: str) -> dict[str, str]:
    """The answer to a request the service does not serve: what was refused, never what any file holds."""
    return _failure(
        KunitError(
            f"The xdist controller refused a worker's request: {what}.",
            "run every worker from a checkout of the same project as the controller, with the same pytest-kunit.",
        )
    )


class ImageService:
    """The controller's side: builds the fragments it found itself (files.py) when a worker asks by the token it
    was handed (once per fragment), serves the images it built by digest in chunks, decodes crash reports of those
    images; refuses anything else. Requests arrive in execnet's receiver thread and are served one at a time by a
    thread of their own, so a long build never holds up xdist's messages; meanwhile every worker with a request
    waiting hears WAITING every HEARTBEAT seconds, so its silence timeout means a controller gone, not busy."""

    def __init__(self, state: SessionState, fragments: FragmentTable) -> None:
        self.state = state
        self.fragments = fragments
        self.requests: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        self.offers: dict[str, dict[str, Any]] = {}  # by fragment token: an Offer's fields, or a failure
        self.kernels: dict[str, Kernel] = {}  # by image digest: the images this service built
        self._waiting: dict[int, tuple[Any, int]] = {}  # by id(channel): the channel, its unanswered requests
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def open_for(self, node: Any) -> Any:
        """A channel to this service on the worker's gateway, for its workerinput."""
        channel = open_worker_channel(node)
        worker = str(node.gateway.id)
        channel.setcallback(lambda message: self.receive(channel, message, worker))
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="kunit-image-service", daemon=True)
            self._thread.start()
            threading.Thread(target=self._heartbeat, name="kunit-image-heartbeat", daemon=True).start()
        return channel

    def receive(self, channel: Any, message: Any, worker: str) -> None:
        if isinstance(message, dict) and message.keys() == {PROGRESS}:
            self._show_progress(worker, message[PROGRESS])
            return
        self._count(channel, +1)
        self.requests.put((channel, message))

    def _show_progress(self, worker: str, text: Any) -> None:
        """A worker's build or boot advancing, on the controller's terminal as a line of its own (each worker sends
        one per 15 s at most: progress.py), stripped of terminal controls and cut."""
        reporter = self.state.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and isinstance(text, str):
            line = strip_controls(text).replace("\n", " ")[:PROGRESS_CHARACTERS]
            reporter.write_line(f"[{worker}] kunit: {line}", flush=True)

    def _count(self, channel: Any, change: int) -> None:
        with self._lock:
            count = self._waiting.get(id(channel), (channel, 0))[1] + change
            if count > 0:
                self._waiting[id(channel)] = (channel, count)
            else:
                self._waiting.pop(id(channel), None)

    def _heartbeat(self) -> None:
        while True:
            time.sleep(HEARTBEAT)
            with self._lock:
                channels = [channel for channel, _ in self._waiting.values()]
            for channel in channels:
                with contextlib.suppress(OSError):  # the worker is gone
                    channel.send(WAITING)

    def _serve(self) -> None:
        while True:
            channel, message = self.requests.get()
            self.serve_one(channel, message)

    def serve_one(self, channel: Any, message: Any) -> None:
        """Answer one request; whatever fails (a build, an image rebuilt since it was offered, a full disk), the worker
        hears why instead of waiting forever."""
        try:
            self._answer(channel, message)
        except Exception as error:
            with contextlib.suppress(OSError):  # the worker is gone: nobody to tell
                channel.send(_failure(error))
        finally:
            self._count(channel, -1)

    def _answer(self, channel: Any, message: Any) -> None:
        kind = message[0] if isinstance(message, tuple | list) and message else None
        if kind == "kernel" and len(message) == 3:
            token, arch = message[1], self.state.arches.get(message[2]) if isinstance(message[2], str) else None
            path = self.fragments.path(token)
            if path is None or arch is None:
                channel.send(_refusal("it names no fragment or architecture this controller collected"))
                return
            offered = f"{token}:{arch.name}"
            if offered not in self.offers:
                try:
                    self.offers[offered] = self._offer(path, token, arch)
                except KunitError as error:
                    self.offers[offered] = _failure(error)  # each worker hears it; the build is not tried again
            channel.send(self.offers[offered])
        elif kind == "image" and len(message) == 2 and message[1] in self.kernels:
            image = self.kernels[message[1]].build.image
            with image.open("rb") as stream:
                for block in iter(lambda: stream.read(CHUNK), b""):
                    channel.send(block)
            channel.send(b"")
        elif kind == "decode" and len(message) == 3 and message[1] in self.kernels:
            lines = tuple(line for line in message[2] if isinstance(line, str))
            channel.send(list(self.state.runner.decode(self.kernels[message[1]], lines)))
        else:
            channel.send(_refusal("it asks for nothing this controller offered"))

    def _offer(self, path: Path, token: str, arch: Arch) -> dict[str, Any]:
        key = fragment_name(self.state.config.rootpath, path)
        if self.state.settings.matrix:
            key = kernel_key(key, arch.name)  # as the workers' node ids key it
        kernel = self.state.pipeline.unlisted(path, key, arch)
        digest = kernel.build.image_digest
        self.kernels[digest] = kernel
        image = kernel.build.image
        listing = load_case_list(self.state.settings.cache_dir, digest)
        locations = listing.locations if listing else case_locations(kernel.tree, kernel.build.build_dir)
        offer = Offer(
            key=token,
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

    def __init__(self, channel: Any, fragments: dict[str, str], cache_dir: Path, stats: Stats) -> None:
        self.channel = channel
        self.fragments = fragments  # fragment_name -> the token the controller handed out for it
        self.cache_dir = cache_dir
        self.stats = stats
        self.unfetched: dict[str, Offer] = {}  # by image digest: offered, not yet in place here

    def _receive(self) -> Any:
        """The controller's next answer; its WAITING notes only restart the clock. Silence for RECEIVE_TIMEOUT
        seconds means the controller or the connection is gone."""
        while True:
            try:
                reply = self.channel.receive(timeout=RECEIVE_TIMEOUT)
            except execnet.TimeoutError:
                raise KunitError(
                    f"The xdist controller has said nothing for {RECEIVE_TIMEOUT:.0f} s: it or the connection to it "
                    "is gone.",
                    "look at the controller's output for what stopped it, and run again.",
                ) from None
            if reply != WAITING:
                break
        if isinstance(reply, dict) and "error" in reply:
            raise KunitError(reply["error"], reply["remedy"], detail=reply["detail"])
        return reply

    def kernel(
        self, path: Path, key: str, rootpath: Path, arch: Arch
    ) -> tuple[Kernel, CaseList | None, dict[str, tuple[str, int]]]:
        """The fragment's kernel (its image where this host's cache keeps it, fetched before its first boot), the
        controller's case list if it had one, and its cases' C locations."""
        name = fragment_name(rootpath, path)
        token = self.fragments.get(name)
        if token is None:
            raise KunitError(
                f"The xdist controller did not find the fragment {name} this worker collected, and builds no other.",
                "start pytest on the controller in a checkout of the same project the workers run in, with the same "
                "arguments: each fragment must lie at the same place under the rootdir on both sides.",
            )
        self.channel.send(("kernel", token, arch.name))
        offer = Offer(**self._receive())
        image = CacheLayout(self.cache_dir).fetched_image_dir(offer.image_digest) / offer.image_name
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
        layout = CacheLayout(self.cache_dir)
        directory = layout.fetched_image_dir(offer.image_digest)
        image = directory / offer.image_name
        record = ImageRecord(offer.image_digest, offer.size)
        lock = layout.lock_name(IMAGES, offer.image_digest)
        with cache_lock(self.cache_dir, lock, "fetching a kernel image from the controller"):
            layout.mark_used(directory)
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


def progress_sender(given: WorkerInput) -> Callable[[str], None]:
    """On an xdist worker: a progress line sent to the controller's terminal (its own goes nowhere anyone sees)."""

    def send(text: str) -> None:
        with contextlib.suppress(OSError):  # the controller is gone: nobody to tell
            given.service.send({PROGRESS: text})

    return send


def worker_client(given: WorkerInput | None, cache_dir: Path, stats: Stats) -> ImageClient | None:
    """The client of the controller's image service, on an xdist worker (`given` its input) whose cache is not the
    controller's; None elsewhere (a worker sharing the cache builds for itself, under the cache's locks, as `-n N`
    always has)."""
    if given is None or given.cache_id == cache_id(cache_dir):
        return None
    return ImageClient(given.service, given.fragments, cache_dir, stats)
