"""The logic behind the book's interactive explorers, as plain functions.

Each explorer answers one question for an input the reader picks, and draws the answer:

- ``relative_index_view`` / ``relative_index_figure`` (chapter 2): for one query cell of a
  ``Wh x Ww`` window, every key's offset, its shifted and multiplied values and its final index.
- ``bias_row`` / ``bias_row_figure`` (chapters 3 and 5): one head's bias ``B`` for one query,
  laid out on the window.
- ``embedding_similarity`` / ``embedding_similarity_figure`` (chapter 1): the cosine similarity of
  one patch's position embedding to every patch's.

The ``*_figure`` functions are the static figures (matplotlib) each explorer shows for its starting
values: to readers without JavaScript, in print and in the PDF. ``companion.figures.widgets``
wires controls to them and hands ``bias_table`` / ``embedding_similarities`` to the browser,
which draws the same
numbers live (``companion.figures.live``). Cells (a query, a patch) are
given as ``(row, col)`` or as a token number ``row * width + col``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import Tensor, nn

from companion._checks import to_pair
from companion.figures.absolute import MAX_WIDTH
from companion.figures.relative import FILL, draw_cell_grid, text_width
from companion.relative import (
    WindowSize,
    flatten_coordinates,
    grid_coordinates,
    lookup_bias,
    multiply_row_offsets,
    pairwise_offsets,
    relative_position_index,
    shift_offsets,
    sum_offsets,
)

Cell = int | tuple[int, int]

#: Smallest font in the explorers' figures (the book's legibility minimum).
FONT_SIZE = 9
#: Similarity maps write their values in the cells up to this many rows/columns: two decimals
#: need ~0.5 in per cell to stay legible.
SIMILARITY_ANNOTATED = 8


def to_cell(name: str, value: object, grid: tuple[int, int]) -> tuple[int, int]:
    """A cell of a ``grid = (rows, cols)`` grid given as ``(row, col)`` or as a token number.

    Token ``t`` is cell ``divmod(t, cols)`` (row-major, the order ``flatten`` uses).
    """
    rows, cols = grid
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < rows * cols:
            raise ValueError(
                f"{name} must be a token number in [0, {rows * cols - 1}] for a {rows}x{cols} "
                f"grid, got {value}"
            )
        return divmod(value, cols)
    if isinstance(value, tuple | list) and len(value) == 2:
        r, c = value
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (r, c)):
            if not (0 <= r < rows and 0 <= c < cols):
                raise ValueError(
                    f"{name} must be a cell (row, col) with row in [0, {rows - 1}] and col in "
                    f"[0, {cols - 1}] for a {rows}x{cols} grid, got {tuple(value)}"
                )
            return (r, c)
    raise TypeError(
        f"{name} must be a (row, col) pair of ints or an int token number, "
        f"got {value!r} ({type(value).__name__})"
    )


# ----- relative index (chapter 2) ---------------------------------------------------------------


@dataclass(frozen=True)
class RelativeIndexView:
    """One query's row of every step of ``relative_position_index``, laid out on the window.

    Attributes:
        window_size: ``(Wh, Ww)``.
        query: the query cell ``(row, col)``; ``token`` is its number ``row * Ww + col``.
        offsets: ``(Wh, Ww, 2)``: at key cell ``(i, j)``, ``query - key = (dy, dx)``.
        shifted: ``(Wh, Ww, 2)``: ``(dy + Wh - 1, dx + Ww - 1)``.
        multiplied: ``(Wh, Ww, 2)``: ``((dy + Wh - 1) * (2Ww - 1), dx + Ww - 1)``.
        index: ``(Wh, Ww)``: the sum of ``multiplied``, the key's row of the bias table.
    """

    window_size: tuple[int, int]
    query: tuple[int, int]
    token: int
    offsets: Tensor
    shifted: Tensor
    multiplied: Tensor
    index: Tensor


def relative_index_view(window_size: WindowSize, query: Cell) -> RelativeIndexView:
    """Run every step of the index for the whole window and keep the query's row of each.

    The steps are ``companion.relative``'s own functions, so this shows exactly what
    ``relative_position_index`` computes.
    """
    wh, ww = to_pair("window_size", window_size)
    row, col = to_cell("query", query, (wh, ww))
    token = row * ww + col
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates((wh, ww))))
    shifted = shift_offsets(offsets, (wh, ww))
    multiplied = multiply_row_offsets(shifted, (wh, ww))
    index = sum_offsets(multiplied)
    return RelativeIndexView(
        window_size=(wh, ww),
        query=(row, col),
        token=token,
        offsets=offsets[token].view(wh, ww, 2),
        shifted=shifted[token].view(wh, ww, 2),
        multiplied=multiplied[token].view(wh, ww, 2),
        index=index[token].view(wh, ww),
    )


def relative_index_figure(window_size: WindowSize = (2, 3), query: Cell = (0, 0)) -> Figure:
    """Four window grids, one per step: offset, shifted, multiplied, and the final index.

    Every key cell carries its own value in each grid; the query cell is outlined, so the reader
    can follow one key from its offset to its row of the bias table.
    """
    view = relative_index_view(window_size, query)
    wh, ww = view.window_size
    # Two panels across fit MAX_WIDTH, so a page shows the figure at full size.
    cell = min(float(np.clip(2.6 / max(wh, ww), 0.55, 0.85)), (MAX_WIDTH - 1.6) / (2 * ww))
    steps = (
        (view.offsets, "step 3. offset = query − key\n(dy, dx)"),
        (view.shifted, f"step 4. shift: + ({wh - 1}, {ww - 1})\n(Wh − 1, Ww − 1)"),
        (view.multiplied, f"step 5. row part × (2·Ww − 1) = {2 * ww - 1}\n(row part, column part)"),
    )
    # A pair wider than its cell (large windows) is written on two lines, first value on top.
    size = _font_size(wh, ww)
    widest = max(
        text_width(f"({a},{b})", size) for p, _ in steps for a, b in p.view(-1, 2).tolist()
    )
    one_line = widest <= FILL * cell
    panel_w, panel_h = ww * cell + 0.8, wh * cell + 1.15
    # The title gets a second line (and the room for it) when the pairs are split.
    fig = Figure(
        figsize=(2 * panel_w, 2 * panel_h + (0.4 if one_line else 0.65)), layout="constrained"
    )
    axes = fig.subplots(2, 2)
    for ax, (pairs, title) in zip(axes.flat, steps, strict=False):
        texts = [
            [f"({a},{b})" if one_line else f"{a}\n{b}" for a, b in row.tolist()]
            for row in pairs.int()
        ]
        _draw_grid(ax, np.zeros((wh, ww)), texts, title, view.query, cmap="Greys", vmax=4.0)
    index = view.index.numpy()
    _draw_grid(
        axes[1, 1],
        index,
        [[str(v) for v in row] for row in index.tolist()],
        "step 6. index = row part + column part\n(row of the bias table)",
        view.query,
        cmap="viridis",
        vmin=0.0,
        vmax=float((2 * wh - 1) * (2 * ww - 1) - 1),
    )
    fig.suptitle(
        f"Query cell {view.query} (token {view.token}) of a {wh}×{ww} window: "
        "each key cell's value"
        + ("" if one_line else "\n(pairs written one value above the other)"),
        fontsize=11,
    )
    return fig


# ----- bias B for one query (chapters 3 and 5) --------------------------------------------------


def bias_table(
    source: nn.Module | Tensor, window_size: WindowSize | None = None
) -> tuple[Tensor, tuple[int, int]]:
    """The bias table ``((2Wh-1)(2Ww-1), H)`` (float32, CPU) and the window ``(Wh, Ww)``.

    ``source`` is either a module holding ``relative_position_bias_table`` and
    ``relative_position_index`` (``WindowAttention``, timm's Swin
    attention) or a bias table together with ``window_size``. A module's index must be
    ``relative_position_index`` of its window (the table alone then determines ``B``).
    """
    if isinstance(source, Tensor):
        if window_size is None:
            raise ValueError("window_size must be given when source is a bias table, got None")
        wh, ww = to_pair("window_size", window_size)
        expected = (2 * wh - 1) * (2 * ww - 1)
        if source.dim() != 2 or source.shape[0] != expected:
            raise ValueError(
                f"source must be a bias table of shape ((2Wh-1)(2Ww-1)={expected}, num_heads) "
                f"for window_size={window_size!r}, got shape {tuple(source.shape)}"
            )
        table = source
    elif isinstance(source, nn.Module):
        holder = getattr(source, "code", source)  # an attention keeps its table in its code
        found = getattr(holder, "relative_position_bias_table", None)
        index = getattr(holder, "relative_position_index", None)
        if found is None or index is None:
            raise ValueError(
                f"source must hold a relative position bias (relative_position_bias_table and "
                f"relative_position_index), got {type(source).__name__} without one "
                "(for example WindowAttention(position=None))"
            )
        table = found
        own = to_pair("source.window_size", tuple(cast(Sequence[int], source.window_size)))
        if window_size is not None and to_pair("window_size", window_size) != own:
            raise ValueError(
                f"window_size must match the module's window_size={own} (or be None), "
                f"got {window_size!r}"
            )
        if not torch.equal(index.cpu(), relative_position_index(own)):
            raise ValueError(
                f"source.relative_position_index must be relative_position_index({own}), "
                "got another index"
            )
        wh, ww = own
    else:
        raise TypeError(
            "source must be an nn.Module with a relative position bias or a bias table Tensor, "
            f"got {type(source).__name__}"
        )
    return table.detach().float().cpu(), (wh, ww)


def relative_bias(
    source: nn.Module | Tensor, window_size: WindowSize | None = None
) -> tuple[Tensor, tuple[int, int]]:
    """The bias ``B`` ``(H, N, N)`` and the window ``(Wh, Ww)`` it belongs to.

    ``source`` and ``window_size`` as for ``bias_table``.
    """
    table, window = bias_table(source, window_size)
    return lookup_bias(table, relative_position_index(window)), window


def _check_head(head: object, num_heads: int) -> int:
    if not isinstance(head, int) or isinstance(head, bool):
        raise TypeError(f"head must be an int, got {head!r} ({type(head).__name__})")
    if not 0 <= head < num_heads:
        raise ValueError(f"head must be in [0, {num_heads - 1}], got {head}")
    return head


def bias_row(
    source: nn.Module | Tensor,
    query: Cell,
    head: int = 0,
    window_size: WindowSize | None = None,
) -> Tensor:
    """``B[head, q, :]`` reshaped to ``(Wh, Ww)``: the bias the query adds to each key's logit."""
    bias, (wh, ww) = relative_bias(source, window_size)
    head = _check_head(head, bias.shape[0])
    row, col = to_cell("query", query, (wh, ww))
    return bias[head, row * ww + col].view(wh, ww)


