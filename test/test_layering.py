"""Every import of the package points down its layers, and no module imports itself round a circle.

The layers, lowest first (DESIGN.md §2, §9), as data: a module of a package may import modules
of its own package and of any package on a lower rank; a package on the same rank only where
:data:`LATERAL` says so. Imports inside functions count too: a lazy import hides a circle from
the interpreter, not from a reader. A new package must be given a rank here before it can land.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "freeflyer_control"
NAME = "freeflyer_control"

# Rank of each top-level part of the package (a sub-package is ranked with its parent:
# physics.kernels is physics, control.kernels is control).
RANKS: dict[str, int] = {
    "errors": 0, "resources": 0, "inputs": 0,
    "model": 1,
    "physics": 2,
    "control": 3,
    "sim": 4,
    # Naming a control law (import paths, entry points): above control, whose laws it finds,
    # below every front end that takes a name (campaign specs, gym, cli, nodes).
    "laws": 4,
    "runtime": 5, "hil": 5, "campaign": 5, "analysis": 5, "ros": 5, "gym": 5,
    "nodes": 6, "cli": 6,
}
# Imports allowed between parts of the same rank (importer -> imported).
LATERAL: dict[str, set[str]] = {
    "inputs": {"errors"},
    "runtime": {"ros"},             # message <-> numpy conversion, no rclpy
    "hil": {"runtime", "ros"},      # the bridge guards its inputs as the controller does
    "campaign": {"hil"},            # testbed faults and emulator settings of a dispersed run
    "nodes": set(),
    "cli": set(),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports (at module level or inside functions)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            if target == NAME or target.startswith(NAME + "."):
                while target not in modules and "." in target:  # an attribute of a module
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name:
                    found.add(target)
    return found


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


GRAPH = {name: _imports(name, path, _modules()) for name, path in _modules().items()}


def test_every_part_of_the_package_has_a_rank():
    parts = {_part(m) for m in GRAPH} - {""}
    assert sorted(parts - set(RANKS)) == [], "give the new package a rank in test_layering.RANKS"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _part(m)))
def test_imports_point_down_the_layers(module):
    mine = _part(module)
    wrong = []
    for target in sorted(GRAPH[module]):
        theirs = _part(target)
        if not theirs or theirs == mine:
            continue
        if RANKS[theirs] > RANKS[mine] or (RANKS[theirs] == RANKS[mine] and theirs not in LATERAL.get(mine, set())):
            wrong.append(f"{target} (rank {RANKS[theirs]} {theirs}, from rank {RANKS[mine]} {mine})")
    assert wrong == [], f"{module} imports upward or sideways: {wrong}"


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): each holds a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_round_a_circle():
    circles = _circles(GRAPH)
    assert circles == [], "modules that import each other round a circle:\n" + "\n".join(map(str, circles))


def test_the_checker_sees_a_circle_and_an_upward_import(tmp_path):
    """The rules above would pass an empty graph: check that they catch what they are for."""
    pkg = tmp_path / NAME
    for rel, text in {"__init__.py": "", "model/__init__.py": "", "sim/__init__.py": "",
                      "model/a.py": "from freeflyer_control.sim import b\n",
                      "sim/b.py": "def f():\n    from freeflyer_control.model import a\n"}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    modules = {".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
               for p in pkg.rglob("*.py")}
    a = _imports("freeflyer_control.model.a", modules["freeflyer_control.model.a"], modules)
    b = _imports("freeflyer_control.sim.b", modules["freeflyer_control.sim.b"], modules)
    assert a == {"freeflyer_control.sim.b"} and b == {"freeflyer_control.model.a"}
    assert RANKS[_part("freeflyer_control.sim.b")] > RANKS[_part("freeflyer_control.model.a")]
    graph = {"freeflyer_control.model.a": a, "freeflyer_control.sim.b": b}
    assert _circles(graph) == [["freeflyer_control.model.a", "freeflyer_control.sim.b"]]
