"""Figures for chapter 2: the window's coordinates, every step's matrix, and the offset numbering.

Every ``plot_*`` function returns a new matplotlib Figure. ``draw_matrix`` is the shared building
block: a heatmap with each cell's value written in it, used for every step of the index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle
from matplotlib.textpath import TextPath
from torch import Tensor

from companion._checks import to_pair
from companion.figures.absolute import MAX_WIDTH
from companion.relative import WindowSize, offset_to_index, relative_position_index

#: Annotations are written in cells only up to this many rows/columns; beyond, they are unreadable.
MAX_ANNOTATED = 16
#: Offset grids up to this size also spell out each cell's offset ``(dy,dx)``.
SPELLED_OFFSETS = 9
#: Matrix values are written at this size (the book's minimum for legible figures).
FONT_SIZE = 11
#: A written value fills at most this fraction of its cell's width, so neighbours stay apart.
FILL = 0.8


def _as_2d(name: str, matrix: object) -> np.ndarray:
    """A 2-D tensor or array as a NumPy array, or an error naming ``name``."""
    if isinstance(matrix, Tensor):
        matrix = matrix.detach().cpu().numpy()
    if not isinstance(matrix, np.ndarray):
        raise TypeError(
            f"{name} must be a 2-D torch.Tensor or numpy array, got {type(matrix).__name__}"
        )
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {tuple(matrix.shape)}")
    return matrix


def _check_query(query: object, n: int) -> int:
    if not isinstance(query, int) or isinstance(query, bool):
        raise TypeError(
            f"query must be an int token number, got {query!r} ({type(query).__name__})"
        )
    if not 0 <= query < n:
        raise ValueError(f"query must be a token number in [0, {n - 1}], got {query}")
    return query


def _cell_size(rows: int, cols: int, target: float = 5.5) -> float:
    """Inches per cell: a matrix fills about ``target`` inches.

    Cells that carry written values stay 0.35-0.9 in wide so the values remain legible; larger
    matrices (drawn without values) just fill the target.
    """
    if max(rows, cols) > MAX_ANNOTATED:
        return target / max(rows, cols)
    return float(np.clip(target / max(rows, cols), 0.35, 0.9))


def text_width(text: str, fontsize: float = FONT_SIZE) -> float:
    """The width of ``text`` drawn at ``fontsize`` points, in inches (from its glyph outlines)."""
    return TextPath((0, 0), text, size=fontsize).get_extents().width / 72


def _text_color(rgba: Sequence[float] | np.ndarray) -> str:
    # Perceived brightness of the cell colour decides between black and white text.
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def float_fmt(values: Tensor | np.ndarray) -> Callable[[float], str]:
    """A formatter with enough decimals to tell the values apart: 2, or 3 when all are < 0.1.

    A value that rounds to zero is written ``0.00``, never ``-0.00``.
    """
    if isinstance(values, Tensor):
        values = values.detach().cpu().numpy()
    largest = float(np.abs(values).max(initial=0.0))
    decimals = 2 if largest >= 0.1 else 3

    def fmt(value: float) -> str:
        text = f"{value:.{decimals}f}"
        return text.lstrip("-") if float(text) == 0 else text

    return fmt


def _default_fmt(values: np.ndarray) -> Callable[[float], str]:
    if np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.bool_):
        return lambda v: f"{int(v)}"
    return float_fmt(values)


def draw_matrix(
    ax: Axes,
    matrix: Tensor | np.ndarray,
    *,
    title: str = "",
    xlabel: str = "key token k",
    ylabel: str = "query token q",
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    annotate: bool | None = None,
    fmt: Callable[[float], str] | None = None,
    cmap: str | None = None,
    symmetric: bool = False,
    limits: tuple[float, float] | None = None,
    highlight: Tensor | np.ndarray | None = None,
    block_size: int | None = None,
) -> AxesImage:
    """Draw a ``(R, C)`` matrix on ``ax`` as a heatmap with each value written in its cell.

    Args:
        annotate: write the values; by default only when both sides are at most ``MAX_ANNOTATED``.
        fmt: value -> text; by default integers print as integers, floats with ``float_fmt``.
        cmap: colour map; by default diverging and centred on 0 when the matrix has negative
            values (so the sign is visible at a glance), else ``"viridis"``.
        symmetric: always use the diverging map centred on 0 (for biases, whose sign matters).
        limits: ``(vmin, vmax)`` of the colour scale, to share one scale between panels.
        highlight: ``(R, C)`` bool mask of cells to outline in red.
        block_size: draw a separator every ``block_size`` rows and columns (one window row of
            tokens), which makes the block structure of the index visible.
    """
    values = _as_2d("matrix", matrix)
    rows, cols = values.shape
    vmin, vmax = limits or (float(values.min()), float(values.max()))
    if symmetric or (cmap is None and limits is None and vmin < 0):
        # An all-zero matrix still needs a non-empty colour range (and shows as the neutral colour).
        cmap, bound = cmap or "coolwarm", max(abs(vmin), abs(vmax)) or 1.0
        vmin, vmax = -bound, bound
    elif vmin == vmax:
        vmax = vmin + 1
    image = ax.imshow(values, cmap=cmap or "viridis", vmin=vmin, vmax=vmax)
    if annotate is None:
        annotate = max(rows, cols) <= MAX_ANNOTATED
    if annotate:
        fmt = fmt or _default_fmt(values)
        for r in range(rows):
            for c in range(cols):
                ax.text(
                    c,
                    r,
                    fmt(values[r, c]),
                    ha="center",
                    va="center",
                    fontsize=FONT_SIZE,
                    color=_text_color(image.cmap(image.norm(values[r, c]))),
                )
    if highlight is not None:
        mask = _as_2d("highlight", highlight).astype(bool)
        if mask.shape != values.shape:
            raise ValueError(
                f"highlight must have the matrix's shape {values.shape}, got {mask.shape}"
            )
        for r, c in zip(*np.nonzero(mask), strict=True):
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=2.5))
    if block_size is not None:
        for edge in range(block_size, max(rows, cols), block_size):
            if edge < cols:
                ax.axvline(edge - 0.5, color="white", lw=1.5)
            if edge < rows:
                ax.axhline(edge - 0.5, color="white", lw=1.5)
    _label_ticks(ax, rows, cols, row_labels, col_labels, block_size)
    ax.set_title(title, fontsize=12)
    ax.set_xlabel(xlabel, fontsize=FONT_SIZE)
    ax.set_ylabel(ylabel, fontsize=FONT_SIZE)
    return image


def _label_ticks(
    ax: Axes,
    rows: int,
    cols: int,
    row_labels: Sequence[str] | None,
    col_labels: Sequence[str] | None,
    step: int | None,
) -> None:
    # Label every row/column of a small matrix; on a large one, one tick per block keeps it legible.
    for n, labels, set_ticks, set_labels in (
        (rows, row_labels, ax.set_yticks, ax.set_yticklabels),
        (cols, col_labels, ax.set_xticks, ax.set_xticklabels),
    ):
        if labels is not None:
            if len(labels) != n:
                raise ValueError(f"got {len(labels)} tick labels for {n} rows/columns")
            set_ticks(range(n))
            set_labels(labels, fontsize=11)
        else:
            ticks = range(0, n, step if (step and n > MAX_ANNOTATED) else 1)
            set_ticks(list(ticks))
            set_labels([str(t) for t in ticks], fontsize=11)


def plot_int_matrix(
    matrix: Tensor | np.ndarray,
    *,
    title: str = "",
    xlabel: str = "key token k",
    ylabel: str = "query token q",
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    highlight: Tensor | np.ndarray | None = None,
    block_size: int | None = None,
    colorbar: bool = False,
) -> Figure:
    """One annotated matrix (see ``draw_matrix`` for the options) in a figure of its own."""
    rows, cols = _as_2d("matrix", matrix).shape
    # Tick labels, axis labels and the colour bar take ~1.8 in (+1 in); the cells share the rest.
    cell = min(_cell_size(rows, cols, target=4.5), (MAX_WIDTH - 1.8 - colorbar) / cols)
    fig, ax = plt.subplots(
        layout="constrained", figsize=(cols * cell + 1.8 + colorbar, rows * cell + 1.3)
    )
    image = draw_matrix(
        ax,
        matrix,
        title=title,
        xlabel=xlabel,
        ylabel=ylabel,
        row_labels=row_labels,
        col_labels=col_labels,
        highlight=highlight,
        block_size=block_size,
    )
    if colorbar:
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return fig


def plot_offset_components(
    pairs: Tensor,
    *,
    title: str,
    parts: tuple[str, str] = ("row part dy", "column part dx"),
    block_size: int | None = None,
) -> Figure:
    """An ``(N, N, 2)`` step of the index drawn as its two ``(N, N)`` matrices.

    ``pairs[..., 0]`` is the row part of each (query, key) pair, ``pairs[..., 1]`` the column part.
    The two are side by side, or one above the other when side by side their cells would be too
    narrow for the values written in them.
    """
    if not isinstance(pairs, Tensor) or pairs.dim() != 3 or pairs.shape[-1] != 2:
        shape = tuple(pairs.shape) if isinstance(pairs, Tensor) else type(pairs).__name__
        raise ValueError(f"pairs must be a tensor of shape (N, N, 2), got {shape}")
    n = pairs.shape[0]
    # Each panel needs ~1.2 in for its tick and axis labels; the matrices share the rest.
    margin = 1.2
    widest = max(text_width(str(v)) for v in pairs.unique().tolist())
    cell = min(0.6, (MAX_WIDTH - 2 * margin) / (2 * n))
    side_by_side = n > MAX_ANNOTATED or cell >= widest / FILL
    if not side_by_side:
        cell = min(0.6, (MAX_WIDTH - margin) / n)
    ncols = 2 if side_by_side else 1
    fig, axes = plt.subplots(
        3 - ncols,
        ncols,
        layout="constrained",
        figsize=(ncols * (n * cell + margin), (3 - ncols) * (n * cell + 1.3) + 0.5),
        squeeze=False,
    )
    for ax, part, label in zip(axes.flat, pairs.unbind(-1), parts, strict=True):
        draw_matrix(ax, part, title=label, block_size=block_size)
    fig.suptitle(title, fontsize=13)
    return fig


def draw_cell_grid(ax: Axes, rows: int, cols: int, *, color: str, lw: float) -> None:
    """Tick every cell of a ``rows x cols`` image and draw the lines between cells."""
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.set_xticks(np.arange(-0.5, cols), minor=True)
    ax.set_yticks(np.arange(-0.5, rows), minor=True)
    ax.grid(which="minor", color=color, lw=lw)
    ax.tick_params(which="minor", length=0)


def offset_labels(window_size: WindowSize) -> tuple[list[str], list[str]]:
    """Tick labels of the ``(2Wh-1) x (2Ww-1)`` offset grid: row offsets ``dy``, column ``dx``."""
    wh, ww = to_pair("window_size", window_size)
    return [str(i) for i in range(1 - wh, wh)], [str(j) for j in range(1 - ww, ww)]


def _draw_window(ax: Axes, wh: int, ww: int, shade: np.ndarray | None = None) -> None:
    """Empty ``wh x ww`` grid, row 0 at the top, optionally shading cells."""
    background = np.zeros((wh, ww)) if shade is None else shade
    ax.imshow(background, cmap="Blues", vmin=0, vmax=3)
    draw_cell_grid(ax, wh, ww, color="black", lw=1)
    ax.set_xlabel("column", fontsize=FONT_SIZE)
    ax.set_ylabel("row", fontsize=FONT_SIZE)


def plot_window_grid(window_size: WindowSize) -> Figure:
    """The window's cells, each labelled with its ``(row, col)`` and its token number.

    The token number is the position after flattening row by row: ``row * Ww + col``.
    """
    wh, ww = to_pair("window_size", window_size)
    cell = min(_cell_size(wh, ww, target=4.5), (MAX_WIDTH - 1.4) / ww)
    fig, ax = plt.subplots(layout="constrained", figsize=(ww * cell + 1.4, wh * cell + 1.2))
    _draw_window(ax, wh, ww)
    for r in range(wh):
        for c in range(ww):
            ax.text(c, r - 0.12, f"({r}, {c})", ha="center", va="center", fontsize=12)
            ax.text(c, r + 0.25, f"token {r * ww + c}", ha="center", va="center", fontsize=11)
    ax.set_title(f"A {wh}×{ww} window:\n(row, col) and token number", fontsize=12)
    return fig


def plot_offsets_on_window(
    window_size: WindowSize, query: int, arrows: bool | None = None
) -> Figure:
    """For one query, every key's offset ``(dy, dx) = query - key`` written on the window.

    Each arrow starts at a key and ends at the query: the offset is the step that takes the key
    to the query (``dy`` rows down, ``dx`` columns right). By default arrows are drawn only for
    windows of at most ``MAX_ANNOTATED`` tokens, where they do not hide the labels.
    """
    wh, ww = to_pair("window_size", window_size)
    _check_query(query, wh * ww)
    if arrows is None:
        arrows = wh * ww <= MAX_ANNOTATED
    qy, qx = divmod(query, ww)
    shade = np.zeros((wh, ww))
    shade[qy, qx] = 1.6
    cell = min(_cell_size(wh, ww, target=5.0), (MAX_WIDTH - 1.4) / ww)
    fig, ax = plt.subplots(layout="constrained", figsize=(ww * cell + 1.4, wh * cell + 1.3))
    _draw_window(ax, wh, ww, shade)
    for ky in range(wh):
        for kx in range(ww):
            if arrows and (ky, kx) != (qy, qx):
                ax.annotate(
                    "",
                    xy=(qx, qy),
                    xytext=(kx, ky),
                    # Stop the arrow head at the query cell's edge (shrink is in points).
                    arrowprops={
                        "arrowstyle": "->",
                        "color": "0.45",
                        "lw": 1.2,
                        "shrinkB": 0.45 * cell * 72,
                    },
                )
            ax.text(
                kx,
                ky + 0.28,
                f"({qy - ky}, {qx - kx})",
                ha="center",
                va="center",
                fontsize=10,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
            )
    ax.text(qx, qy - 0.2, "query", ha="center", va="center", fontsize=10, weight="bold")
    ax.set_title(
        f"Offsets (dy, dx) = query − key\nfor query token {query} = ({qy}, {qx})", fontsize=11
    )
    return fig


def plot_relative_index(window_size: WindowSize) -> Figure:
    """The ``(N, N)`` ``relative_position_index`` as a heatmap, with a colour bar.

    Values are written in the cells for small windows; separators every ``Ww`` tokens mark the
    blocks of query rows and key rows that come from one row of the window.
    """
    wh, ww = to_pair("window_size", window_size)
    index = relative_position_index((wh, ww))
    n = wh * ww
    return plot_int_matrix(
        index,
        title=f"relative_position_index\n{wh}×{ww} window, {n}×{n} pairs",
        block_size=ww,
        colorbar=n > MAX_ANNOTATED,
    )


def plot_offset_grid(
    values: Tensor | np.ndarray,
    window_size: WindowSize,
    *,
    title: str,
    fmt: Callable[[float], str] | None = None,
    highlight_repeats: bool = False,
) -> Figure:
    """One value per offset on the ``(2Wh-1) x (2Ww-1)`` grid of offsets, rows ``dy``, cols ``dx``.

    ``values[i, j]`` belongs to the offset ``(dy, dx) = (i - (Wh-1), j - (Ww-1))``; each cell also
    shows that offset in small print. With ``highlight_repeats`` every value that occurs in more
    than one cell is outlined in red (a collision: two offsets sharing one number).
    """
    wh, ww = to_pair("window_size", window_size)
    grid = _as_2d("values", values)
    if grid.shape != (2 * wh - 1, 2 * ww - 1):
        raise ValueError(
            f"values must have shape (2Wh-1, 2Ww-1) = {(2 * wh - 1, 2 * ww - 1)} for "
            f"window_size={window_size!r}, got {tuple(grid.shape)}"
        )
    highlight = None
    if highlight_repeats:
        _, inverse, counts = np.unique(grid, return_inverse=True, return_counts=True)
        highlight = counts[inverse.reshape(grid.shape)] > 1
    rows, cols = grid.shape
    cell = min(_cell_size(rows, cols, target=5.0), (MAX_WIDTH - 1.8) / cols)
    fig, ax = plt.subplots(layout="constrained", figsize=(cols * cell + 1.8, rows * cell + 1.4))
    image = draw_matrix(
        ax,
        grid,
        title=title,
        xlabel="column offset dx",
        ylabel="row offset dy",
        row_labels=offset_labels((wh, ww))[0],
        col_labels=offset_labels((wh, ww))[1],
        annotate=False,
        highlight=highlight,
        cmap="viridis",
    )
    fmt = fmt or _default_fmt(grid)
    # Small grids have room for the offset itself under the value; larger ones rely on the ticks.
    with_offset = max(rows, cols) <= SPELLED_OFFSETS
    for i in range(rows):
        for j in range(cols):
            color = _text_color(image.cmap(image.norm(grid[i, j])))
            ax.text(
                j,
                i - 0.12 * with_offset,
                fmt(grid[i, j]),
                ha="center",
                va="center",
                fontsize=FONT_SIZE + with_offset,
                color=color,
            )
            if with_offset:
                ax.text(
                    j,
                    i + 0.28,
                    f"({i - (wh - 1)},{j - (ww - 1)})",
                    ha="center",
                    va="center",
                    fontsize=11,
                    color=color,
                )
    return fig


def plot_offset_bijection(window_size: WindowSize) -> Figure:
    """Every possible offset ``(dy, dx)`` with the table row ``offset_to_index`` gives it.

    The numbers run 0, 1, 2, ... along each row of the grid, then continue on the next row:
    the row-major numbering of the ``(2Wh-1) x (2Ww-1)`` offsets.
    """
    wh, ww = to_pair("window_size", window_size)
    numbers = torch.tensor(
        [
            [offset_to_index(dy, dx, (wh, ww)) for dx in range(-(ww - 1), ww)]
            for dy in range(-(wh - 1), wh)
        ]
    )
    return plot_offset_grid(
        numbers,
        (wh, ww),
        title=(
            f"Table row of each offset ({wh}×{ww} window)\n"
            f"index = (dy + {wh - 1})·{2 * ww - 1} + (dx + {ww - 1})"
        ),
    )
