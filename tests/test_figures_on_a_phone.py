"""Every figure of every chapter, in both editions, as the notebooks hold it: its smallest text is
at least PHONE_MIN_TEXT_PX CSS pixels on a 390 px phone, where a figure wider than the column is
scaled down to it.

The PNGs record their smallest text (companion/figures/inline.py), so this reads the committed
outputs instead of drawing the figures again; the browser test measures the same on the built
pages (tests/browser/test_reader.py).
"""

from pathlib import Path

import pytest
from book_figures import PHONE_MIN_TEXT_PX, notebook_figures, shown_on_a_phone_px

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted([*ROOT.glob("book/*.ipynb"), *ROOT.glob("zh/book/*.ipynb")])


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_figures_smallest_text_is_legible_on_a_phone(notebook: Path) -> None:
    small, unmeasured = [], []
    for where, png, width in notebook_figures(notebook):
        shown = shown_on_a_phone_px(png, width)
        if shown is None:
            unmeasured.append(where)
        elif shown < PHONE_MIN_TEXT_PX:
            small.append(f"{where}: {shown:.1f} px")
    assert not unmeasured, f"figures that record no text size (use_book_figures): {unmeasured}"
    assert not small, f"{len(small)} figures with text below {PHONE_MIN_TEXT_PX} px: {small}"
