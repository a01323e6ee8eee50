"""No answer before its exercise, checked by value.

Each ``companion.exercises`` module declares, in ``ANSWERS``, the values its solutions print as
answers (``{exercise: (value, ...)}``). Here each value is found in what its solution prints, and
in nothing a reader meets before trying that exercise: the outputs, prose and alt texts of every
earlier chapter, of this chapter before its exercises, and of the solutions of this chapter's
earlier exercises (a reader opens solution 2 before trying exercise 5).

A value is a number (``"529"``, ``"23,322"``: matched by value against every number written
there, thousands separators ignored) or a literal (``"[(48, 0)]"``: matched as text, with spaces
and LaTeX's ``\\times`` normalised).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import book_folds  # noqa: E402 (tools/ is not a package)

CHAPTERS = [
    ("00_introduction", "ch00"),
    ("01_absolute_position", "ch01"),
    ("02_relative_index", "ch02"),
    ("03_bias_lookup", "ch03"),
    ("04_windows_to_swin", "ch04"),
    ("05_train_swin", "ch05"),
    ("06_resolution_and_beyond", "ch06"),
    ("appendix_training_engineering", "appendix"),
]
#: Chapters whose exercise modules declare ANSWERS: all of them.
CHECKED = [module for _, module in CHAPTERS]
_NUMBER = re.compile(
    r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|(?<![\w.])\d+(?:\.\d+)?(?![\d])"
)


def _cells(name: str) -> list[dict]:
    return json.loads((ROOT / "book" / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def _text(cell: dict) -> str:
    """What a reader sees of a cell: Markdown, or a code cell's outputs; and its alt text."""
    parts = []
    if cell["cell_type"] == "markdown":
        parts.append("".join(cell["source"]))
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append("".join(output["text"]))
        for kind, value in output.get("data", {}).items():
            if kind in ("text/plain", "text/markdown"):
                parts.append("".join(value) if isinstance(value, list) else value)
    alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
    if alt:
        parts.append(alt)
    return _normal("\n".join(parts))


def _normal(text: str) -> str:
    text = text.replace("\u2212", "-").replace("\\times", "×").replace("\\,", " ").replace("$", "")
    text = re.sub(r"(?<=\d)\s*[x×]\s*(?=\d)", " × ", text)
    return re.sub(r"\s+", " ", text)


def _is_number(value: str) -> bool:
    return re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", value) is not None


def found_in(value: str, text: str) -> list[str]:
    """The places (a few words around) where ``value`` is written in ``text``."""
    hits = []
    if _is_number(value):
        wanted = Decimal(value.replace(",", ""))
        for m in _NUMBER.finditer(text):
            try:
                same = Decimal(m.group(0).replace(",", "")) == wanted
            except InvalidOperation:
                same = False
            if same and len(m.group(0).replace(",", "")) >= len(value.replace(",", "")):
                hits.append(text[max(0, m.start() - 50) : m.end() + 30])
    else:
        needle = _normal(value)
        start = text.find(needle)
        while start != -1:
            hits.append(text[max(0, start - 50) : start + len(needle) + 30])
            start = text.find(needle, start + 1)
    return hits


def _exercises_start(cells: list[dict]) -> int:
    return next(
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "markdown"
        and re.search(r"^## \S+ Exercises$", "".join(c["source"]), re.MULTILINE)
    )


def _solutions(cells: list[dict]) -> dict[int, list[int]]:
    """``{exercise: [its solution's cells]}``: the ``### Solution N`` cell and the code after it."""
    found: dict[int, list[int]] = {}
    current = None
    for i, cell in enumerate(cells):
        number = book_folds.solution_number(cell)
        if number is not None:
            current = number
            found[current] = [i]
        elif current is not None:
            found[current].append(i)
    return found


def before_exercise(chapter: int, exercise: int) -> list[tuple[str, int, str]]:
    """``[(notebook, cell, text)]`` a reader meets before trying ``exercise`` of ``chapter``."""
    seen = []
    for name, _ in CHAPTERS[:chapter]:
        seen += [(name, i, _text(c)) for i, c in enumerate(_cells(name))]
    name = CHAPTERS[chapter][0]
    cells = _cells(name)
    start = _exercises_start(cells)
    seen += [(name, i, _text(c)) for i, c in enumerate(cells[:start])]
    for number, indices in _solutions(cells).items():
        if number < exercise:
            seen += [(name, i, _text(cells[i])) for i in indices]
    return seen


def leaks(chapter: int, exercise: int, values: tuple[str, ...]) -> list[str]:
    return [
        f"{name} cell {i} gives away {value!r}: ...{hit}..."
        for value in values
        for name, i, text in before_exercise(chapter, exercise)
        for hit in found_in(value, text)
    ]


def _answers(module: str) -> dict[int, tuple[str, ...]]:
    return importlib.import_module(f"companion.exercises.{module}").ANSWERS


@pytest.mark.parametrize("module", CHECKED)
def test_every_exercise_declares_its_answer_values(module):
    chapter = [m for _, m in CHAPTERS].index(module)
    solutions = _solutions(_cells(CHAPTERS[chapter][0]))
    answers = _answers(module)
    assert sorted(answers) == sorted(solutions), (
        f"companion.exercises.{module}.ANSWERS must have one entry per exercise "
        f"{sorted(solutions)}, got {sorted(answers)}"
    )


@pytest.mark.parametrize("module", CHECKED)
def test_each_declared_answer_is_what_its_solution_prints(module):
    chapter = [m for _, m in CHAPTERS].index(module)
    cells = _cells(CHAPTERS[chapter][0])
    missing = []
    for exercise, indices in _solutions(cells).items():
        printed = " ".join(
            _text({**cells[i], "cell_type": "code"}) if cells[i]["cell_type"] == "code" else ""
            for i in indices
        )
        missing += [
            f"exercise {exercise}: {value!r}"
            for value in _answers(module).get(exercise, ())
            if not found_in(value, printed)
        ]
    assert not missing, f"{CHAPTERS[chapter][0]}: answers its solution does not print: {missing}"


@pytest.mark.parametrize("module", CHECKED)
def test_no_answer_appears_before_its_exercise(module):
    chapter = [m for _, m in CHAPTERS].index(module)
    found = []
    for exercise, values in _answers(module).items():
        found += [f"exercise {exercise}: {leak}" for leak in leaks(chapter, exercise, values)]
    assert not found, f"{CHAPTERS[chapter][0]}: answers given before their exercise:\n" + "\n".join(
        found
    )


def test_an_answer_printed_before_its_exercise_is_found_by_value():
    printed = _normal("window 12: 529 rows (2Wh-1)(2Ww-1) = 529; Swin-T: 23322 biases")
    assert found_in("529", printed) and found_in("23,322", printed)
    assert not found_in("529", _normal("5290 rows, 52.9 %, 0.529"))
    assert found_in("3 × 3 shifted", _normal(r"has $2 \times 2$ regular but $3 \times 3$ shifted"))
    assert found_in("[(48, 0)]", "row 168: [(48, 0)]") and not found_in("[(48, 0)]", "(48, 0)")
