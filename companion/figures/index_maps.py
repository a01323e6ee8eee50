"""Chapter 2's central picture: one offset map per query, stacked into the index matrix.

For a ``Wh x Ww`` window, the map of query ``q`` is a ``Wh x Ww`` grid holding, in each key's
cell, the table row ``relative_position_index[q, k]``. Reading that map row by row gives row ``q``
of the ``(N, N)`` index; stacking the ``N`` maps, query by query, gives the whole matrix. In
tensor terms the maps are ``index.reshape(Wh, Ww, Wh, Ww)`` and the matrix is their reshape back.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from companion._checks import to_pair
from companion.figures.absolute import MAX_WIDTH
from companion.figures.relative import draw_matrix
from companion.relative import WindowSize, relative_position_index

#: Up to this window side the numbers are written in the cells; beyond, colour only.
ANNOTATED_SIDE = 3


def plot_stacked_offset_maps(window_size: WindowSize) -> Figure:
    """Left: the ``Wh x Ww`` map of every query, placed at the query's cell (outlined in red).
    Right: the ``(N, N)`` index, whose row ``q`` is query ``q``'s map read row by row.

    One colour scale (``0`` to ``T - 1``) serves both sides, so a table row has the same colour
    wherever it appears.
    """
    wh, ww = to_pair("window_size", window_size)
    index = relative_position_index((wh, ww))
    n, top = wh * ww, int(index.max())
    maps = index.reshape(wh, ww, wh, ww)
    annotate = max(wh, ww) <= ANNOTATED_SIDE
    # 0.3 in narrower than the column: the matrix's tick labels reach past the figure's edge,
    # and cropped to them it must stay within 6.8 in for its 11 pt text to be legible on a phone
    # (companion.figures.text_size).
    width = MAX_WIDTH - 0.3
    fig = plt.figure(layout="constrained", figsize=(width, 0.5 * width + 0.6))
    left, right = fig.subfigures(1, 2, wspace=0.04)  # type: ignore[misc]  # two SubFigures
    tiles = left.subplots(wh, ww, squeeze=False)
    for qr in range(wh):
        for qc in range(ww):
            ax = tiles[qr, qc]
            draw_matrix(
                ax, maps[qr, qc], title=f"q={qr * ww + qc} at ({qr},{qc})", xlabel="",
                ylabel="", annotate=annotate, limits=(0, top),
            )  # fmt: skip
            ax.add_patch(
                Rectangle((qc - 0.5, qr - 0.5), 1, 1, fill=False, ec="red", lw=2, clip_on=False)
            )
            ax.set_xticks([])
            ax.set_yticks([])
            ax.title.set_fontsize(11)
    left.suptitle("one map per query:\nkey cell -> table row", fontsize=12)
    ax = right.subplots()
    draw_matrix(
        ax, index, title=f"stacked: relative_position_index ({n}×{n})", annotate=n <= 9,
        limits=(0, top), block_size=ww,
    )  # fmt: skip
    if n > 9:
        ax.set_xticks([])
        ax.set_yticks([])
    return fig