def bias_row_figure(
    source: nn.Module | Tensor,
    head: int = 0,
    query: Cell = (0, 0),
    window_size: WindowSize | None = None,
) -> Figure:
    """Left: ``B[head]`` ``(N, N)`` with the query's row outlined. Right: that row on the window.

    Both panels share one colour scale, symmetric about 0 and fixed per head, so moving the query
    changes the picture only where the bias changes.
    """
    bias, (wh, ww) = relative_bias(source, window_size)
    head = _check_head(head, bias.shape[0])
    row, col = to_cell("query", query, (wh, ww))
    token, n = row * ww + col, wh * ww
    matrix = bias[head].numpy()
    bound = bias_bound(bias, head)
    fmt = _float_format(bound)
    # The N x N matrix gets what the window leaves of MAX_WIDTH (the width a book page shows at
    # full size), between 2 and 3.2 in: 3.1 in for a 4 x 4 window's 16 x 16 matrix, 2 in for a
    # 7 x 7 window's 49 x 49. The window keeps cells wide enough for its written values (0.6 in
    # at least while the matrix grows). The colour bar goes below, so that it takes no width.
    big = float(np.clip(MAX_WIDTH - 1.2 - 0.6 * ww, 2.0, 3.2))
    cell = min(float(np.clip(3.2 / max(wh, ww), 0.5, 0.8)), (MAX_WIDTH - big - 1.2) / ww)
    right_w = max(ww * cell, 2.0)  # at least the width of the panel's title
    fig = Figure(
        figsize=(big + right_w + 1.2, max(big, wh * cell) + 2.0),
        layout="constrained",
    )
    left, right = fig.subplots(1, 2, width_ratios=[big + 0.4, right_w + 0.4])
    norm = Normalize(-bound, bound)
    image = left.imshow(matrix, cmap="RdBu_r", norm=norm)
    left.add_patch(Rectangle((-0.5, token - 0.5), n, 1, fill=False, ec="black", lw=2))
    left.set_title(f"B[head {head}]: {n}×{n}\nquery row {token} outlined", fontsize=10)
    left.set_xlabel("key token k", fontsize=FONT_SIZE)
    left.set_ylabel("query token q", fontsize=FONT_SIZE)
    left.tick_params(labelsize=FONT_SIZE)
    values = bias_row(source, (row, col), head, window_size).numpy()
    _draw_grid(
        right,
        values,
        [[fmt(v) for v in r] for r in values.tolist()],
        f"row {token} on the {wh}×{ww} window\n(query cell {(row, col)} outlined)",
        (row, col),
        cmap="RdBu_r",
        vmin=-bound,
        vmax=bound,
    )
    bar = fig.colorbar(image, ax=[left, right], location="bottom", shrink=0.6, aspect=30)
    bar.set_label("bias added to the logit", fontsize=FONT_SIZE)
    bar.ax.tick_params(labelsize=FONT_SIZE)
    fig.suptitle(f"Relative position bias of head {head} for query cell {(row, col)}", fontsize=11)
    return fig


