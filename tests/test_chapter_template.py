"""Every chapter follows one template (CONTRIBUTING.md, "The chapter template").

Title cell with the learning-objectives block; numbered sections ending with Summary and
Exercises; one fold per exercise solution ("### Solution N", its text, code and output
together), in the order of the exercises. That book_folds folds them in the HTML book is checked
here on a small document, in Colab by tests/test_colab.py, in the browser by tests/browser.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import book_folds  # noqa: E402 (tools/ is not a package; see sys.path above)

NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
OBJECTIVES = "**Learning objectives.** After this chapter you can"
TITLE = re.compile(r"^# (?:Appendix )?([0-9A-Z])\. \S")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def _markdown_lines(path: Path, cells: list[dict] | None = None) -> list[str]:
    """The Markdown lines of a chapter (or of ``cells``) outside ``` and ::: fences, per cell."""
    lines = []
    for cell in _cells(path) if cells is None else cells:
        if cell["cell_type"] != "markdown":
            continue
        fence = None  # the marker that opened the current fence; a fence never spans cells
        for line in _source(cell).splitlines():
            marker = re.match(r"(`{3,}|:{3,})", line)
            if marker and (fence is None or marker.group(1).startswith(fence)):
                fence = marker.group(1) if fence is None else None
            elif fence is None:
                lines.append(line)
    return lines


def _prefix(path: Path) -> str:
    title = _source(_cells(path)[1]).splitlines()[0]
    match = TITLE.match(title)
    assert match, f"{path.name}: the second cell must start with '# N. Title', found {title!r}"
    return match.group(1)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_title_cell_holds_the_learning_objectives_block(nb):
    _prefix(nb)
    title_cell = _source(_cells(nb)[1])
    assert OBJECTIVES in title_cell, f"{nb.name}: the title cell lacks {OBJECTIVES!r}"
    after = title_cell.split(OBJECTIVES, 1)[1].strip().splitlines()
    bullets = [line for line in after if line.startswith("- ")]
    assert len(bullets) >= 3, f"{nb.name}: the objectives are a list of at least three items"
    assert all(b[2].islower() or not b[2].isalpha() for b in bullets), (
        f"{nb.name}: each objective continues 'you can' in lower case"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_sections_are_numbered_in_order_and_end_with_summary_and_exercises(nb):
    prefix = _prefix(nb)
    sections = [line for line in _markdown_lines(nb) if line.startswith("## ")]
    numbers = [re.match(rf"## {prefix}\.(\d+) \S", line) for line in sections]
    unnumbered = [s for s, m in zip(sections, numbers, strict=True) if m is None]
    assert not unnumbered, f"{nb.name}: sections must read '## {prefix}.k Title': {unnumbered}"
    assert [int(m.group(1)) for m in numbers if m] == list(range(1, len(sections) + 1))
    assert sections[-2].endswith(" Summary") and sections[-1].endswith(" Exercises"), (
        f"{nb.name}: the last two sections are Summary and Exercises, found {sections[-2:]}"
    )


def _exercise_count(nb: Path) -> int:
    cells = _cells(nb)
    first_solution = next(
        (i for i, c in enumerate(cells) if book_folds.solution_number(c)), len(cells)
    )
    lines = _markdown_lines(nb, cells[:first_solution])  # the exercises, not their solutions
    start = next(i for i, line in enumerate(lines) if re.match(r"## \S+ Exercises$", line))
    items = [int(m.group(1)) for line in lines[start:] if (m := re.match(r"(\d+)\. \*\*", line))]
    assert items == list(range(1, len(items) + 1)), f"{nb.name}: exercises numbered 1..n: {items}"
    return len(items)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_has_one_solution_fold_in_order(nb):
    cells = _cells(nb)
    solutions = [book_folds.solution_number(c) for c in cells]
    numbers = [n for n in solutions if n is not None]
    assert numbers == list(range(1, _exercise_count(nb) + 1)), (
        f"{nb.name}: one '### Solution N' cell per exercise, in order; found {numbers}"
    )
    first = solutions.index(1)
    # The solutions close the chapter: nothing after them but their own code cells.
    for i, cell in enumerate(cells[first:], start=first):
        if cell["cell_type"] == "markdown":
            assert solutions[i] is not None, f"{nb.name}: cell {i} interrupts the solutions"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_nothing_is_folded_outside_the_one_mechanism(nb):
    for i, cell in enumerate(_cells(nb)):
        tags = cell.get("metadata", {}).get("tags", [])
        assert "hide-cell" not in tags and "hide-output" not in tags, (
            f"{nb.name}: cell {i} is folded by a tag the Colab notebook cannot fold; "
            "use a '### Solution N' section or 'hide-input' (tools/book_folds.py)"
        )
        if cell["cell_type"] == "markdown":
            assert not re.search(r":class: .*dropdown", _source(cell)), (
                f"{nb.name}: cell {i} folds with a dropdown admonition, which Colab shows open"
            )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_some_exercise_asks_to_predict_then_check(nb):
    lines = "\n".join(_markdown_lines(nb))
    assert re.search(r"\*\*[^*]*predict, then check", lines, re.IGNORECASE), (
        f"{nb.name}: no 'Predict, then check'"
    )


def test_solution_heading_is_recognised_only_in_its_one_form():
    def markdown(text: str) -> dict:
        return {"cell_type": "markdown", "source": text}

    assert book_folds.solution_number(markdown("### Solution 12\n\nText.")) == 12
    for other in ("## Solution 1", "### Solutions", "Solution 1", "### Solution 1: the idea"):
        assert book_folds.solution_number(markdown(other)) is None
    assert book_folds.solution_number({"cell_type": "code", "source": "### Solution 1"}) is None


def test_colab_folds_collapse_every_solution_and_hide_tagged_inputs():
    nb = {
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "## 1.2 Exercises\n"},
            {"cell_type": "markdown", "metadata": {}, "source": "### Solution 1\n\nText."},
            {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": "x = 1"},
            {"cell_type": "markdown", "metadata": {}, "source": "### Solution 2\n"},
            {"cell_type": "code", "metadata": {}, "source": "y = 2"},
            {"cell_type": "markdown", "metadata": {"id": "solution-9"}, "source": "Was one."},
        ],
    }
    book_folds.colab_folds(nb)
    assert nb["metadata"]["colab"]["collapsed_sections"] == ["solution-1", "solution-2"]
    assert [c["metadata"].get("id") for c in nb["cells"]] == [
        None,
        "solution-1",
        None,
        "solution-2",
        None,
        None,
    ]
    assert nb["cells"][2]["metadata"]["cellView"] == "form"
    assert "cellView" not in nb["cells"][4]["metadata"]


