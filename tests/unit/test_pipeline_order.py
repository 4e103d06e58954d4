"""The stage order inside the pipeline (fragments/pipeline.py): a fragment's way, read from the code of `Pipeline`'s
methods in the order of a run, calls into the stages of docs/architecture.md lowest first, each step one call into
its stage. The calls are read with ast: each is resolved through the module's imports and the types of `Pipeline`'s
fields, and a call of one of `Pipeline`'s own methods is followed where it is made."""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

import pytest

from .test_layers import PACKAGE, STAGES, module_names, stage_of

PIPELINE = "pytest_kunit.fragments.pipeline"
CLASS = "Pipeline"
WAY = ("kernel", "plan", "outcome")  # its methods in the order pytest calls them: collection, its end, each case
# The steps of a run, each the call that does it, in the order they must come.
STEPS = (
    ("choose the tree", "pytest_kunit.kernel.treechoice.choose_tree"),
    ("assemble the fragment", "pytest_kunit.kernel.assembly.assemble"),
    ("the build request, its configuration whole", "pytest_kunit.kernel.requests.Requests.request"),
    ("build", "pytest_kunit.kernel.requests.build_counted"),
    ("make the initramfs", "pytest_kunit.guest.boot_extras.boot_extras"),
    ("list", "pytest_kunit.guest.caselists.CaseLists.listing"),
    ("plan boots", "pytest_kunit.guest.planning.plan_batches"),
    ("boot and judge", "pytest_kunit.guest.runner.Runner.outcome"),
)
# The ways around a build (sharing.py, reuse.py, the xdist controller's images), typed by protocols of the pipeline's
# own module: of its own stage (or above it), so they stand outside the order, where the build step is.
ALTERNATIVES = ("KernelSource", "SharedKernels", "EarlierKernels")


@dataclass(frozen=True)
class Call:
    target: str  # the dotted name of what is called: a function, or Class.method
    module: str  # the package's module it is in
    line: int


@dataclass
class Way:
    calls: list[Call]
    unresolved: list[str]  # calls that are no call into a stage: a helper of the pipeline's module, a local's call


class _Reader:
    """The calls `Pipeline`'s methods make, in the order they are made."""

    def __init__(self, source: str, modules: set[str]) -> None:
        self.tree = ast.parse(source)
        self.modules = modules
        self.names = self._imported()
        self.own = {node.name: node for node in self.tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
        pipeline = self.own[CLASS]
        assert isinstance(pipeline, ast.ClassDef)
        self.methods = {node.name: node for node in pipeline.body if isinstance(node, ast.FunctionDef)}
        self.fields = {
            node.target.id: self._type(node.annotation)
            for node in pipeline.body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        }
        self.way = Way([], [])

    def _imported(self) -> dict[str, str]:
        """Each imported name, by its dotted name (a module's names below the package's own)."""
        found = {}
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom):
                base = "pytest_kunit.fragments" if node.level == 1 else "pytest_kunit" if node.level == 2 else ""
                target = ".".join(part for part in (base, node.module or "") if part)
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{target}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = alias.name
        return found

    def _type(self, annotation: ast.expr) -> str | None:
        """A field's type: the first name in its annotation that is the package's or the pipeline module's own."""
        for node in ast.walk(annotation):
            if isinstance(node, ast.Name):
                if node.id in self.own:
                    return f"{PIPELINE}.{node.id}"
                dotted = self.names.get(node.id, "")
                if dotted.startswith("pytest_kunit."):
                    return dotted
        return None

    def module_of(self, dotted: str) -> str:
        """The package's module that `dotted` (a module, a function, Class.method) is in."""
        while dotted not in self.modules:
            dotted = dotted.rpartition(".")[0]
        return dotted

    def read(self, method: str, seen: tuple[str, ...] = ()) -> None:
        for statement in self.methods[method].body:
            self._visit(statement, (*seen, method))

    def _visit(self, node: ast.AST, seen: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):  # what a call's arguments call is called first
            self._visit(child, seen)
        if isinstance(node, ast.Call):
            self._call(node, seen)

    def _call(self, node: ast.Call, seen: tuple[str, ...]) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in self.own:
                self.way.unresolved.append(f"line {node.lineno}: {func.id}, the pipeline module's own")
            elif self.names.get(func.id, "").startswith("pytest_kunit."):
                self._record(self.names[func.id], node.lineno)
            elif func.id not in self.names and not hasattr(builtins, func.id):
                self.way.unresolved.append(f"line {node.lineno}: {func.id}, a local")
            return
        if not isinstance(func, ast.Attribute):
            self.way.unresolved.append(f"line {node.lineno}: {ast.unparse(func)}")
            return
        owner = func.value
        while isinstance(owner, ast.Subscript):  # self.sharing[arch].kernel: what the field holds
            owner = owner.value
        if isinstance(owner, ast.Name) and owner.id == "self":
            if func.attr in self.methods and func.attr not in seen:
                self.read(func.attr, seen)
            elif func.attr in self.methods:
                self.way.unresolved.append(f"line {node.lineno}: self.{func.attr} calls itself")
            else:
                self.way.unresolved.append(f"line {node.lineno}: self.{func.attr}, no step")
        elif (
            isinstance(owner, ast.Attribute)
            and isinstance(owner.value, ast.Name)
            and owner.value.id == "self"
            and self.fields.get(owner.attr)
        ):
            self._record(f"{self.fields[owner.attr]}.{func.attr}", node.lineno)
        elif isinstance(owner, ast.Name) and self.names.get(owner.id, "").startswith("pytest_kunit."):
            self._record(f"{self.names[owner.id]}.{func.attr}", node.lineno)
        # Anything else is a method of a value (a path's, a result's): no step of its own.

    def _record(self, target: str, line: int) -> None:
        self.way.calls.append(Call(target, self.module_of(target), line))


