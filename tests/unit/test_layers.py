"""The package's house: every module lives in one stage of a run, imports only from its own stage and the stages below
it, and no import closes a cycle. Every import counts: at module level, inside a function, under `if TYPE_CHECKING:`."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_kunit"

# Lowest first: a module may import from its own stage and from any stage before it, never from one after it.
STAGES = (
    "ground",  # the root's model, errors, options, optiontypes, versions, bundled, compat modules, arch/: for all
    "host",
    "kbuild",
    "kernel",
    "console",
    "findings",
    "guest",
    "fragments",
    "scaleout",
    "face",
    "entry",  # the root's plugin.py and newhooks.py: what pytest loads
)
ROOT = {"__init__": "ground", "model": "ground", "errors": "ground", "arch": "ground", "options": "ground"}
ROOT |= {"versions": "ground", "optiontypes": "ground", "bundled": "ground", "compat": "ground"}
ROOT |= {"plugin": "entry", "newhooks": "entry"}


def module_names(package: Path) -> dict[str, Path]:
    """Every module of the package by dotted name (a subpackage by its own name), its file."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = [package.name, *path.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(package: Path) -> dict[str, set[str]]:
    """What each module of the package imports of it, read from every import statement in the file."""
    modules = module_names(package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        wanted: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                wanted.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                # `from package import module` imports that module; `from module import name`, the module.
                wanted.update(
                    f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target for alias in node.names
                )
        graph[name] = {target for target in wanted if target in modules and target != name}
    return graph


def stage_of(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return ROOT["__init__"]
    if parts[0] in ROOT:  # a root module, or the arch package's own modules
        return ROOT[parts[0]]
    return parts[0]


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a higher stage, said as `importer -> imported (stage -> stage)`."""
    rank = {stage: index for index, stage in enumerate(STAGES)}
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if rank[stage_of(target)] > rank[stage_of(module)]:
                found.append(f"{module} -> {target} ({stage_of(module)} -> {stage_of(target)})")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_lives_in_a_declared_stage() -> None:
    assert {stage_of(module) for module in module_names(PACKAGE)} <= set(STAGES)
    subpackages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(STAGES) - set(ROOT.values()) | {"arch"}
    assert {path.stem for path in PACKAGE.glob("*.py")} | {"arch"} == set(ROOT)


def test_the_wheel_ships_every_stage() -> None:
    """pyproject.toml names each package: a stage it leaves out would be missing from an installed plugin. (The data
    it maps in from the checkout's top, the series and the suites, are packages too, of no stage.)"""
    setuptools = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"]) - set(setuptools["package-dir"])
    assert sorted(listed) == sorted(name for name, path in module_names(PACKAGE).items() if path.name == "__init__.py")


def test_each_stage_says_in_its_first_line_what_it_holds() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text()))
        assert docstring, init
        first = docstring.splitlines()[0]
        assert " and " not in first, f"{init}: {first}"


def test_no_module_imports_from_a_higher_stage() -> None:
    assert upward(imports(PACKAGE)) == []


def test_no_import_cycle() -> None:
    assert cycles(imports(PACKAGE)) == []


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """A package of two stages, whose every import is sound."""
    package = tmp_path / "pytest_kunit"
    for stage in ("host", "kernel"):
        (package / stage).mkdir(parents=True)
        (package / stage / "__init__.py").write_text(f'"""The {stage}."""\n')
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text("")
    (package / "host" / "low.py").write_text("from ..model import Kernel\n")
    (package / "kernel" / "high.py").write_text("from ..host import low\nfrom . import other\n")
    (package / "kernel" / "other.py").write_text("")
    return package


def test_the_checks_find_nothing_in_a_sound_package(toy: Path) -> None:
    graph = imports(toy)
    assert graph["pytest_kunit.kernel.high"] == {"pytest_kunit.host.low", "pytest_kunit.kernel.other"}
    assert upward(graph) == [] and cycles(graph) == []


@pytest.mark.parametrize(
    "back_import",
    [
        "from ..kernel.high import x\n",
        "from ..kernel import high\n",
        "def later():\n    from ..kernel import high\n",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pytest_kunit.kernel.high import x\n",
    ],
    ids=["module-level", "module-by-name", "in-a-function", "type-checking"],
)
def test_a_back_import_is_found_wherever_it_is(toy: Path, back_import: str) -> None:
    """The lower stage importing the higher one: an import from above, and (high imports low) a cycle."""
    low = toy / "host" / "low.py"
    low.write_text(low.read_text() + back_import)
    graph = imports(toy)
    assert upward(graph) == ["pytest_kunit.host.low -> pytest_kunit.kernel.high (host -> kernel)"]
    assert cycles(graph) == [["pytest_kunit.host.low", "pytest_kunit.kernel.high"]]


def test_a_cycle_within_one_stage_is_found(toy: Path) -> None:
    (toy / "kernel" / "other.py").write_text("from .high import x\n")
    assert cycles(imports(toy)) == [["pytest_kunit.kernel.high", "pytest_kunit.kernel.other"]]
