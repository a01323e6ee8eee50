"""The smallest text a figure may draw, so that it stays legible on a phone.

The book shows a figure at 100 dpi, cropped to what it draws (0.1 in of padding each side); a
390 px phone shows the text column 358 CSS pixels wide and scales a wider figure down to it. Text
of ``s`` points in a figure cropped to ``w`` inches is then shown at
``s * 100 / 72 * min(1, 3.58 / w)`` CSS pixels, and the book's floor is 8 px
(``tests/book_figures.py``, the browser test):

- a full-width figure (``MAX_WIDTH`` = 6.7 in, about 6.81 in once cropped) needs ``SMALL`` =
  11 pt: 11 * 100 / 72 * 3.58 / 6.81 = 8.0 px;
- a figure at most 5.4 in wide (5.5 in once cropped) may keep 9 pt: 9 * 100 / 72 * 3.58 / 5.5
  = 8.1 px.
"""

from __future__ import annotations

from matplotlib.figure import Figure

#: The smallest text of a full-width figure, in points.
SMALL = 11


def legible_ticks(fig: Figure, size: float = SMALL) -> Figure:
    """Raise every tick label of ``fig`` (colour bars' too) below ``size`` points to ``size``:
    matplotlib draws them at 10 pt unless told otherwise. Returns ``fig``."""
    for ax in fig.get_axes():
        if any(float(t.get_fontsize()) < size for t in ax.xaxis.get_ticklabels()):
            ax.tick_params(axis="x", labelsize=size)
        if any(float(t.get_fontsize()) < size for t in ax.yaxis.get_ticklabels()):
            ax.tick_params(axis="y", labelsize=size)
    return fig
