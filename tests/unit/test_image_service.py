"""The controller's image service as a hostile worker meets it: it builds only fragments the controller found itself
(asked for by the token it handed out), serves only images it built, and refuses anything else without quoting any
file; whatever fails while it answers, the worker hears why. And a worker never waits forever for an answer."""

from __future__ import annotations

import queue
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import execnet
import pytest

from pytest_kunit.arch import ARCHES
from pytest_kunit.errors import KunitError
from pytest_kunit.fragments.files import FragmentTable
from pytest_kunit.fragments.session import SessionState
from pytest_kunit.model import BuildResult, Kernel, Stats
from pytest_kunit.scaleout import image_service
from pytest_kunit.scaleout.image_service import WAITING, ImageClient, ImageService
from pytest_kunit.versions import TreeFeatures

SECRET = "TOP-SECRET-do-not-send"


class FakeChannel:
    """Both ends' view of an execnet channel: what was sent, and what `receive` will hand out (a timeout once none)."""

    def __init__(self, *replies: Any) -> None:
        self.sent: list[Any] = []
        self.replies: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for reply in replies:
            self.replies.put(reply)

    def send(self, item: Any) -> None:
        self.sent.append(item)

    def receive(self, timeout: float | None = None) -> Any:
        try:
            return self.replies.get(timeout=0)
        except queue.Empty:
            raise execnet.TimeoutError(f"no item after {timeout} seconds") from None


ARM64 = ARCHES["arm64"]


def kernel_at(image: Path) -> Kernel:
    build = BuildResult(image, "d1gest", image.parent, False, 0.0, image.parent / "build.log")
    features = TreeFeatures(filter_list=True, case_timeout=True)
    return Kernel("kunit.kunitconfig", build, cast(Any, None), features, image.parent, cases=())


@pytest.fixture
def service(tmp_path: Path) -> ImageService:
    (tmp_path / "secret.txt").write_text(f"{SECRET}\nCONFIG_KUNIT=y\n")
    (tmp_path / "other.kunitconfig").write_text(f"# {SECRET}\nCONFIG_KUNIT=y\n")  # a fragment it did not collect
    (tmp_path / "kunit.kunitconfig").write_text("CONFIG_KUNIT=y\n")

    def build_kernel(path: Path, key: str) -> Kernel:
        raise AssertionError(f"a hostile request made the controller build {path}")

    state = SimpleNamespace(
        config=SimpleNamespace(rootpath=tmp_path),
        pipeline=SimpleNamespace(unlisted=build_kernel),
        arches={"x86_64": ARCHES["x86_64"]},
    )
    table = FragmentTable({"fragment-0": tmp_path / "kunit.kunitconfig"}, {"kunit.kunitconfig": "fragment-0"})
    return ImageService(cast(SessionState, state), table)


HOSTILE = [
    ("kernel", "../secret.txt", "/etc/passwd", "kunit.kunitconfig"),  # the old request: a path the worker chose
    ("kernel", "SECRET_PATH"),
    ("kernel", "../secret.txt"),
    ("kernel", "other.kunitconfig"),
    ("kernel", "fragment-7"),
    ("kernel", ["fragment-0"]),
    ("kernel", "fragment-0"),  # a fragment without its architecture
    ("kernel", "fragment-0", "no-such-arch"),  # an architecture the run does not build
    ("kernel", "fragment-0", ["x86_64"]),
    ("kernel", "../secret.txt", "x86_64"),
    ("kernel", "SECRET_PATH", "x86_64"),
    ("image", "0" * 64),
    ("image", "SECRET_PATH"),
    ("decode", "0" * 64, ["RIP: 0010:x"]),
    ("nonsense",),
    "kernel",
    None,
]


@pytest.mark.parametrize("request_", HOSTILE, ids=repr)
def test_a_hostile_request_is_refused_without_any_files_content(
    service: ImageService, tmp_path: Path, request_: Any
) -> None:
    if isinstance(request_, tuple):
        request_ = tuple(str(tmp_path / "secret.txt") if part == "SECRET_PATH" else part for part in request_)
    channel = FakeChannel()
    service.serve_one(channel, request_)
    (reply,) = channel.sent
    assert isinstance(reply, dict) and reply["error"].startswith("The xdist controller refused a worker's request")
    assert SECRET not in repr(reply)
    assert not service.offers and not service._waiting


