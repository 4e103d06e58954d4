"""Guests on two hosts in one run: a local xdist worker and one on a second host, here a user of this machine of its
own (kunit-remote: its own HOME, so its own cache, and its own Python environment with pytest-kunit installed;
scripts/setup.sh --test adds both), reached as a second machine is, over execnet's socket server
(`--tx socket=HOST:PORT//chdir=DIR`, docs/features.md). The second host holds a checkout of the project, as every
host does; the kernel is UML's of the tier (conftest.KERNELS["um"]), which the controller has built: the local worker
boots it from the controller's cache, the second host fetches its image once into its own."""

from __future__ import annotations

import pwd
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_kunit.kernel.image import file_digest

from ..second_host import as_user, socket_server
from .conftest import FAULTS, FRAMEWORK, ROOT, TIER_CACHE, Kunit

pytestmark = [pytest.mark.real("um"), pytest.mark.xdist_group("um")]

USER = "kunit-remote"
UML = "--kunit-arch=um"
# The framework fragment whole, and of the fault suite a failure, a crash (UML panics: a reboot, and the report is
# decoded on the controller, where the vmlinux is) and the cases after each: no hang, which would cost a timeout a run.
# Less the executor's case that checks only on a boot with kunit.filter_glob and skips on one without: whether its
# batch boots filtered depends on how a run deals its batches to workers, not on the host.
FRAGMENTS = f"testpaths={FRAMEWORK} {FAULTS}"
SELECTION = (
    "(not faults_ or faults_fail or faults_pass_after_fail or faults_null_dereference or faults_pass_after_null)"
    " and not filter_suites_that_ran_outlive_the_run_test"
)
# What a host's checkout must hold for a worker: the rootdir's ini, the fragments, and pytest-kunit's own code, which
# comes first on a socket worker's sys.path (xdist puts its directory there) over the copy installed on the host.
CHECKOUT = ("pyproject.toml", "testsuites", "pytest_kunit")


@dataclass(frozen=True)
class SecondHost:
    address: str  # HOST:PORT of its socket server
    checkout: Path  # the project's checkout there, a worker's chdir
    cache: Path  # its pytest-kunit cache (its own XDG default)


@pytest.fixture
def second_host(tmp_path: Path) -> Iterator[SecondHost]:
    """The second host's socket server, started as its user with an empty cache and a fresh checkout of the project;
    ended with its process group (the workers and guests it started)."""
    try:
        home = Path(pwd.getpwnam(USER).pw_dir)
    except KeyError:
        pytest.fail(f"no user {USER}, the real tier's second host: scripts/setup.sh --test adds it")
    python = home / ".venv" / "bin" / "python"
    assert python.exists(), f"{USER} has no {python}: scripts/setup.sh --test makes it"
    checkout, cache = home / "project", home / ".cache" / "pytest-kunit"
    subprocess.run([*as_user(USER), "rm", "-rf", str(checkout), str(cache)], check=True)
    subprocess.run([*as_user(USER), "mkdir", "-p", str(checkout)], check=True)
    # Written by its user from a tar stream: it cannot read this checkout, wherever it lies.
    packed = subprocess.run(
        ["tar", "-C", str(ROOT), "--exclude=__pycache__", "-cf", "-", *CHECKOUT], check=True, capture_output=True
    )
    subprocess.run([*as_user(USER), "tar", "-C", str(checkout), "-xf", "-"], input=packed.stdout, check=True)
    with socket_server(USER, python, tmp_path / "socket-server.log") as address:
        yield SecondHost(address, checkout, cache)


def test_a_run_over_two_hosts_gives_the_single_host_verdicts(kunit: Kunit, second_host: SecondHost) -> None:
    kunit.kernel("um")
    alone = kunit.run(UML, "-o", FRAGMENTS, "-k", SELECTION, "--kunit-timeout=30")
    assert "kernel builds: 0 " in alone.stdout, alone.report()
    spread = kunit.run(
        UML,
        "-o",
        FRAGMENTS,
        "-k",
        SELECTION,
        "--kunit-timeout=30",
        "-d",
        "--tx",
        "popen",
        "--tx",
        f"socket={second_host.address}//chdir={second_host.checkout}",
    )
    report = spread.report()
    # Every case, the same verdict: a failure and a crash among them, the crash decoded where the kernel was built.
    assert len(alone.outcomes) > 50 and spread.outcomes == alone.outcomes, report
    assert alone.outcomes["faults.faults_null_dereference"] == "failure", alone.report()
    assert spread.returncode == alone.returncode == 1, report
    assert re.search(r"kunit_try_run_case \(lib/kunit/test\.c:\d+\)", spread.stdout), report
    # Built by nobody (the controller's build is warm); fetched once, by the second host, into its own cache: the
    # local worker shares the controller's cache and boots the build there.
    assert "kernel builds: 0 " in spread.stdout, report
    assert "kernel images fetched from the controller by hosts that share no cache with it: 1 (" in spread.stdout
    (image,) = (second_host.cache / "images").glob("*/linux")
    assert file_digest(image) == image.parent.name, report
    assert not (TIER_CACHE / "images" / image.parent.name).exists(), report
    # Guests booted on both hosts: the second host's from the image it fetched, the local worker's from the build.
    boots = re.findall(r"^\[(gw\d)\] kunit: booting the kernel of \S+ \((\S+)\)", spread.stdout, re.MULTILINE)
    assert {worker for worker, _ in boots} == {"gw0", "gw1"}, report
    assert all(Path(booted) == image for worker, booted in boots if worker == "gw1"), report
    assert all(Path(booted).is_relative_to(TIER_CACHE / "build") for worker, booted in boots if worker == "gw0")
    assert any((second_host.cache / "consoles" / image.parent.name).iterdir()), report
    assert "[gw1] linux Python" in spread.stdout and f"cwd: {second_host.checkout}" in spread.stdout, report
