"""Checks shared by the figure tests: every figure must fit the book's text column, legibly."""

import base64
import io
import itertools
import json
from pathlib import Path
from unittest import mock

from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from PIL import Image

BOOK_WIDTH = 6.8  # inches: the book's 688 px column at 100 dpi, with a little room


def assert_fits_the_page(fig: Figure) -> None:
    """No wider than the column, and no text smaller than 9 pt."""
    assert round(fig.get_size_inches()[0], 6) <= BOOK_WIDTH
    assert min(t.get_fontsize() for t in fig.findobj(Text) if t.get_text()) >= 9


#: A 390 px phone's text column, in CSS pixels: a figure wider than this at 100 dpi is shown
#: scaled down to it.
PHONE_COLUMN_PX = 358
#: The smallest text a figure may show on that phone, in CSS pixels.
PHONE_MIN_TEXT_PX = 8


def assert_legible_on_a_phone(fig: Figure) -> None:
    """Its smallest text at least PHONE_MIN_TEXT_PX once the figure (its tight box, shown at
    100 dpi in the book) is scaled down to a phone's column."""
    fig.canvas.draw()
    # The book crops a figure to its tight box plus 0.1 in of padding on each side.
    width_px = (fig.get_tightbbox(fig.canvas.get_renderer()).width + 0.2) * 100
    smallest = min(t.get_fontsize() for t in fig.findobj(Text) if t.get_text())
    shown = smallest * 100 / 72 * min(1.0, PHONE_COLUMN_PX / width_px)
    assert shown >= PHONE_MIN_TEXT_PX, f"{smallest} pt text at {shown:.1f} px on a phone"


def drawn_text_boxes(fig: Figure) -> list[Bbox]:
    """Draw ``fig``; return the window extents of the non-empty texts actually drawn.

    Recording at draw time skips the tick labels outside the view and the texts of hidden axes,
    which exist as objects but never reach the page.
    """
    boxes = []
    draw = Text.draw

    def record(text, renderer):
        if text.get_visible() and text.get_text():
            boxes.append(text.get_window_extent(renderer))
        return draw(text, renderer)

    with mock.patch.object(Text, "draw", record):
        fig.canvas.draw()
    return boxes


def assert_nothing_sticks_out_or_overlaps(fig: Figure) -> None:
    """What the page shows is the tight box around everything drawn: it must fit the column,
    and no two drawn texts may overlap (by a pixel or more in both directions)."""
    boxes = drawn_text_boxes(fig)
    assert fig.get_tightbbox(fig.canvas.get_renderer()).width <= BOOK_WIDTH
    for a, b in itertools.combinations(boxes, 2):
        overlap = Bbox.intersection(a, b)
        assert overlap is None or min(overlap.width, overlap.height) < 1  # pixels


def png_smallest_text_px(png: bytes) -> float | None:
    """The smallest text a book PNG draws, in the PNG's own pixels, as ``use_book_figures``
    recorded it (companion/figures/inline.py); None if the PNG records none."""
    from companion.figures.inline import SMALLEST_TEXT_KEY

    with Image.open(io.BytesIO(png)) as image:
        value = image.info.get(SMALLEST_TEXT_KEY)
    return None if value is None else float(value)


def shown_on_a_phone_px(png: bytes, display_width: float) -> float | None:
    """How large a book PNG's smallest text is shown on a 390 px phone, in CSS pixels: a figure
    shown ``display_width`` CSS pixels wide on a desktop is scaled down to PHONE_COLUMN_PX."""
    text_px = png_smallest_text_px(png)
    if text_px is None:
        return None
    with Image.open(io.BytesIO(png)) as image:
        natural = image.width
    return text_px * min(display_width, PHONE_COLUMN_PX) / natural


def notebook_figures(path: Path) -> list[tuple[str, bytes, float]]:
    """Every PNG figure of a notebook: (where: cell number and the cell's last line, PNG bytes,
    display width in CSS pixels). An explorer's static PNG does not count: it is shown only
    where its HTML cannot run, and the browser test measures the live explorer."""
    figures = []
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for number, cell in enumerate(notebook["cells"]):
        source = "".join(cell.get("source", "")).strip().splitlines() or [""]
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data or "text/html" in data:
                continue  # an explorer's static figure: the book shows its live HTML instead
            png = base64.b64decode(output["data"]["image/png"])
            size = output.get("metadata", {}).get("image/png", {})
            with Image.open(io.BytesIO(png)) as image:
                width = size.get("width", image.width)
            figures.append((f"cell {number} ({source[-1][:60]})", png, width))
    return figures
