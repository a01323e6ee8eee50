"""Figures for chapter 4: window partition, cyclic shift, shifted-window masks, patch merging.

Every ``plot_*`` function returns a new matplotlib Figure, created with ``pyplot`` so that Jupyter
shows it; a notebook cell that draws one ends with ``plt.show()``. Each figure is computed by the
companion code it illustrates (``companion.window``, ``companion.swin``), never drawn by hand.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from companion._checks import check_positive_int, to_pair
from companion.relative import WindowSize
from companion.swin import merge_groups
from companion.window import (
    cyclic_shift,
    pad_to_windows,
    shifted_window_mask,
    shifted_window_regions,
    to_shift_pair,
    window_partition,
)

FONT_SIZE = 9
#: One light colour per window / region; text stays black and readable on all of them.
PALETTE = plt.get_cmap("Pastel1").colors + plt.get_cmap("Pastel2").colors
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


def plot_window_partition(height: int, width: int, window_size: WindowSize) -> Figure:
    """Left: an ``height x width`` map cut into windows, each token labelled with its number.

    A map that is not a multiple of the window is zero-padded (hatched cells). Right: the output
    of ``window_partition``, one row per window, listing the tokens it holds in order.
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
    cell = 0.42
    fig, (ax_map, ax_win) = plt.subplots(
        1,
        2,
        figsize=(cell * (wp + n) + 2.0, cell * max(hp, num_windows) + 1.2),
        gridspec_kw={"width_ratios": [wp, n]},
    )
    _draw_cells(ax_map, colors, texts, is_pad)
    _draw_borders(ax_map, hp, wp, range(0, hp + 1, wh), range(0, wp + 1, ww))
    title = f"{height} x {width} map, window {wh} x {ww}"
    if (hp, wp) != (height, width):
        title += f"\npadded to {hp} x {wp} (hatched: zeros)"
    ax_map.set_title(title, fontsize=11)

    win_colors = np.array([[PALETTE[w % len(PALETTE)]] * n for w in range(num_windows)])
    win_texts = np.array([[str(v - 1) if v else "" for v in row] for row in windows.tolist()])
    _draw_cells(ax_win, win_colors, win_texts, (windows == 0).numpy())
    ax_win.set_yticks(np.arange(num_windows) + 0.5, [f"window {w}" for w in range(num_windows)])
    ax_win.set_xticks(np.arange(n) + 0.5, [str(i) for i in range(n)])
    ax_win.tick_params(labelsize=FONT_SIZE, length=0)
    ax_win.set_xlabel("position inside the window (row-major)", fontsize=FONT_SIZE)
    ax_win.set_title(f"window_partition: {num_windows} windows x {n} tokens", fontsize=11)
    fig.tight_layout()
    return fig