# ----- absolute embedding similarity (chapter 1) ------------------------------------------------


def _patch_embeddings(
    embedding: Tensor, grid_size: WindowSize, num_prefix_tokens: int
) -> tuple[Tensor, tuple[int, int]]:
    """``(1, P + N, D)`` or ``(P + N, D)`` -> the ``(N, D)`` patch rows and ``(gh, gw)``."""
    if not isinstance(embedding, Tensor):
        raise TypeError(f"embedding must be a torch.Tensor, got {type(embedding).__name__}")
    gh, gw = to_pair("grid_size", grid_size)
    if isinstance(num_prefix_tokens, bool) or not isinstance(num_prefix_tokens, int):
        raise TypeError(f"num_prefix_tokens must be an int >= 0, got {num_prefix_tokens!r}")
    if num_prefix_tokens < 0:
        raise ValueError(f"num_prefix_tokens must be an int >= 0, got {num_prefix_tokens}")
    rows = embedding[0] if embedding.dim() == 3 and embedding.shape[0] == 1 else embedding
    expected = num_prefix_tokens + gh * gw
    if rows.dim() != 2 or rows.shape[0] != expected:
        raise ValueError(
            f"embedding must have shape (1, {expected}, D) or ({expected}, D) for "
            f"grid_size={(gh, gw)} and num_prefix_tokens={num_prefix_tokens}, "
            f"got {tuple(embedding.shape)}"
        )
    return rows[num_prefix_tokens:].detach().float().cpu(), (gh, gw)


