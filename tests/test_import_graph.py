"""The packages of reclaim import each other without a cycle, and the core imports none of them.

Every import counts, including those inside functions (deferred to keep start-up light, they
still make one package depend on another). ``reclaim/__init__.py`` is the public API on top: it
may import anything, and nothing inside the package imports names from it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import reclaim

PACKAGE = Path(reclaim.__file__).parent


def _unit(module: str) -> str:
    """The package (or top-level module) a dotted ``reclaim.*`` name belongs to."""
    return module.split(".")[1]


def import_graph() -> dict[str, dict[str, list[str]]]:
    """unit -> {imported unit: [importing modules]}, for every module under ``reclaim``."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        source = _unit(module)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "reclaim":  # submodules, and the version
                    targets = [f"reclaim.{a.name}" for a in node.names if a.name != "__version__"]
                else:
                    targets = [node.module]
            for target in targets:
                if target == "reclaim" or not target.startswith("reclaim."):
                    assert target != "reclaim", f"{module} imports the public API package"
                    continue
                assert (PACKAGE / _unit(target)).exists() or (
                    PACKAGE / f"{_unit(target)}.py"
                ).exists(), f"{module} imports {target}, which names no module of reclaim"
                if _unit(target) != source:
                    graph[source][_unit(target)].append(module)
    return graph


def find_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """One cycle of units (first unit repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(unit: str) -> list[str] | None:
        state[unit] = 1
        path.append(unit)
        for nxt in sorted(graph.get(unit, {})):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[unit] = 2
        return None

    for unit in sorted(graph):
        if unit not in state and (found := visit(unit)):
            return found
    return None


def test_packages_form_no_import_cycle():
    graph = import_graph()
    cycle = find_cycle(graph)
    if cycle:
        steps = [
            f"{a} -> {b} ({', '.join(sorted(set(graph[a][b])))})"
            for a, b in zip(cycle, cycle[1:], strict=False)
        ]
        raise AssertionError("import cycle:\n" + "\n".join(steps))


def test_the_core_imports_only_errors():
    assert set(import_graph()["core"]) <= {"errors", "machine"}


def test_a_cycle_is_found_and_named():
    graph = {"a": {"b": ["reclaim.a.x"]}, "b": {"c": ["reclaim.b.y"]}, "c": {"a": ["reclaim.c.z"]}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": []}, "b": {}}) is None


def module_graph() -> dict[str, dict[str, list[str]]]:
    """module -> {imported module of the same package: [the importing module]}: every import
    between files of one package (a package's ``__init__`` counts as a file of it)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def package(module: str) -> str:
        return module if modules[module].name == "__init__.py" else module.rsplit(".", 1)[0]

    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:  # "from reclaim.x import y": y may be a submodule
                    sub = f"{node.module}.{a.name}"
                    targets.append(sub if sub in modules else node.module)
            for target in targets:
                if target in modules and target != module and package(target) == package(module):
                    graph[module][target].append(module)
    return graph


def test_files_of_a_package_form_no_import_cycle():
    graph = module_graph()
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} -> {b}" for a, b in zip(cycle, cycle[1:], strict=False)]
        raise AssertionError("import cycle between files of a package:\n" + "\n".join(steps))


def test_the_module_graph_sees_a_circle_through_a_deferred_import():
    graph = module_graph()
    # experiments.spec once imported execute inside a function, and execute imported spec
    assert "reclaim.experiments.kind" in graph["reclaim.experiments.spec"]
    assert "reclaim.agent.config" in graph["reclaim.agent.loop"]
    assert "reclaim.agent.loop" not in graph["reclaim.agent.config"]