#: What reader-visible code must not carry: notes about the book's own tests and tool pragmas.
PLUMBING = re.compile(
    r"compared by the tests|not compared|fmt: (?:skip|off|on)|noqa|nbval|pytest|tests/test_\w+"
)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_reader_visible_code_carries_no_test_plumbing(nb):
    """A chapter's code cells and the listings they print (``show_source``) speak to the reader."""
    found = []
    for i, cell in enumerate(_cells(nb)[1:], start=1):  # the install cell is Colab's, not shown
        if cell["cell_type"] != "code":
            continue
        texts = [_source(cell)]
        for output in cell.get("outputs", []):
            plain = output.get("data", {}).get("text/plain", output.get("text", ""))
            texts.append("".join(plain) if isinstance(plain, list) else plain)
        found += [f"cell {i}: {m.group(0)!r}" for text in texts for m in PLUMBING.finditer(text)]
    assert not found, f"{nb.name}: reader-visible code mentions test plumbing: {found}"


#: What no reader-visible text (prose, alt texts, code cells, comments, printed lines) names: the
#: book's test files and tests, CI, the build, notebook machinery. The appendix may describe the
#: training loop's engineering, but not this repository's tests either.
PROSE_PLUMBING = re.compile(
    r"tests/\w+|\btest suite\b|\b(?:the|our|its|these|book's|project's)\s+(?:own\s+)?"
    r"(?:unit\s+)?tests\b|\bunit[- ]tests?\b|\bCI\b|\bcontinuous integration\b|"
    r"\b(?:the|book's|a|each)\s+build\b(?!-)|\bbuilt book\b|\bnbval\b|\bpytest\b|\bnoqa\b|"
    r"fmt: (?:skip|off|on)|\bjupyter-book\b|\bMakefile\b|\bmake (?:test|book|unit)\b|"
    r"\bGitHub Actions\b|\btest_(?:[a-z0-9]+_){3,}[a-z0-9]+\b",
    re.IGNORECASE,
)


