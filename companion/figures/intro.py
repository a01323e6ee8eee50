"""Figures for chapter 0: what self-attention without position sees. Each returns a Figure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import matplotlib.cbook as cbook
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.image import AxesImage
from torch import Tensor

from companion._checks import check_positive_int
from companion.figures.absolute import MAX_WIDTH, draw_patch_grid
from companion.figures.text_size import SMALL
from companion.permutation import PermutationCheck, shuffle_patches


def sample_image(size: int = 224) -> Tensor:
    """Matplotlib's bundled sample photo (Grace Hopper), square-cropped, as ``(3, size, size)``.

    The photo ships inside matplotlib (``mpl-data/sample_data``), so nothing is downloaded.
    Values are floats in ``[0, 1]``.
    """
    check_positive_int("size", size)
    path = cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)
    pixels = torch.from_numpy(plt.imread(path).copy())  # (600, 512, 3) uint8
    image = pixels.permute(2, 0, 1).float() / 255.0
    side = min(image.shape[1:])
    # The face is in the upper part of the portrait: keep the top square.
    top, left = 0, (image.shape[2] - side) // 2
    square = image[:, top : top + side, left : left + side]
    resized = F.interpolate(
        square[None], size=(size, size), mode="bilinear", align_corners=False, antialias=True
    )
    return resized[0].clamp(0, 1)


def plot_shuffled_patches(image: Tensor, patch_size: int, perm: Tensor) -> Figure:
    """The image and the same patches shuffled by ``perm``, each cell labelled with its source.

    Cell ``i`` of the right panel holds patch ``perm[i]`` of the left one.
    """
    shuffled = shuffle_patches(image, patch_size, perm)
    # Text of 11 pt: on a 390 px phone, which shows the figure at about half its width, 8 CSS px.
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(MAX_WIDTH, 3.75), layout="constrained")
    draw_patch_grid(ax_a, image, patch_size, fontsize=11)
    draw_patch_grid(ax_b, shuffled, patch_size, labels=perm.tolist(), fontsize=11)
    ax_a.set_title("image: patch i in cell i", fontsize=11)
    ax_b.set_title("shuffled: cell i holds patch perm[i]", fontsize=11)
    return fig


def _token_matrix(
    ax: Axes, data: Tensor, title: str, ids: list[int], cmap: str, lim: float
) -> AxesImage:
    """``data`` ``(N, C)`` as a heatmap, its rows labelled with the token each one holds."""
    image = ax.imshow(data.numpy(), cmap=cmap, vmin=0 if cmap == "Greys" else -lim, vmax=lim)
    ax.set_title(title, fontsize=SMALL)
    ax.set_yticks(range(len(ids)), [str(i) for i in ids])
    ax.set_ylabel("token", fontsize=SMALL)
    ax.set_xlabel("channel", fontsize=SMALL)
    ax.tick_params(labelsize=SMALL)
    return image


def _colorbar(fig: SubFigure, image: AxesImage, ax: Axes) -> None:
    bar = fig.colorbar(image, ax=ax, shrink=0.9)
    bar.ax.tick_params(labelsize=SMALL)


def plot_permutation_demo(tokens: Tensor, checks: Mapping[str, PermutationCheck]) -> Figure:
    """Both sides of ``f(x[:, perm]) == f(x)[:, perm]`` for each module, and their difference.

    ``tokens``: ``(B, N, C)``; the first image (batch index 0) is drawn. Top row: the
    permutation matrix, ``x`` and ``x[:, perm]``. Then one row per entry of ``checks``, titled
    with its name: ``f(x[:, perm])``, ``f(x)[:, perm]`` and ``|difference|`` on one colour scale
    shared by every row; the row's title gives the check's verdict. Each matrix row is labelled
    with the token it holds.
    """
    first = next(iter(checks.values()))
    perm = first.perm
    n = tokens.shape[1]
    fig = plt.figure(figsize=(MAX_WIDTH, 2.5 * (1 + len(checks))), layout="constrained")
    rows = cast(np.ndarray, fig.subfigures(1 + len(checks), 1, hspace=0.02))  # one per row
    matrix = torch.zeros(n, n)
    matrix[torch.arange(n), perm] = 1.0  # row i picks token perm[i]: (P x)[i] = x[perm[i]]
    lim = float(tokens[0].abs().max())
    axes = rows[0].subplots(1, 3)
    rows[0].suptitle("input: the tokens x and the shuffle perm", fontsize=SMALL + 1, weight="bold")
    _token_matrix(
        axes[0],
        matrix,
        "permutation P:\nrow i has a 1\nin column perm[i]",
        list(range(n)),
        "Greys",
        1.0,
    )
    axes[0].set_xlabel("column", fontsize=SMALL)
    axes[0].set_ylabel("row", fontsize=SMALL)
    _token_matrix(
        axes[1], tokens[0], "tokens x\n(one row per token)", list(range(n)), "coolwarm", lim
    )
    image = _token_matrix(
        axes[2], tokens[0, perm], "shuffled\nx[:, perm] = P x", perm.tolist(), "coolwarm", lim
    )
    _colorbar(rows[0], image, axes[2])
    diff_max = max(max(c.max_abs_diff for c in checks.values()), 1e-6)
    for row, (name, check) in zip(rows[1:], checks.items(), strict=True):
        axes = row.subplots(1, 3)
        # The verdict goes in the row's title: in the narrow right panel a multi-line title ran
        # into the colour bar.
        row.suptitle(f"{name}\n{check.summary()}", fontsize=SMALL + 1, weight="bold")
        lim = float(max(check.output_of_shuffled.abs().max(), check.shuffled_output.abs().max()))
        ids = perm.tolist()
        _token_matrix(
            axes[0],
            check.output_of_shuffled[0],
            "f(x[:, perm])\nshuffle, then attend",
            ids,
            "coolwarm",
            lim,
        )
        _token_matrix(
            axes[1],
            check.shuffled_output[0],
            "f(x)[:, perm]\nattend, then shuffle",
            ids,
            "coolwarm",
            lim,
        )
        diff = (check.output_of_shuffled[0] - check.shuffled_output[0]).abs()
        # One scale for every row, so float rounding (~1e-7) stays black next to a real gap.
        image = axes[2].imshow(diff.numpy(), cmap="magma", vmin=0, vmax=diff_max)
        axes[2].set_title("|difference|", fontsize=SMALL)
        axes[2].set_yticks(range(n), [str(i) for i in ids])
        axes[2].set_xlabel("channel", fontsize=SMALL)
        axes[2].tick_params(labelsize=SMALL)
        _colorbar(row, image, axes[2])
    return fig