def embedding_similarities(
    embedding: Tensor, grid_size: WindowSize, num_prefix_tokens: int = 0
) -> Tensor:
    """Cosine similarity ``(N, gh, gw)`` of every patch's embedding to every patch's.

    ``[t]`` is the map of patch ``t`` (row-major). ``embedding``: ``(1, P + N, D)`` or
    ``(P + N, D)`` with ``N = gh * gw`` patches after ``P = num_prefix_tokens`` leading rows (1 for
    ViT's class token), which are skipped.
    """
    patches, (gh, gw) = _patch_embeddings(embedding, grid_size, num_prefix_tokens)
    unit = F.normalize(patches, dim=-1)  # cosine similarity is the dot product of unit vectors
    return (unit @ unit.T).view(gh * gw, gh, gw)


def embedding_similarity(
    embedding: Tensor, grid_size: WindowSize, patch: Cell, num_prefix_tokens: int = 0
) -> Tensor:
    """Cosine similarity ``(gh, gw)`` of ``patch``'s embedding to every patch's embedding.

    Row ``patch`` of ``embedding_similarities`` (see there for ``embedding``).
    """
    similarities = embedding_similarities(embedding, grid_size, num_prefix_tokens)
    _, gh, gw = similarities.shape
    row, col = to_cell("patch", patch, (gh, gw))
    return similarities[row * gw + col]


