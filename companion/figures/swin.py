"""Figures for chapter 4: window partition, cyclic shift, shifted-window masks, patch merging.

Every ``plot_*`` function returns a new matplotlib Figure, created with ``pyplot`` so that Jupyter
shows it; a notebook cell that draws one ends with ``plt.show()``. Each figure is computed by the
companion code it illustrates (``companion.window``, ``companion.swin``), never drawn by hand.
"""

from __future__ import annotations

from typing import cast

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from companion._checks import check_positive_int, to_pair
from companion.figures.absolute import MAX_WIDTH
from companion.figures.relative import FILL, text_width
from companion.merging import merge_groups
from companion.relative import WindowSize
from companion.window import (
    cyclic_shift,
    pad_to_windows,
    shifted_window_mask,
    shifted_window_regions,
    to_shift_pair,
    window_partition,
)

FONT_SIZE = 11
#: Token cells are drawn this wide (inches) when the page has room for it.
CELL = 0.42
#: Narrower cells than this make a grid hard to read: the two panels go one above the other.
MIN_CELL = 0.33
#: One light colour per window / region; text stays black and readable on all of them.
PALETTE: tuple[tuple[float, float, float], ...] = sum(
    (
        cast(tuple, cast(ListedColormap, plt.get_cmap(name)).colors)
        for name in ("Pastel1", "Pastel2")
    ),
    (),
)
PAD_COLOR = "#d9d9d9"


def _token_numbers(height: int, width: int) -> torch.Tensor:
    """``(1, H, W, 1)`` map whose token ``(i, j)`` holds its row-major number ``i * W + j``."""
    return torch.arange(height * width).view(1, height, width, 1)


def _draw_cells(
    ax: Axes,
    colors: np.ndarray,
    texts: np.ndarray,
    hatched: np.ndarray | None = None,
) -> None:
    """A grid of coloured cells with a text in each; row 0 at the top."""
    rows, cols = texts.shape
    for r in range(rows):
        for c in range(cols):
            pad = hatched is not None and hatched[r, c]
            ax.add_patch(
                Rectangle(
                    (c, r),
                    1,
                    1,
                    facecolor=PAD_COLOR if pad else colors[r, c],
                    edgecolor="white",
                    lw=0.8,
                    hatch="///" if pad else None,
                )
            )
            if texts[r, c]:
                ax.text(c + 0.5, r + 0.5, texts[r, c], ha="center", va="center", fontsize=FONT_SIZE)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def _draw_borders(ax: Axes, rows: int, cols: int, row_edges, col_edges) -> None:
    for edge in row_edges:
        ax.plot([0, cols], [edge, edge], color="black", lw=2.2)
    for edge in col_edges:
        ax.plot([edge, edge], [0, rows], color="black", lw=2.2)


def _two_panels(
    sizes: tuple[tuple[float, float], tuple[float, float]],
    margins: tuple[tuple[float, float], tuple[float, float]],
    cell: float,
    min_cell: float = MIN_CELL,
    extra_height: float = 0.0,
) -> tuple[Figure, Axes, Axes, float]:
    """A figure of two cell grids, side by side when that fits ``MAX_WIDTH``, else stacked.

    ``sizes``: each panel's ``(width, height)`` in cells; ``margins``: the inches each panel needs
    around its cells (title, tick and axis labels). Cells are ``cell`` inches wide, or
    ``min_cell`` (the room their written values need) when that is wider, and narrower only to
    fit the page; side by side is kept while they stay at least ``min_cell`` wide.
    ``extra_height``: inches below the panels (a legend). Returns the figure, both axes and the
    cell width actually used.
    """
    cell = max(cell, min_cell)
    (w1, h1), (w2, h2) = sizes
    (mw1, mh1), (mw2, mh2) = margins
    side = min(cell, (MAX_WIDTH - mw1 - mw2) / (w1 + w2))
    if side >= min_cell:
        fig, (ax1, ax2) = plt.subplots(
            1,
            2,
            layout="constrained",
            figsize=(
                side * (w1 + w2) + mw1 + mw2,
                max(side * h1 + mh1, side * h2 + mh2) + extra_height,
            ),
            width_ratios=[w1, w2],
        )
        return fig, ax1, ax2, side
    stacked = min(cell, (MAX_WIDTH - mw1) / w1, (MAX_WIDTH - mw2) / w2)
    fig, (ax1, ax2) = plt.subplots(
        2,
        1,
        layout="constrained",
        figsize=(
            max(stacked * w1 + mw1, stacked * w2 + mw2),
            stacked * (h1 + h2) + mh1 + mh2 + extra_height,
        ),
        height_ratios=[h1, h2],
    )
    return fig, ax1, ax2, stacked