def test_an_image_that_cannot_be_read_is_an_error_the_worker_hears(service: ImageService, tmp_path: Path) -> None:
    """Before the fix, an OSError while answering (the image rebuilt or removed since it was offered, a full disk)
    was swallowed and the worker waited forever."""
    service.kernels["d1gest"] = kernel_at(tmp_path / "gone" / "vmlinux")
    channel = FakeChannel()
    service.serve_one(channel, ("image", "d1gest"))
    (reply,) = channel.sent
    assert reply["error"] == "The xdist controller failed to serve a worker (FileNotFoundError)."


def test_a_worker_waiting_hears_that_the_controller_is_busy(service: ImageService) -> None:
    channel = FakeChannel()
    service.receive(channel, ("kernel", "fragment-7"), "gw0")
    assert service._waiting == {id(channel): (channel, 1)}
    service.serve_one(channel, service.requests.get())
    assert service._waiting == {}


def client(channel: FakeChannel, tmp_path: Path) -> ImageClient:
    return ImageClient(channel, {"kunit.kunitconfig": "fragment-0"}, tmp_path / "cache", Stats())


def test_a_silent_controller_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_service, "RECEIVE_TIMEOUT", 0.01)
    with pytest.raises(KunitError, match=r"The xdist controller has said nothing for 0 s"):
        client(FakeChannel(), tmp_path).decode(kernel_at(tmp_path / "vmlinux"), ("line",))


def test_waiting_notes_only_restart_the_clock(tmp_path: Path) -> None:
    channel = FakeChannel(WAITING, WAITING, ["decoded"])
    assert client(channel, tmp_path).decode(kernel_at(tmp_path / "vmlinux"), ("raw",)) == ("decoded",)
    assert channel.sent == [("decode", "d1gest", ["raw"])]


def test_a_worker_asks_by_token_and_never_for_a_fragment_the_controller_did_not_find(tmp_path: Path) -> None:
    (tmp_path / "kunit.kunitconfig").write_text("CONFIG_KUNIT=y\n")
    (tmp_path / "mine.kunitconfig").write_text("CONFIG_KUNIT=y\n")
    channel = FakeChannel({"error": "stop here", "remedy": "", "detail": ""})
    with pytest.raises(KunitError, match="stop here"):
        client(channel, tmp_path).kernel(tmp_path / "kunit.kunitconfig", "kunit.kunitconfig", tmp_path, ARM64)
    assert channel.sent == [("kernel", "fragment-0", "arm64")]
    with pytest.raises(KunitError, match=r"did not find the fragment mine\.kunitconfig"):
        client(channel, tmp_path).kernel(tmp_path / "mine.kunitconfig", "mine.kunitconfig", tmp_path, ARM64)
    assert len(channel.sent) == 1


class FakeReporter:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, line: str, flush: bool = False) -> None:
        self.lines.append(line)


def test_a_worker_s_progress_is_a_line_on_the_controller_s_terminal_and_nothing_else(service: ImageService) -> None:
    reporter = FakeReporter()
    plugins = {"terminalreporter": reporter}
    cast(Any, service.state.config).pluginmanager = SimpleNamespace(get_plugin=plugins.get)
    channel = FakeChannel()
    service.receive(channel, {image_service.PROGRESS: "building kernel: \x1b[2J\x1b]0;owned\x07make\nnext"}, "gw1")
    service.receive(channel, {image_service.PROGRESS: "x" * 10_000}, "gw0")
    service.receive(channel, {image_service.PROGRESS: ["not", "text"]}, "gw0")
    # Shown, stripped of terminal controls, on one line, cut; never answered, never queued as a request.
    assert reporter.lines == [
        "[gw1] kunit: building kernel: make next",
        "[gw0] kunit: " + "x" * image_service.PROGRESS_CHARACTERS,
    ]
    assert channel.sent == [] and service.requests.empty() and not service._waiting
