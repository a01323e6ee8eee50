"""Figures for chapter 3: the bias table, the lookup that builds ``B``, and its effect on attention.

Every ``plot_*`` function returns a new matplotlib Figure. ``illustrative_distance_table`` makes a
hand-built table whose pictures are easy to read; it is an illustration, not a learned bias.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.ticker import MaxNLocator
from torch import Tensor

from companion._checks import to_pair
from companion.figures.relative import (
    FILL,
    MAX_WIDTH,
    _check_query,
    draw_matrix,
    float_fmt,
    offset_labels,
    text_width,
)
from companion.figures.text_size import SMALL, legible_ticks
from companion.relative import WindowSize, bias_table_size, lookup_bias

#: Bias values are written in the cells of grids up to this many cells wide.
ANNOTATED_SIDE = 5
#: Inches a panel needs around its matrix: tick and axis labels, title, its colour bar.
PANEL_MARGIN = (1.45, 0.95)
#: Tick labels need about this many inches each; narrower cells get a label every other cell.
TICK_SPACING = 0.2


def _check_table(table: object, window_size: WindowSize) -> tuple[Tensor, int, int]:
    """Check ``table`` is ``(T, H)`` with ``T = (2Wh-1)(2Ww-1)``; return it, ``Wh`` and ``Ww``."""
    wh, ww = to_pair("window_size", window_size)
    size = bias_table_size((wh, ww))
    if not isinstance(table, Tensor) or table.dim() != 2 or table.shape[0] != size:
        shape = tuple(table.shape) if isinstance(table, Tensor) else type(table).__name__
        raise ValueError(
            f"table must be a tensor of shape ((2Wh-1)(2Ww-1)={size}, num_heads) for "
            f"window_size={window_size!r}, got {shape}"
        )
    return table.detach().cpu(), wh, ww


def illustrative_distance_table(window_size: WindowSize, slopes: Sequence[float]) -> Tensor:
    """A hand-made bias table: head ``h`` adds ``-slopes[h] * distance`` to every logit.

    ``distance = sqrt(dy² + dx²)`` is the Euclidean length of the offset, so a head with a large
    slope attends mostly to nearby tokens and a head with slope 0 has no positional preference.
    Returns ``((2Wh-1)(2Ww-1), len(slopes))`` in the row order of ``relative_position_index``.
    This is for illustration only: a trained Swin learns its table (chapter 5).
    """
    wh, ww = to_pair("window_size", window_size)
    if isinstance(slopes, str | bytes) or not isinstance(slopes, Sequence) or not slopes:
        raise TypeError(f"slopes must be a non-empty sequence of numbers, got {slopes!r}")
    if not all(isinstance(s, int | float) and not isinstance(s, bool) for s in slopes):
        raise TypeError(f"slopes must contain only numbers, got {slopes!r}")
    dy, dx = torch.meshgrid(torch.arange(-(wh - 1), wh), torch.arange(-(ww - 1), ww), indexing="ij")
    # Row-major flattening of the (dy, dx) grid is exactly the table's row numbering.
    distance = torch.sqrt((dy**2 + dx**2).float()).flatten()
    return -distance[:, None] * torch.tensor(slopes, dtype=torch.float32)[None, :]


def _panels_figure(
    num_panels: int, rows: int, cols: int, min_cell: float = 0.0, colorbars: bool = True
) -> tuple[Figure, list[Axes], float]:
    """A grid of panels for ``(rows, cols)`` matrices, at most ``MAX_WIDTH`` wide.

    Two panels per row when cells of at least ``min_cell`` inches (the room written values need)
    fit across the page that way, else one. Returns the figure, its ``num_panels`` axes and the
    cell size in inches.
    """
    margin_w, margin_h = PANEL_MARGIN
    if not colorbars:  # one shared colour bar below the panels instead of one beside each
        margin_w, margin_h = margin_w - 0.55, margin_h + 0.55
    ncols = min(num_panels, 2)
    cell = min(3.0 / max(rows, cols), (MAX_WIDTH / ncols - margin_w) / cols)
    if cell < min_cell and ncols == 2:
        ncols = 1
        cell = min(3.0 / max(rows, cols), (MAX_WIDTH - margin_w) / cols)
    cell = max(cell, min(min_cell, (MAX_WIDTH - margin_w) / cols))
    nrows = math.ceil(num_panels / ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        layout="constrained",
        figsize=(ncols * (cols * cell + margin_w), nrows * (rows * cell + margin_h) + 0.4),
        squeeze=False,
    )
    for ax in axes.flat[num_panels:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:num_panels]), cell


def _values_cell(values: Tensor, fmt: Callable[[float], str] | None = None) -> float:
    """The cell width in inches that the widest written value needs.

    ``values`` ``(P, ...)``: one entry per panel. Without ``fmt`` each panel gets its own
    ``float_fmt``, as ``draw_matrix`` gives it.
    """
    return max(
        text_width((fmt or float_fmt(panel))(v)) / FILL
        for panel in values
        for v in panel.flatten().tolist()
    )


def _thin_ticks(ax: Axes, cell: float, centre: tuple[int, int] = (0, 0)) -> None:
    """On cells too narrow for a label each, keep every other tick label, ``centre`` included."""
    if cell >= TICK_SPACING:
        return
    for labels, keep in ((ax.get_yticklabels(), centre[0]), (ax.get_xticklabels(), centre[1])):
        for i, label in enumerate(labels):
            label.set_visible((i - keep) % 2 == 0)


def plot_bias_table(
    table: Tensor, window_size: WindowSize, *, title: str, annotate: bool | None = None
) -> Figure:
    """Each head's column of the ``(T, H)`` table reshaped to the ``(2Wh-1) x (2Ww-1)`` offsets.

    Row ``dy``, column ``dx``: the bias a query adds to a key ``dy`` rows above it and ``dx``
    columns to its left (offset = query - key). The centre cell ``(0, 0)`` is outlined.
    """
    table, wh, ww = _check_table(table, window_size)
    rows, cols = 2 * wh - 1, 2 * ww - 1
    if annotate is None:
        annotate = max(rows, cols) <= ANNOTATED_SIDE
    centre = np.zeros((rows, cols), dtype=bool)
    centre[wh - 1, ww - 1] = True
    min_cell = _values_cell(table.T) if annotate else 0.0
    fig, axes, cell = _panels_figure(table.shape[1], rows, cols, min_cell)
    for h, ax in enumerate(axes):
        image = draw_matrix(
            ax,
            table[:, h].view(rows, cols),
            title=f"head {h}",
            xlabel="column offset dx",
            ylabel="row offset dy",
            row_labels=offset_labels((wh, ww))[0],
            col_labels=offset_labels((wh, ww))[1],
            annotate=annotate,
            symmetric=True,
            highlight=centre,
        )
        _thin_ticks(ax, cell, (wh - 1, ww - 1))
        _colorbar(fig, image, ax)
    fig.suptitle(title, fontsize=SMALL + 1)
    return legible_ticks(fig)


def _colorbar(fig: Figure, image: AxesImage, ax: Axes) -> None:
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.ax.tick_params(labelsize=SMALL)


def plot_query_bias(
    bias: Tensor,
    window_size: WindowSize,
    query: int,
    *,
    title: str,
    annotate: bool | None = None,
) -> Figure:
    """One query's row of ``B`` per head, ``B[h, query]`` (``N`` values), placed on the window.

    Each key cell shows the bias its logit gets; the query's own cell is outlined.
    """
    wh, ww = to_pair("window_size", window_size)
    n = wh * ww
    if not isinstance(bias, Tensor) or bias.dim() != 3 or bias.shape[1:] != (n, n):
        shape = tuple(bias.shape) if isinstance(bias, Tensor) else type(bias).__name__
        raise ValueError(
            f"bias must be a tensor of shape (num_heads, N={n}, N={n}) for "
            f"window_size={window_size!r}, got {shape}"
        )
    _check_query(query, n)
    if annotate is None:
        annotate = max(wh, ww) <= ANNOTATED_SIDE
    own = np.zeros((wh, ww), dtype=bool)
    own[divmod(query, ww)] = True
    bias = bias.detach().cpu()
    min_cell = _values_cell(bias[:, query]) if annotate else 0.0
    fig, axes, cell = _panels_figure(bias.shape[0], wh, ww, min_cell)
    for h, ax in enumerate(axes):
        image = draw_matrix(
            ax,
            bias[h, query].view(wh, ww),
            title=f"head {h}",
            xlabel="key column",
            ylabel="key row",
            annotate=annotate,
            symmetric=True,
            highlight=own,
        )
        _thin_ticks(ax, cell)
        _colorbar(fig, image, ax)
    fig.suptitle(title, fontsize=SMALL + 1)
    return legible_ticks(fig)


def plot_lookup(index: Tensor, table: Tensor, head: int = 0) -> Figure:
    """The gather ``B[head, q, k] = table[index[q, k], head]`` in three panels.

    Left: the ``(N, N)`` index; middle: the head's column of the table with its row numbers;
    right: the resulting ``(N, N)`` bias. Meant for small windows (every value is written).
    """
    if not isinstance(index, Tensor) or index.dim() != 2 or index.shape[0] != index.shape[1]:
        shape = tuple(index.shape) if isinstance(index, Tensor) else type(index).__name__
        raise ValueError(f"index must be a square (N, N) tensor, got {shape}")
    if not isinstance(table, Tensor) or table.dim() != 2 or table.shape[0] <= int(index.max()):
        shape = tuple(table.shape) if isinstance(table, Tensor) else type(table).__name__
        raise ValueError(
            f"table must be a (T, num_heads) tensor with T > index.max()={int(index.max())}, "
            f"got {shape}"
        )
    if not isinstance(head, int) or not 0 <= head < table.shape[1]:
        raise ValueError(f"head must be an int in [0, {table.shape[1] - 1}], got {head!r}")
    table = table.detach().cpu()
    bias = lookup_bias(table, index)
    # One colour scale for the table column and B: equal colours mean the very same value.
    limits = (float(table[:, head].min()), float(table[:, head].max()))
    fmt = float_fmt(table[:, head])
    n, rows = index.shape[0], table.shape[0]
    # Three panels of 2n + 1 columns of cells share the page after their labels (~2.3 in); the
    # cells are as wide as the written values need when that fits.
    fit = (MAX_WIDTH - 2.3) / (2 * n + 1)
    cell = min(max(_values_cell(table[None, :, head], fmt), 0.45), fit)
    fig, axes = plt.subplots(
        1,
        3,
        layout="constrained",
        figsize=((2 * n + 1) * cell + 2.3, max(rows, n) * cell + 1.4),
        width_ratios=[n, 1, n],
    )
    draw_matrix(axes[0], index, title="index[q, k]")
    draw_matrix(
        axes[1],
        table[:, head : head + 1],
        title=f"table[:, {head}]",
        xlabel="",
        ylabel="table row",
        col_labels=[""],
        fmt=fmt,
        limits=limits,
        symmetric=True,
    )
    axes[1].tick_params(axis="x", length=0)
    draw_matrix(
        axes[2],
        bias[head],
        title=f"B[{head}, q, k]",
        fmt=fmt,
        limits=limits,
        symmetric=True,
    )
    fig.suptitle(f"B[{head}, q, k] = table[index[q, k], {head}]", fontsize=SMALL + 1)
    return legible_ticks(fig)


def plot_query_attention(
    maps: Mapping[str, Tensor],
    window_size: WindowSize,
    query: int,
    *,
    title: str,
    annotate: bool | None = None,
) -> Figure:
    """Attention weights of one query over the window's keys, one panel per labelled map.

    Each map is an ``(N,)`` row of a softmax (it sums to 1); all panels share one colour scale,
    so they can be compared directly. The query's own cell is outlined.
    """
    wh, ww = to_pair("window_size", window_size)
    n = wh * ww
    if not isinstance(maps, Mapping) or not maps:
        raise TypeError(f"maps must be a non-empty mapping label -> (N,) tensor, got {maps!r}")
    for label, weights in maps.items():
        if not isinstance(weights, Tensor) or weights.shape != (n,):
            shape = tuple(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
            raise ValueError(
                f"maps[{label!r}] must be a tensor of shape (N={n},) for "
                f"window_size={window_size!r}, got {shape}"
            )
    _check_query(query, n)
    maps = {label: weights.detach().cpu() for label, weights in maps.items()}
    if annotate is None:
        annotate = max(wh, ww) <= 7
    own = np.zeros((wh, ww), dtype=bool)
    own[divmod(query, ww)] = True
    vmax = max(float(w.max()) for w in maps.values())
    stacked = torch.stack(list(maps.values()))
    fmt = float_fmt(stacked)  # one number format for every panel
    min_cell = _values_cell(stacked, fmt) if annotate else 0.0
    fig, axes, cell = _panels_figure(len(maps), wh, ww, min_cell, colorbars=False)
    for ax, (label, weights) in zip(axes, maps.items(), strict=True):
        image = draw_matrix(
            ax,
            weights.view(wh, ww),
            title=label,
            xlabel="key column",
            ylabel="key row",
            annotate=annotate,
            fmt=fmt,
            # Light at 0, dark at the peak: most weights are near 0, so the figure stays light
            # on a light page, and its dark rendering (book.css) dark on a dark one.
            cmap="magma_r",
            limits=(0.0, vmax),
            highlight=own,
        )
        _thin_ticks(ax, cell)
    # Below the panels, so that the panels get the page's whole width.
    bar = fig.colorbar(image, ax=axes, location="bottom", shrink=0.6, aspect=30)
    bar.set_label("attention weight", fontsize=SMALL)
    bar.ax.tick_params(labelsize=SMALL)
    bar.ax.xaxis.set_major_locator(MaxNLocator(5))  # room between the tick labels
    fig.suptitle(title, fontsize=SMALL + 1)
    return legible_ticks(fig)