def plot_cyclic_shift(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> Figure:
    """The shifted window partition before and after the cyclic shift, coloured by region.

    Left: the original map with the *shifted* partition drawn on it (borders offset by the
    shift), which leaves smaller windows at the edges. Right: after ``cyclic_shift`` the same
    tokens sit in the regular partition; tokens are numbered by their original position and
    coloured by the region (``shifted_window_regions``) they belong to. A window that holds two
    colours is one the mask must split.
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

    cell = 0.45
    fig, axes = plt.subplots(1, 2, figsize=(2 * cell * width + 3.2, cell * height + 1.2))
    _draw_cells(axes[0], colors(original_regions), texts(numbers[0, :, :, 0]))
    _draw_borders(
        axes[0],
        height,
        width,
        [0, *range(sh, height, wh), height],
        [0, *range(sw, width, ww), width],
    )
    axes[0].set_title(f"original map: windows shifted by ({sh}, {sw})", fontsize=11)
    _draw_cells(axes[1], colors(regions), texts(shifted_numbers))
    _draw_borders(axes[1], height, width, range(0, height + 1, wh), range(0, width + 1, ww))
    axes[1].set_title(f"after torch.roll by ({-sh}, {-sw}): regular windows", fontsize=11)
    present = sorted(set(regions.flatten().tolist()))
    handles = [Patch(facecolor=PALETTE[r], edgecolor="grey", label=f"region {r}") for r in present]
    axes[1].legend(
        handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=FONT_SIZE
    )
    fig.tight_layout()
    return fig


def plot_shifted_window_masks(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> Figure:
    """The ``(N, N)`` mask of every window of a cyclically shifted map, laid out like the windows.

    White: the query (row) may attend to the key (column); dark: blocked (``-100`` is added).
    Thin lines separate the window's rows of tokens.
    """
    check_positive_int("height", height)
    check_positive_int("width", width)
    wh, ww = to_pair("window_size", window_size)
    mask = shifted_window_mask(height, width, (wh, ww), shift_size)
    nh, nw = height // wh, width // ww
    n = wh * ww
    fig, axes = plt.subplots(nh, nw, figsize=(2.6 * nw + 0.6, 2.6 * nh + 0.6), squeeze=False)
    cmap = ListedColormap(["#404040", "white"])
    for w, ax in enumerate(axes.flat):
        ax.imshow((mask[w] == 0).numpy(), cmap=cmap, vmin=0, vmax=1)
        for edge in range(ww, n, ww):
            ax.axhline(edge - 0.5, color="#4c72b0", lw=0.8)
            ax.axvline(edge - 0.5, color="#4c72b0", lw=0.8)
        blocked = int((mask[w] != 0).sum())
        ax.set_title(f"window {w}: {blocked} blocked pairs", fontsize=FONT_SIZE + 1)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes[-1]:
        ax.set_xlabel("key token k", fontsize=FONT_SIZE)
    for ax in axes[:, 0]:
        ax.set_ylabel("query token q", fontsize=FONT_SIZE)
    fig.suptitle(
        f"Shifted-window masks: {height} x {width} map, window {wh} x {ww}, shift {shift_size}",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def plot_patch_merging(height: int, width: int) -> Figure:
    """Left: a numbered map with its 2 x 2 groups. Right: what ``merge_groups`` stacks at each
    output position, in channel order (top-left, bottom-left, top-right, bottom-right)."""
    check_positive_int("height", height)
    check_positive_int("width", width)
    numbers = _token_numbers(height, width) + 1  # 0 is left for the padding
    merged = merge_groups(numbers)[0]  # (H/2, W/2, 4)
    padded = pad_to_windows(numbers, 2)[0, :, :, 0]
    hp, wp = padded.shape
    group = (torch.arange(hp)[:, None] // 2) * (wp // 2) + torch.arange(wp)[None, :] // 2
    colors = np.array([[PALETTE[g % len(PALETTE)] for g in row] for row in group.tolist()])
    texts = np.array([[str(v - 1) if v else "" for v in row] for row in padded.tolist()])

    cell = 0.6
    fig, (ax_in, ax_out) = plt.subplots(1, 2, figsize=(cell * (wp + 2 * wp) + 1.5, cell * hp + 1.3))
    _draw_cells(ax_in, colors, texts, (padded == 0).numpy())
    _draw_borders(ax_in, hp, wp, range(0, hp + 1, 2), range(0, wp + 1, 2))
    ax_in.set_title(f"(B, {height}, {width}, C): token numbers", fontsize=11)

    out_h, out_w, _ = merged.shape
    out_colors = np.array(
        [[PALETTE[(r * out_w + c) % len(PALETTE)] for c in range(out_w)] for r in range(out_h)]
    )
    out_texts = np.array(
        [[_bracket(merged[r, c].tolist()) for c in range(out_w)] for r in range(out_h)]
    )
    _draw_cells(ax_out, out_colors, out_texts)
    ax_out.set_title(f"(B, {out_h}, {out_w}, 4C): tokens stacked", fontsize=11)
    fig.tight_layout()
    return fig


def _bracket(values: list[int]) -> str:
    """``[a, b, c, d]`` of token numbers stored 1-based, with 0 (padding) written as ``pad``."""
    return "[" + ", ".join(str(v - 1) if v else "pad" for v in values) + "]"
