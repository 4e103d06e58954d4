#!/usr/bin/env python3
"""6.12's `--alltests` on UML spread over two hosts, warm: one local xdist worker and one on a second host, against
`-n 2` on one host and kunit.py's warm `--alltests`, in rounds alternating their order.

    bench/two_hosts.py --tree TREE --cache CACHE --kunitpy-tree COPY --kunitpy-build DIR [--rounds 3]

Both tools' kernels must be built already (bench/kunitpy_alltests.py leaves them: CACHE is its pytest-kunit cache,
COPY and DIR kunit.py's tree and build directory). The second host is a user of this machine (--user, default
kunit-remote, which scripts/setup.sh --test adds with a Python environment of its own), reached over execnet's socket
server as another machine is. As a second machine would be readied, the bench installs this checkout's pytest-kunit
there (a wheel) and gives it a copy of the tree in its home (hard links; a worker's chdir, into which xdist copies
pytest). The controller's cache is CACHE, given as XDG_CACHE_HOME (`--kunit-cache-dir` would reach the second host
too); the local worker shares it, the second host keeps its own. Scenarios:

- `-n 2`: two local workers;
- two hosts, the second's cache emptied first: its image travels once;
- two hosts, warm: nothing travels;
- kunit.py's warm `--alltests --jobs=2`.

Prints each scenario's median wall time, its boots and the bytes fetched, and whether every case's verdict (each
run's kunit.py-shaped JSON) equals kunit.py's. Run as root (runuser). Exit 0 when every verdict agrees.
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kunitpy_alltests import ENV, Verdicts, verdicts

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its tests' second host

from tests.second_host import as_user, socket_server

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p"]
PYTEST += ["no:benchmark", "--kunit", "--kunit-alltests", "--kunit-arch=um"]
BOOTS = re.compile(r"^kernel builds: \d+ \([^)]*\); guest boots: (\d+)", re.MULTILINE)
FETCHED = re.compile(r"^kernel images fetched from the controller by hosts .*: (\d+) \(([\d.]+) MB\)", re.MULTILINE)


def ready_second_host(user: str, tree: Path, scratch: Path) -> tuple[Path, Path]:
    """This checkout's pytest-kunit installed in the user's environment, and the user's copy of the tree: its Python
    and that copy."""
    home = Path(pwd.getpwnam(user).pw_dir)
    python = home / ".venv" / "bin" / "python"
    wheels = scratch / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", str(wheels)]
    subprocess.run([*build, str(ROOT)], check=True)
    os.chmod(scratch, 0o755)
    for path in (wheels, *wheels.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
    install.append("--force-reinstall")
    subprocess.run([*as_user(user), *install, *map(str, wheels.glob("*.whl"))], check=True)
    copy = home / tree.name
    if not copy.exists():
        subprocess.run(["cp", "-al", str(tree), str(copy)], check=True)
        shutil.chown(copy, user, user)  # only its top: xdist writes pytest's package there
    return python, copy


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    process = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise SystemExit(f"failed ({process.returncode}): {' '.join(command)}\n{process.stdout[-3000:]}")
    return seconds, process.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the 6.12 tree pytest-kunit runs in")
    parser.add_argument("--cache", type=Path, required=True, help="the pytest-kunit cache holding its build")
    parser.add_argument("--kunitpy-tree", type=Path, required=True, help="kunit.py's copy of the tree")
    parser.add_argument("--kunitpy-build", type=Path, required=True, help="kunit.py's build directory")
    parser.add_argument("--user", default="kunit-remote", help="the second host")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tree, cache = args.tree.resolve(), args.cache.resolve()
    with tempfile.TemporaryDirectory(prefix="kunit-two-hosts-") as scratch_name:
        scratch = Path(scratch_name)
        xdg = scratch / "xdg"
        xdg.mkdir()
        (xdg / "pytest-kunit").symlink_to(cache)
        env = ENV | {"XDG_CACHE_HOME": str(xdg)}
        python, copy = ready_second_host(args.user, tree, scratch)
        second_cache = Path(pwd.getpwnam(args.user).pw_dir) / ".cache" / "pytest-kunit"
        kunitpy = [sys.executable, "tools/testing/kunit/kunit.py", "run", "--alltests", "--arch=um", "--jobs=2"]
        kunitpy += [f"--build_dir={args.kunitpy_build.resolve()}", f"--json={scratch / 'kunitpy.json'}"]
        with socket_server(args.user, python, scratch / "socket-server.log") as address:
            two_hosts = [*PYTEST, "-d", "--tx", "popen", "--tx", f"socket={address}//chdir={copy}"]
            scenarios = {
                "`-n 2`, one host": [*PYTEST, "-n", "2"],
                "1 local + 1 second-host worker, its cache empty": two_hosts,
                "1 local + 1 second-host worker, warm": two_hosts,
            }
            times: dict[str, list[float]] = {name: [] for name in [*scenarios, "kunit.py"]}
            boots: dict[str, set[str]] = {name: set() for name in scenarios}
            fetched: dict[str, set[str]] = {name: set() for name in scenarios}
            agree: dict[str, bool] = {name: True for name in scenarios}
            for turn in range(args.rounds):
                order = list(times) if turn % 2 == 0 else list(reversed(times))
                ours: dict[str, Verdicts] = {}
                for name in order:
                    if name == "kunit.py":
                        times[name].append(run(kunitpy, args.kunitpy_tree.resolve(), ENV)[0])
                        continue
                    if name.endswith("cache empty"):
                        subprocess.run([*as_user(args.user), "rm", "-rf", str(second_cache)], check=True)
                    report = scratch / "pk.json"
                    seconds, output = run([*scenarios[name], f"--kunit-json={report}"], tree, env)
                    times[name].append(seconds)
                    boots[name].add(next(iter(BOOTS.findall(output)), "?"))
                    travelled = FETCHED.search(output)
                    fetched[name].add(f"{travelled[1]} ({travelled[2]} MB)" if travelled else "0")
                    ours[name] = verdicts(report)
                theirs = verdicts(scratch / "kunitpy.json")
                for name, found in ours.items():
                    agree[name] = agree[name] and found == theirs
        cases = len(theirs)
    reference = statistics.median(times["kunit.py"])
    print(f"6.12 alltests on UML, {args.rounds} rounds, {cases} cases; load now {os.getloadavg()[0]:.1f}")
    print("| run | median | runs | ratio to kunit.py | boots | images fetched | every verdict kunit.py's |")
    print("| --- | ---: | --- | ---: | --- | --- | --- |")
    for name, runs in times.items():
        median = statistics.median(runs)
        listed = ", ".join(f"{seconds:.1f}" for seconds in runs)
        said = ["—"] * 3
        if name in boots:
            said = [", ".join(sorted(boots[name])), ", ".join(sorted(fetched[name])), "yes" if agree[name] else "NO"]
        print(f"| {name} | {median:.1f} s | {listed} | {median / reference:.2f} | {' | '.join(said)} |")
    return 0 if all(agree.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