def plumbing_in(cells: list[dict]) -> list[str]:
    """``"cell i: 'phrase'"`` for each mention of test or build machinery a reader would see."""
    found = []
    for i, cell in enumerate(cells[1:], start=1):  # the install cell is Colab's, not shown
        texts = [_source(cell)]
        for output in cell.get("outputs", []):
            plain = output.get("data", {}).get("text/plain", output.get("text", ""))
            texts.append("".join(plain) if isinstance(plain, list) else plain)
        texts.append(cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", ""))
        found += [f"cell {i}: {m.group(0)!r}" for t in texts for m in PROSE_PLUMBING.finditer(t)]
    return found


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_reader_visible_text_speaks_of_the_subject_not_the_tests_or_build(nb):
    found = plumbing_in(_cells(nb))
    assert not found, f"{nb.name}: reader-visible text names test or build machinery: {found}"


def test_the_plumbing_check_finds_each_kind_of_phrase():
    def markdown(text: str) -> dict:
        return {"cell_type": "markdown", "metadata": {}, "source": text}

    phrases = [
        "`tests/test_absolute.py` pins them",
        "so the book's tests do not compare that line",
        "the configuration used in CI",
        "the book's build runs this check",
        "not in the built book",
        "the test `test_logit_from_offset_equals_rotating_query_and_key` checks it",
    ]
    cells = [markdown("# install")] + [markdown(p) for p in phrases]
    assert len(plumbing_in(cells)) == len(phrases)
    fine = "the build-up of attention; tests of a hypothesis; a test image; CIFAR-10; test_loader"
    assert plumbing_in([markdown("# install"), markdown(fine)]) == []


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_has_alt_text_in_its_cell_metadata(nb):
    """Alt text says what a figure shows; it lives in the cell's metadata (``mystnb.image.alt``),
    not in the output, so that a translation can carry it."""
    missing = []
    for i, cell in enumerate(_cells(nb)):
        images = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if not images:
            continue
        alt = cell["metadata"].get("mystnb", {}).get("image", {}).get("alt", "")
        if len(alt) < 20 or "/" in alt.split()[0] or alt.endswith(".png") or "$" in alt:
            missing.append(f"cell {i}: {alt!r}")
    assert not missing, f"{nb.name}: figures without a real alt text: {missing}"


def test_the_book_folds_each_solution_section_into_one_details_element():
    from docutils import nodes
    from docutils.core import publish_doctree

    rst = "Exercises\n=========\n\nAsk.\n\nSolution 3\n----------\n\nThe answer.\n\n"
    rst += "Solution notes\n--------------\n\nNot a solution.\n"
    document = publish_doctree(rst)
    book_folds.FoldSolutions(document).apply()
    (fold,) = list(document.findall(book_folds.fold))
    assert fold["summary"] == "Solution 3" and fold["ids"] == ["solution-3"]
    assert fold.astext() == "The answer."
    titles = [t.astext() for t in document.findall(nodes.title)]
    assert "Solution 3" not in titles and "Solution notes" in titles

    class Writer:  # the part of Sphinx's HTML translator the fold's visitor uses
        def __init__(self) -> None:
            self.body: list[str] = []

        def encode(self, text: str) -> str:
            return text

    writer = Writer()
    fold["ids"] = ["solution-3", "id7"]
    book_folds._visit_fold_html(writer, fold)
    book_folds._depart_fold_html(writer, fold)
    html = "".join(writer.body)
    assert html.startswith('<details class="book-fold solution" id="solution-3">')
    assert '<summary>Solution 3</summary><span id="id7"></span>' in html
    assert html.rstrip().endswith("</div></details>")
