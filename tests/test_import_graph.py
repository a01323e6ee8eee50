"""The package's modules import each other without a circle (companion/__init__.py's layout)."""

import ast
from pathlib import Path

COMPANION = Path(__file__).resolve().parents[1] / "companion"


def module_names() -> dict[str, Path]:
    names = {}
    for path in COMPANION.rglob("*.py"):
        parts = path.relative_to(COMPANION.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its text (type-only imports and
    imports inside functions included: a circle hidden in a function is still a circle).
    ``from package import name`` counts as importing the submodule when ``name`` is one."""
    modules = module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                full = [f"{node.module}.{alias.name}" for alias in node.names]
                targets = [t if t in modules else node.module for t in full]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports as ``[a, b, ..., a]``, or ``None`` (depth-first search)."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_package_imports_without_a_circle():
    graph = import_graph()
    assert {"companion.swin", "companion.attention", "companion.data"} <= set(graph)
    assert "companion.attention" in graph["companion.swin"]  # the graph sees real imports
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
