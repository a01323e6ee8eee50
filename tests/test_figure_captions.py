"""A figure's caption (cell metadata ``mystnb.figure.caption``) sits under that figure only:
MyST-NB puts the caption under every display of its cell, so a captioned cell displays one
thing, its figure."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted([*ROOT.glob("book/*.ipynb"), *ROOT.glob("zh/book/*.ipynb")])


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_captioned_cell_displays_its_figure_and_nothing_else(notebook: Path) -> None:
    wrong = []
    for number, cell in enumerate(json.loads(notebook.read_text(encoding="utf-8"))["cells"]):
        if not cell["metadata"].get("mystnb", {}).get("figure", {}).get("caption"):
            continue
        shown = [
            sorted(output["data"])
            for output in cell.get("outputs", [])
            if output["output_type"] in ("display_data", "execute_result")
        ]
        if len(shown) != 1 or "image/png" not in shown[0]:
            wrong.append(f"cell {number}: {shown}")
    assert not wrong, f"captioned cells that display more or other than one figure: {wrong}"