def embedding_similarity_figure(
    embedding: Tensor, grid_size: WindowSize, patch: Cell = (0, 0), num_prefix_tokens: int = 0
) -> Figure:
    """The similarity map of ``embedding_similarity`` on the patch grid, the patch outlined."""
    similarity = embedding_similarity(embedding, grid_size, patch, num_prefix_tokens).numpy()
    gh, gw = similarity.shape
    row, col = to_cell("patch", patch, (gh, gw))
    cell = min(float(np.clip(4.4 / max(gh, gw), 0.3, 0.6)), (MAX_WIDTH - 2.2) / gw)
    fig = Figure(figsize=(gw * cell + 2.2, gh * cell + 1.5), layout="constrained")
    ax = fig.subplots()
    annotate = max(gh, gw) <= SIMILARITY_ANNOTATED
    texts = [[f"{v:.2f}" for v in r] for r in similarity.tolist()] if annotate else None
    image = _draw_grid(
        ax,
        similarity,
        texts,
        f"Cosine similarity of patch {(row, col)}'s\nposition embedding to every patch",
        (row, col),
        cmap="viridis",
        # From the map's own minimum: similarities often all lie in a narrow band (0.6-1 for
        # sin-cos embeddings), and a fixed -1..1 scale would paint them one colour.
        vmin=min(float(similarity.min()), 0.999),
        vmax=1.0,
    )
    fig.colorbar(image, ax=ax, shrink=0.85, label="cosine similarity")
    return fig


# ----- drawing ----------------------------------------------------------------------------------


def bias_bound(bias: Tensor, head: int) -> float:
    """The colour scale of head ``head`` of ``B`` ``(H, N, N)``: ``max |B[head]|`` (1 if all 0)."""
    return float(bias[head].abs().max()) or 1.0


def float_decimals(bound: float) -> int:
    """Enough decimals to tell values apart at the scale ``bound`` (0.02 at init, ~5 trained)."""
    return int(np.clip(1 - np.floor(np.log10(bound)), 2, 4))


def _float_format(bound: float) -> Callable[[float], str]:
    """``value -> text`` with ``float_decimals(bound)`` decimals."""
    decimals = float_decimals(bound)

    def fmt(value: float) -> str:
        text = f"{value:.{decimals}f}"
        return text.lstrip("-") if float(text) == 0 else text  # no "-0.00"

    return fmt


def _font_size(rows: int, cols: int) -> int:
    """Written values are a point larger on small grids, which have the room."""
    return FONT_SIZE if max(rows, cols) > 5 else FONT_SIZE + 1


def _draw_grid(
    ax: Axes,
    values: np.ndarray,
    texts: list[list[str]] | None,
    title: str,
    marked: tuple[int, int],
    *,
    cmap: str,
    vmin: float = 0.0,
    vmax: float = 1.0,
):
    """A ``(rows, cols)`` grid coloured by ``values``, ``texts`` written in it, ``marked`` outlined.

    Returns the image, for a colour bar.
    """
    rows, cols = values.shape
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax)
    if texts is not None:
        size = _font_size(rows, cols)
        for r in range(rows):
            for c in range(cols):
                rgba = image.cmap(image.norm(values[r, c]))
                # Perceived brightness of the cell decides between black and white text.
                light = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] > 0.5
                ax.text(
                    c,
                    r,
                    texts[r][c],
                    ha="center",
                    va="center",
                    fontsize=size,
                    color="black" if light else "white",
                )
    row, col = marked
    ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, ec="#d62728", lw=3))
    draw_cell_grid(ax, rows, cols, color="0.6", lw=0.8)
    ax.tick_params(labelsize=FONT_SIZE)
    ax.set_xlabel("column", fontsize=FONT_SIZE)
    ax.set_ylabel("row", fontsize=FONT_SIZE)
    ax.set_title(title, fontsize=10)
    return image
