"""Figures for chapter 3: the bias table, the lookup that builds ``B``, and its effect on attention.

Every ``plot_*`` function returns a new matplotlib Figure. ``illustrative_distance_table`` makes a
hand-built table whose pictures are easy to read; it is an illustration, not a learned bias.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from companion._checks import to_pair
from companion.figures.relative import _cell_size, _check_query, draw_matrix, float_fmt
from companion.relative import WindowSize, bias_table_size, lookup_bias

#: Bias values are written in the cells of grids up to this many cells wide.
ANNOTATED_SIDE = 5


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


def _heads_figure(num_heads: int, rows: int, cols: int) -> tuple[Figure, list]:
    """A grid of panels, one per head, two per row so each stays large enough to read."""
    ncols = min(num_heads, 2)
    nrows = math.ceil(num_heads / ncols)
    cell = _cell_size(rows, cols, target=3.0)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        layout="constrained",
        figsize=(ncols * (cols * cell + 1.6), nrows * (rows * cell + 1.3)),
        squeeze=False,
    )
    for ax in axes.flat[num_heads:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:num_heads])


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
    fig, axes = _heads_figure(table.shape[1], rows, cols)
    for h, ax in enumerate(axes):
        image = draw_matrix(
            ax,
            table[:, h].view(rows, cols),
            title=f"head {h}",
            xlabel="column offset dx",
            ylabel="row offset dy",
            row_labels=[str(i - (wh - 1)) for i in range(rows)],
            col_labels=[str(j - (ww - 1)) for j in range(cols)],
            annotate=annotate,
            symmetric=True,
            highlight=centre,
        )
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(title, fontsize=12)
    return fig


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
    fig, axes = _heads_figure(bias.shape[0], wh, ww)
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
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(title, fontsize=12)
    return fig


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
    cell = _cell_size(max(n, rows), max(n, rows), target=5.0)
    fig, axes = plt.subplots(
        1,
        3,
        layout="constrained",
        figsize=(2 * n * cell + cell + 5.0, rows * cell + 1.6),
        gridspec_kw={"width_ratios": [n, 1.6, n]},
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
    fig.suptitle(f"B[{head}, q, k] = table[index[q, k], {head}]", fontsize=12)
    return fig


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
    fmt = float_fmt(torch.stack(list(maps.values())))  # one number format for every panel
    cell = _cell_size(wh, ww, target=3.6)
    fig, axes = plt.subplots(
        1,
        len(maps),
        layout="constrained",
        figsize=(len(maps) * (ww * cell + 1.0) + 1.2, wh * cell + 1.4),
        squeeze=False,
    )
    for ax, (label, weights) in zip(axes[0], maps.items(), strict=True):
        image = draw_matrix(
            ax,
            weights.view(wh, ww),
            title=label,
            xlabel="key column",
            ylabel="key row",
            annotate=annotate,
            fmt=fmt,
            cmap="magma",
            limits=(0.0, vmax),
            highlight=own,
        )
    fig.colorbar(image, ax=list(axes[0]), fraction=0.046, pad=0.04, label="attention weight")
    fig.suptitle(title, fontsize=12)
    return fig