def _min_cell(texts: np.ndarray) -> float:
    """The cell width the widest of ``texts`` needs at ``FONT_SIZE``, and at least ``MIN_CELL``."""
    widths = [text_width(str(t), FONT_SIZE) / FILL for t in texts.flatten() if t]
    return max([MIN_CELL, *widths])


def plot_window_partition(height: int, width: int, window_size: WindowSize) -> Figure:
    """Left: an ``height x width`` map cut into windows, each token labelled with its number.

    A map that is not a multiple of the window is zero-padded (hatched cells). Right: the output
    of ``window_partition``, one row per window, listing the tokens it holds in order. When the
    two do not fit side by side in the book's column, the list goes below the map. Every token
    is written, so this is for small examples: windows of up to ~16 tokens fit the column.
    """
    check_positive_int("height", height)
    check_positive_int("width", width)
    wh, ww = to_pair("window_size", window_size)
    numbers = _token_numbers(height, width) + 1  # 0 is left for the padding
    padded = pad_to_windows(numbers, (wh, ww))[0, :, :, 0]
    hp, wp = padded.shape
    window_of = (torch.arange(hp)[:, None] // wh) * (wp // ww) + torch.arange(wp)[None, :] // ww
    colors = np.array([[PALETTE[w % len(PALETTE)] for w in row] for row in window_of.tolist()])
    is_pad = (padded == 0).numpy()
    texts = np.array([[str(v - 1) if v else "" for v in row] for row in padded.tolist()])

    windows = window_partition(padded[None, :, :, None], (wh, ww)).view(-1, wh * ww)
    num_windows, n = windows.shape
    title = f"{height} x {width} map, window {wh} x {ww}"
    if (hp, wp) != (height, width):
        title += f"\npadded to {hp} x {wp} (hatched: zeros)"
    row_labels = [f"window {w}" for w in range(num_windows)]
    # The map's margin is its title; the list's, its row labels, column labels and axis label.
    label_width = max(text_width(label, FONT_SIZE) for label in row_labels)
    fig, ax_map, ax_win, cell = _two_panels(
        ((wp, hp), (n, num_windows)),
        ((0.2, 0.35 + 0.2 * title.count("\n")), (label_width + 0.35, 0.9)),
        CELL,
        _min_cell(texts),
    )
    win_title = f"window_partition: {num_windows} windows x {n} tokens"
    if text_width(win_title, 11) > n * cell + 0.2:
        # Centred on a narrower panel, it would run off the page: two lines, and room for them.
        win_title = win_title.replace(": ", "\n")
        fig.set_figheight(fig.get_figheight() + 0.2)
    _draw_cells(ax_map, colors, texts, is_pad)
    _draw_borders(ax_map, hp, wp, range(0, hp + 1, wh), range(0, wp + 1, ww))
    ax_map.set_title(title, fontsize=12)

    win_colors = np.array([[PALETTE[w % len(PALETTE)]] * n for w in range(num_windows)])
    win_texts = np.array([[str(v - 1) if v else "" for v in row] for row in windows.tolist()])
    _draw_cells(ax_win, win_colors, win_texts, (windows == 0).numpy())
    ax_win.set_yticks(np.arange(num_windows) + 0.5, row_labels)
    ax_win.set_xticks(np.arange(n) + 0.5, [str(i) for i in range(n)])
    ax_win.tick_params(labelsize=FONT_SIZE, length=0)
    ax_win.set_xlabel("position inside the window (row-major)", fontsize=FONT_SIZE)
    ax_win.set_title(win_title, fontsize=12)
    return fig


def plot_cyclic_shift(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> Figure:
    """The shifted window partition before and after the cyclic shift, coloured by region.

    Left: the original map with the *shifted* partition drawn on it (borders offset by the
    shift), which leaves smaller windows at the edges. Right: after ``cyclic_shift`` the same
    tokens sit in the regular partition; tokens are numbered by their original position and
    coloured by the region (``shifted_window_regions``) they belong to. A window that holds two
    colours is one the mask must split. The two maps go one above the other when side by side
    their cells would be too narrow.
    """
    check_positive_int("height", height)
    check_positive_int("width", width)
    wh, ww = to_pair("window_size", window_size)
    sh, sw = to_shift_pair(shift_size)
    regions = shifted_window_regions(height, width, (wh, ww), (sh, sw))
    numbers = _token_numbers(height, width)
    shifted_numbers = cyclic_shift(numbers, (sh, sw))[0, :, :, 0]
    # The region of each original token: undo the roll on the label map.
    original_regions = cyclic_shift(regions[None, :, :, None], (sh, sw), inverse=True)[0, :, :, 0]

    def colors(labels: torch.Tensor) -> np.ndarray:
        return np.array([[PALETTE[v] for v in row] for row in labels.tolist()])

    def texts(values: torch.Tensor) -> np.ndarray:
        return np.array([[str(v) for v in row] for row in values.tolist()])

    before, after = texts(numbers[0, :, :, 0]), texts(shifted_numbers)
    present = sorted(set(regions.flatten().tolist()))
    # Titles take two lines (~0.55 in); the legend below the panels one line per 5 regions.
    legend_rows = -(-len(present) // 5)
    fig, ax_before, ax_after, _ = _two_panels(
        ((width, height), (width, height)),
        ((0.2, 0.6), (0.2, 0.6)),
        CELL,
        _min_cell(before),
        extra_height=0.25 * legend_rows + 0.1,
    )
    _draw_cells(ax_before, colors(original_regions), before)
    _draw_borders(
        ax_before,
        height,
        width,
        [0, *range(sh, height, wh), height],
        [0, *range(sw, width, ww), width],
    )
    ax_before.set_title(f"original map\nwindows shifted by ({sh}, {sw})", fontsize=12)
    _draw_cells(ax_after, colors(regions), after)
    _draw_borders(ax_after, height, width, range(0, height + 1, wh), range(0, width + 1, ww))
    ax_after.set_title(f"after torch.roll by ({-sh}, {-sw})\nregular windows", fontsize=12)
    handles = [Patch(facecolor=PALETTE[r], edgecolor="grey", label=f"region {r}") for r in present]
    # Below the panels, so that they get the column's whole width.
    # Short swatches and columns close together: five columns of nine regions fit the width.
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 5),
        fontsize=FONT_SIZE, handlelength=1.2, columnspacing=1.0,
    )  # fmt: skip
    return fig


def plot_shifted_window_masks(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> Figure:
    """The ``(N, N)`` mask of every window of a cyclically shifted map, laid out like the windows.

    White: the query (row) may attend to the key (column), a 1 in ``mask == 0``; dark: blocked
    (``-100`` is added), a 0. A legend below says so. Thin lines separate the window's rows of
    tokens.
    """
    check_positive_int("height", height)
    check_positive_int("width", width)
    wh, ww = to_pair("window_size", window_size)
    mask = shifted_window_mask(height, width, (wh, ww), shift_size)
    nh, nw = height // wh, width // ww
    n = wh * ww
    # Panels of up to 2.6 in, as many across as the windows are; the axis labels take ~0.6 in.
    panel = min(2.6, (MAX_WIDTH - 0.6) / nw)
    blocked = [int((m != 0).sum()) for m in mask]
    titles = [f"window {w}: {b} blocked pairs" for w, b in enumerate(blocked)]
    if max(text_width(t, FONT_SIZE + 1) for t in titles) > panel:
        titles = [t.replace(": ", "\n") for t in titles]  # too wide for the panel: two lines
    fig, axes = plt.subplots(
        nh,
        nw,
        layout="constrained",
        figsize=(panel * nw + 0.6, (panel + 0.2 * titles[0].count("\n")) * nh + 1.2),
        squeeze=False,
    )
    cmap = ListedColormap(["#404040", "white"])
    for w, ax in enumerate(axes.flat):
        ax.imshow((mask[w] == 0).numpy(), cmap=cmap, vmin=0, vmax=1)
        for edge in range(ww, n, ww):
            ax.axhline(edge - 0.5, color="#4c72b0", lw=0.8)
            ax.axvline(edge - 0.5, color="#4c72b0", lw=0.8)
        ax.set_title(titles[w], fontsize=FONT_SIZE + 1)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes[-1]:
        ax.set_xlabel("key token k", fontsize=FONT_SIZE)
    for ax in axes[:, 0]:
        ax.set_ylabel("query token q", fontsize=FONT_SIZE)
    fig.suptitle(
        f"Shifted-window masks: {height} x {width} map, window {wh} x {ww}, shift {shift_size}",
        fontsize=12,
    )
    fig.legend(
        handles=[
            Patch(facecolor="white", edgecolor="#404040", label="1: may attend (adds 0)"),
            Patch(facecolor="#404040", edgecolor="#404040", label="0: blocked (adds -100)"),
        ],
        loc="outside lower center",
        ncols=2,
        fontsize=FONT_SIZE,
        frameon=False,
    )
    return fig


def plot_patch_merging(height: int, width: int) -> Figure:
    """Left: a numbered map with its 2 x 2 groups. Right: what ``merge_groups`` stacks at each
    output position, in channel order (top-left, bottom-left, top-right, bottom-right).

    The two go one above the other when they do not fit side by side in the book's column.
    """
    check_positive_int("height", height)
    check_positive_int("width", width)
    numbers = _token_numbers(height, width) + 1  # 0 is left for the padding
    merged = merge_groups(numbers)[0]  # (H/2, W/2, 4)
    padded = pad_to_windows(numbers, 2)[0, :, :, 0]
    hp, wp = padded.shape
    group = (torch.arange(hp)[:, None] // 2) * (wp // 2) + torch.arange(wp)[None, :] // 2
    colors = np.array([[PALETTE[g % len(PALETTE)] for g in row] for row in group.tolist()])
    texts = np.array([[str(v - 1) if v else "" for v in row] for row in padded.tolist()])

    out_h, out_w, _ = merged.shape
    out_colors = np.array(
        [[PALETTE[(r * out_w + c) % len(PALETTE)] for c in range(out_w)] for r in range(out_h)]
    )
    out_texts = np.array(
        [[_bracket(merged[r, c].tolist()) for c in range(out_w)] for r in range(out_h)]
    )
    # An output cell is drawn as wide as the 2 x 2 group it comes from, so the cell size is set
    # by the room the widest list of four token numbers needs.
    fig, ax_in, ax_out, _ = _two_panels(
        ((wp, hp), (2 * out_w, 2 * out_h)),
        ((0.2, 0.4), (0.2, 0.4)),
        0.6,
        _min_cell(out_texts) / 2,
    )
    _draw_cells(ax_in, colors, texts, (padded == 0).numpy())
    _draw_borders(ax_in, hp, wp, range(0, hp + 1, 2), range(0, wp + 1, 2))
    ax_in.set_title(f"(B, {height}, {width}, C): token numbers", fontsize=12)
    _draw_cells(ax_out, out_colors, out_texts)
    ax_out.set_title(f"(B, {out_h}, {out_w}, 4C): tokens stacked", fontsize=12)
    return fig


def _bracket(values: list[int]) -> str:
    """``[a, b, c, d]`` of token numbers stored 1-based, with 0 (padding) written as ``pad``."""
    return "[" + ", ".join(str(v - 1) if v else "pad" for v in values) + "]"
