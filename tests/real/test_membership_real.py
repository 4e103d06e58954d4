"""membership on the real tier's warm builds (the packaged 6.1 tree and the others in the default cache): the suite
tables read from each build's objects, and Kbuild's Makefiles evaluated under each build's own configuration,
reproduce that build exactly. Skips where no such build is in the cache; builds nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pytest_kunit.kconfig import read_dotconfig
from pytest_kunit.membership import Unknown, autoconf_header, compile_command, suite_objects, suites_alone
from pytest_kunit.suitetable import suite_digests

pytestmark = pytest.mark.real

BUILDS = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-kunit" / "build"
WARM = sorted(path for path in BUILDS.glob("*") if (path / "vmlinux.a").exists() and (path / "source").exists())


def configured(build: Path) -> dict[str, str]:
    return read_dotconfig((build / ".config").read_text())


def find(*symbols: str, unset: str = "CONFIG_UML") -> Path:
    """A warm x86_64 build of the packaged 6.1 tree whose configuration sets `symbols` and not `unset`."""
    for build in WARM:
        config = configured(build)
        wanted = all(config.get(symbol) == "y" for symbol in ("CONFIG_X86_64", *symbols))
        if wanted and unset not in config and (build / "source/lib/kunit/seed-example-test.c").exists():
            return build
    pytest.skip(f"no warm build with {', '.join(symbols)} in {BUILDS}")


@pytest.mark.parametrize("build", WARM, ids=[build.name for build in WARM])
def test_a_build_read_as_its_own_union_holds_all_its_suites(build: Path, tmp_path: Path) -> None:
    names = {name for item in suite_objects(build) for name in item.suites}
    config = configured(build)
    assert suites_alone((build / "source").resolve(), build, config, config, tmp_path) == names


def test_the_framework_suites_are_read_from_their_objects() -> None:
    objects = {
        item.path: item.suites for item in suite_objects(find("CONFIG_KUNIT_MOCK_TEST", unset="CONFIG_KUNIT_ALL_TESTS"))
    }
    assert objects["lib/kunit/kunit-example-test.o"] == ("example",)
    assert objects["lib/kunit/executor.o"] == ("kunit_executor_test",)
    assert objects["lib/kunit/kunit-test.o"] == (
        "kunit-try-catch-test",
        "kunit-resource-test",
        "kunit-log-test",
        "kunit_status",
    )


def test_a_kernel_that_is_no_union_of_the_fragment_is_unknown(tmp_path: Path) -> None:
    """all-tests sets EXPERT, which turns off what the framework's kernel has by default (NAMESPACES...): it cannot
    stand for that kernel, however many of its suites it holds."""
    union = find("CONFIG_KUNIT_ALL_TESTS")
    alone = configured(find("CONFIG_KUNIT_MOCK_TEST", unset="CONFIG_KUNIT_ALL_TESTS"))
    with pytest.raises(Unknown, match="cannot stand for"):
        suites_alone((union / "source").resolve(), union, configured(union), alone, tmp_path)


def test_an_object_compiled_again_from_its_cmd_file_registers_the_same_suites(tmp_path: Path) -> None:
    """What a compile under the fragment's configuration is compared with: objtool's later edits and the build's own
    autoconf.h do not change the suites' digests."""
    build = find("CONFIG_KUNIT_MOCK_TEST", unset="CONFIG_KUNIT_ALL_TESTS")
    (tmp_path / "include/generated").mkdir(parents=True)
    (tmp_path / "include/generated/autoconf.h").write_text(autoconf_header(configured(build)))
    path = "lib/kunit/kunit-mock-example-test.o"
    command_file = (build / "lib/kunit/.kunit-mock-example-test.o.cmd").read_text()
    command = compile_command(path, command_file, tmp_path / "again.o", tmp_path / "include")
    subprocess.run(command, cwd=build, check=True)
    assert suite_digests(tmp_path / "again.o") == suite_digests(build / path)
    assert [name for name, _ in suite_digests(build / path)] == ["eeprom_buffer_fake", "eeprom_buffer_mock"]
