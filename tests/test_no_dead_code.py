"""No dead code in the experiments layer: every top-level function, class and constant of
``companion/experiments`` is reached from something the book runs.

What the book runs (the roots): the chapters' code cells, the rest of ``companion`` (a model, a
figure, the training loop), ``tools/``, ``benchmarks/``, the scripts under ``results/`` and the
commands (a module's ``if __name__ == "__main__":`` block). From a root, a name is alive when an
alive definition's source names it (a private ``_name`` only within its own module); the tests
do not count. Public names are matched as words, so one that shares its spelling with another
stays alive with it: the check errs towards keeping code, never towards deleting it.
"""

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "companion" / "experiments"
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _chapter_code() -> Iterator[str]:
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        yield from ("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def _root_texts() -> Iterator[str]:
    yield from _chapter_code()
    for pattern in ("companion/**/*.py", "tools/**/*.py", "benchmarks/**/*.py", "results/*.sh"):
        for path in sorted(ROOT.glob(pattern)):
            if LAYER not in path.parents:
                yield path.read_text(encoding="utf-8")


def _definitions() -> dict[tuple[Path, str], str]:
    """``{(module, name): source}`` for every top-level definition of the layer, and each
    command's ``if __name__ == "__main__":`` block as ``(module, "__main__")``."""
    found: dict[tuple[Path, str], str] = {}
    for path in sorted(LAYER.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            source = ast.get_source_segment(text, node) or ""
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                names = ["__main__"]
            else:
                continue
            for name in names:
                found[path, name] = found.get((path, name), "") + source
    return found


def dead_names() -> list[str]:
    """``"module:name"`` for every definition of the layer that nothing the book runs reaches.

    A private name (``_like_this``) is reached only from its own module; a public one from
    anywhere, by its name (every definition of that name)."""
    definitions = _definitions()
    by_name: dict[str, list[tuple[Path, str]]] = {}
    for key in definitions:
        by_name.setdefault(key[1], []).append(key)

    def named_in(text: str, module: Path | None) -> set[tuple[Path, str]]:
        words = set(WORD.findall(text))
        return {
            key
            for word in words & by_name.keys()
            for key in by_name[word]
            if not word.startswith("_") or key[0] == module or word == "__main__"
        }

    named: set[tuple[Path, str]] = set()
    for text in _root_texts():
        named |= {key for key in named_in(text, None) if not key[1].startswith("_")}
    alive = named | {key for key in definitions if key[1] in ("__main__", "__all__")}
    frontier = list(alive)
    while frontier:
        key = frontier.pop()
        for found in named_in(definitions[key], key[0]) - alive:
            alive.add(found)
            frontier.append(found)
    return sorted(f"{path.relative_to(ROOT)}:{name}" for path, name in definitions.keys() - alive)


def test_every_definition_of_the_experiments_layer_is_used_by_the_book():
    dead = dead_names()
    assert not dead, f"used by no chapter, command, tool or other module (delete them): {dead}"
