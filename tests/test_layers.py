"""The package's layers (companion/__init__.py): no module imports one of a later layer, none
imports another in a circle, and the chapters never reach the runs."""

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPANION = ROOT / "companion"

#: The subject the book teaches: the top-level modules (a new top-level module must be named here
#: or live in the folder of its role).
SUBJECT = {
    "absolute", "attention", "bias_table", "cpb", "layers", "merging", "permutation", "position",
    "relative", "resize", "rope", "swin", "swin_configs", "vit", "window",
}  # fmt: skip
#: ``python -m companion.commands.<name>``: the experiments' commands, above every layer.
COMMANDS = {"ablation", "resolution_experiment", "learned_embedding"}
#: What a chapter may import from ``companion.experiments`` beside its own reader
#: (``chapter<N>``): the papers' tables and the statistics chapter 4 reads an embedding with,
#: from the modules that define them.
SHARED_READERS = {"paper", "paper_reading", "learned_embedding", "stats"}
#: The layers in order, by the folder (or module set) that holds them.
LAYERS = ["support", "subject", "data", "train", "experiments", "figures", "exercises", "runs"]


def module_names(root: Path = COMPANION) -> dict[str, Path]:
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def import_graph(root: Path = COMPANION) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its text (type-only imports and
    imports inside functions included: a circle hidden in a function is still a circle).
    ``from package import name`` counts as importing the submodule when ``name`` is one, and a
    relative import (``from .x import y``) as the absolute one it stands for."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: up level - 1 packages from this module's own
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                full = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t if t in modules else base for t in full]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def layer(module: str) -> str:
    """The layer of a module of the package (``"command"`` above every layer)."""
    parts = module.split(".")[1:]
    if not parts or parts[0] in ("_checks", "_io", "_startup"):
        return "support"
    if parts[:2] == ["experiments", "runs"]:
        return "runs"
    if parts[0] in ("data", "train", "experiments", "figures", "exercises"):
        return parts[0]
    if parts[0] in SUBJECT:
        return "subject"
    if parts[0] == "commands" and (parts[1:] == [] or parts[1] in COMMANDS):
        return "command"
    raise AssertionError(
        f"{module} is in no layer: name it in SUBJECT or move it to its role's folder"
    )


def rank(module: str) -> int:
    return len(LAYERS) if layer(module) == "command" else LAYERS.index(layer(module))


def imports_against_the_layers(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a later layer, as ``"a -> b"``."""
    return sorted(
        f"{a} ({layer(a)}) -> {b} ({layer(b)})"
        for a, targets in graph.items()
        for b in targets
        if rank(b) > rank(a)
    )


def notebook_imports(notebook: Path) -> set[str]:
    """The package's modules a notebook's code cells import."""
    modules = module_names()
    found = set()
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        code = "\n".join(
            line for line in "".join(cell["source"]).splitlines() if not line.startswith("%")
        )
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and node.module:
                full = [f"{node.module}.{alias.name}" for alias in node.names]
                found.update(t if t in modules else node.module for t in full)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules}


def closure(graph: dict[str, set[str]], start: set[str]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


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


def test_no_module_imports_one_of_a_later_layer():
    graph = import_graph()
    assert {layer(m) for m in graph} == {*LAYERS, "command"}  # every layer holds a module
    assert imports_against_the_layers(graph) == []


def test_a_relative_import_against_the_order_is_found_too(tmp_path):
    package = tmp_path / "companion"
    (package / "experiments").mkdir(parents=True)
    for name in ("__init__.py", "experiments/__init__.py", "experiments/results.py"):
        (package / name).write_text("")
    (package / "swin.py").write_text("from .experiments.results import run_key\n")
    (package / "window.py").write_text("from .experiments import results\n")
    graph = import_graph(package)
    assert imports_against_the_layers(graph) == [
        "companion.swin (subject) -> companion.experiments.results (experiments)",
        "companion.window (subject) -> companion.experiments.results (experiments)",
    ]


def test_the_layer_check_finds_an_import_against_the_order():
    graph = {"companion.train.loop": {"companion.experiments.results", "companion.swin"}}
    assert imports_against_the_layers(graph) == [
        "companion.train.loop (train) -> companion.experiments.results (experiments)"
    ]
    with pytest.raises(AssertionError, match="in no layer"):
        layer("companion.somewhere_new")


@pytest.mark.parametrize("notebook", sorted((ROOT / "book").glob("*.ipynb")), ids=lambda p: p.stem)
def test_a_chapter_reads_results_through_its_reader_and_never_reaches_the_runs(notebook):
    graph = import_graph()
    direct = notebook_imports(notebook)
    readers = {f"companion.experiments.{m}" for m in SHARED_READERS}
    if notebook.stem[:2].isdigit():
        readers.add(f"companion.experiments.chapter{int(notebook.stem[:2])}")
    assert {m for m in direct if layer(m) == "experiments"} <= readers
    reached = closure(graph, direct)
    assert not {m for m in reached if layer(m) in ("runs", "command")}


def test_the_package_keeps_at_most_18_top_level_modules():
    """Support and subject, counted as files beside ``__init__.py``: a new idea joins the module
    it belongs to, or the folder of its role."""
    top = sorted(p.stem for p in COMPANION.glob("*.py") if p.stem != "__init__")
    assert len(top) <= 18, top
    assert set(top) == SUBJECT | {"_checks", "_io", "_startup"}