def pipeline_way(source: str) -> Way:
    """The calls `Pipeline`'s methods make, in the order of WAY, each of its own methods' followed where called."""
    reader = _Reader(source, set(module_names(PACKAGE)))
    for method in WAY:
        reader.read(method)
    return reader.way


def out_of_order(way: Way) -> list[str]:
    """Each call into a stage below one called before it; the ground (values) and the pipeline's own stage (the
    ways around a build, ALTERNATIVES) stand outside the order."""
    rank = {stage: index for index, stage in enumerate(STAGES)}
    own = stage_of(PIPELINE)
    found, highest, since = [], rank["ground"], ""
    for call in way.calls:
        stage = stage_of(call.module)
        if call.module == PIPELINE and call.target.split(".")[-2] in ALTERNATIVES:
            continue
        if stage == own or rank[stage] > rank[own]:
            found.append(f"line {call.line}: {call.target} ({stage}), of the pipeline's stage or above it")
        elif stage != "ground" and rank[stage] < highest:
            found.append(f"line {call.line}: {call.target} ({stage}) after {since}")
        elif stage != "ground":
            highest, since = rank[stage], f"{call.target} ({stage})"
    return found


def missing_steps(way: Way) -> list[str]:
    """The steps not called, or called out of STEPS's order."""
    targets = [call.target for call in way.calls]
    found, start = [], 0
    for step, target in STEPS:
        if target in targets[start:]:
            start = targets.index(target, start) + 1
        else:
            found.append(f"{step}: {target}" + (" (out of order)" if target in targets else " (not called)"))
    return found


def source() -> str:
    return (PACKAGE / "fragments" / "pipeline.py").read_text()


def test_the_pipeline_calls_into_the_stages_in_order() -> None:
    way = pipeline_way(source())
    assert way.unresolved == []
    assert out_of_order(way) == []


def test_each_step_is_a_call_into_its_stage_in_the_order_of_a_run() -> None:
    assert missing_steps(pipeline_way(source())) == []


def _moved(text: str, line: str, before: str) -> str:
    """`text` with the line holding `line` moved above the line holding `before`."""
    lines = text.splitlines()
    moving = next(index for index, each in enumerate(lines) if line in each)
    taken = lines.pop(moving)
    lines.insert(next(index for index, each in enumerate(lines) if before in each), taken)
    return "\n".join(lines) + "\n"


def test_a_step_moved_before_a_lower_stage_is_found() -> None:
    """The initramfs made before the build: findings, then kernel."""
    way = pipeline_way(_moved(source(), "extras = boot_extras(", "result = build_counted("))
    assert any("build_counted (kernel) after pytest_kunit.guest.boot_extras" in error for error in out_of_order(way))
    assert missing_steps(way) == ["make the initramfs: pytest_kunit.guest.boot_extras.boot_extras (out of order)"]


def test_a_step_moved_or_a_listing_before_the_build_is_found() -> None:
    way = pipeline_way(_moved(source(), "fragment = assemble(", "choice = choose_tree("))
    assert missing_steps(way) == ["assemble the fragment: pytest_kunit.kernel.assembly.assemble (out of order)"]
    text = source().replace(
        "        choice = choose_tree(self.settings, path)\n",
        "        self.case_lists.listing(self.unlisted(path, key, arch), self.runner)\n"
        "        choice = choose_tree(self.settings, path)\n",
    )
    way = pipeline_way(text)
    assert any("choose_tree (kernel) after pytest_kunit.guest.caselists" in error for error in out_of_order(way))


@pytest.mark.parametrize(
    ("call", "why"),
    [
        ("_assemble(path, arch, self.additions)", "_assemble, the pipeline module's own"),
        ("self.assemble(path, arch)", "self.assemble, no step"),
        ("put_together(path, arch)", "put_together, a local"),
    ],
)
def test_a_step_that_is_not_a_call_into_its_stage_is_found(call: str, why: str) -> None:
    text = source().replace("assemble(path, arch, self.additions)", call)
    text += "\n\ndef _assemble(path: object, arch: object, additions: object) -> object:\n    return path\n"
    way = pipeline_way(text)
    assert any(why in error for error in way.unresolved)
    assert "assemble the fragment: pytest_kunit.kernel.assembly.assemble (not called)" in missing_steps(way)


def test_a_call_into_the_pipelines_own_stage_is_found() -> None:
    """Only the protocols of the ways around a build may stand outside the order: the sharing module called by name
    is a step hidden in the pipeline's stage."""
    text = (
        source()
        .replace("from ..arch import Arch\n", "from ..arch import Arch\nfrom .sharing import union_fragment\n")
        .replace("        choice = choose_tree(", "        union_fragment(())\n        choice = choose_tree(")
    )
    assert any(
        "union_fragment (fragments), of the pipeline's stage" in error for error in out_of_order(pipeline_way(text))
    )
