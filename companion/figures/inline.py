"""How a chapter shows a matplotlib figure: the PNG each notebook output holds.

``use_book_figures()``, called once by every chapter's imports cell, makes IPython show a Figure as
a pixel-doubled PNG (sharp on high-density screens, like matplotlib-inline's "retina" format) that

- has a **transparent background**: the page shows through around and behind the plot. On a light
  page the figure looks as drawn; on a dark page the book's stylesheet shows its dark rendering
  (``_static/book.css``: dark ink on a transparent ground turns light), so a figure is not a white
  card on a dark screen. In Colab the ground stays white: its dark theme draws outputs on a dark
  ground and gives a transparent figure no light card, so the figure's black text would not read.
- records its **smallest text**, in pixels of the PNG, in a PNG text chunk (``SMALLEST_TEXT_KEY``).
  The book's tests read it from every figure of every chapter and compute how large that text is
  shown on a phone, where the figure is scaled down to the column (``tests/book_figures.py``, the
  browser test); without it a PNG says nothing about its text.
"""

from __future__ import annotations

import base64
import contextlib
import io
import struct
import sys
from collections.abc import Iterator
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.text import Text

#: The PNG text chunk holding the size of a figure's smallest drawn text, in the PNG's pixels.
SMALLEST_TEXT_KEY = "Smallest text px"
#: The PNG is drawn at twice the figure's dpi, and shown at its figure's size (a 6.8 inch figure
#: at 100 dpi is 1360 pixels wide, shown 680 CSS pixels wide).
PIXEL_DENSITY = 2


@contextlib.contextmanager
def _drawn_text_sizes() -> Iterator[list[float]]:
    """The font sizes (points) of the non-empty texts drawn while the block runs.

    Recorded at draw time: tick labels outside the view and the texts of hidden axes exist as
    objects but never reach the image, so they do not count.
    """
    sizes: list[float] = []
    draw = Text.draw

    def record(text: Text, renderer: Any) -> None:
        if text.get_visible() and text.get_text():
            sizes.append(float(text.get_fontsize()))
        draw(text, renderer)

    Text.draw = record  # type: ignore[method-assign,assignment]
    try:
        yield sizes
    finally:
        Text.draw = draw  # type: ignore[method-assign]


def smallest_text_pt(fig: Figure) -> float | None:
    """The size in points of the smallest text ``fig`` draws (None if it draws no text)."""
    with _drawn_text_sizes() as sizes:
        fig.canvas.draw()
    return min(sizes, default=None)


def book_png(fig: Figure) -> tuple[bytes, dict[str, Any]] | None:
    """``fig`` as the book shows it: PNG bytes (transparent but in Colab, pixel-doubled, cropped
    to what is drawn, its smallest text recorded) and the output metadata (display size in CSS
    pixels).

    None for a figure with nothing drawn, as IPython's own formatter returns.
    """
    if not fig.axes and not fig.lines:  # as IPython's own formatter decides
        return None
    dpi = fig.dpi * PIXEL_DENSITY
    smallest = smallest_text_pt(fig)
    text = {} if smallest is None else {SMALLEST_TEXT_KEY: f"{smallest * dpi / 72:.2f}"}
    buffer = io.BytesIO()
    transparent = "google.colab" not in sys.modules  # see the module's docstring
    fig.savefig(
        buffer, format="png", dpi=dpi, bbox_inches="tight", transparent=transparent, metadata=text
    )
    png = buffer.getvalue()
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    display = {"width": width // PIXEL_DENSITY, "height": height // PIXEL_DENSITY}
    return png, display


def _book_png_base64(fig: Figure) -> tuple[str, dict[str, Any]] | None:
    shown = book_png(fig)
    if shown is None:
        return None
    png, metadata = shown
    return base64.b64encode(png).decode("ascii"), metadata


def use_book_figures() -> None:
    """Show every matplotlib Figure of this IPython session as ``book_png`` draws it.

    Does nothing outside IPython (a script, a test).
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is installed with Jupyter and Colab
        return
    shell = get_ipython()
    if shell is None:
        return
    # Load the backend now: matplotlib loads it at the first figure, and the inline backend then
    # registers its own PNG formatter, which would replace this one.
    plt.switch_backend(matplotlib.get_backend())
    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, _book_png_base64)
