"""Figures for chapter 0: what self-attention without position sees. Each returns a Figure."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.cbook as cbook
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor

from companion._checks import check_positive_int
from companion.figures.absolute import draw_patch_grid
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
    fig, (ax_a, ax_b) = plt.subplots(1, 2, figsize=(10, 5.2), layout="constrained")
    draw_patch_grid(ax_a, image, patch_size)
    draw_patch_grid(ax_b, shuffled, patch_size, labels=perm.tolist())
    ax_a.set_title("image: patch i in cell i", fontsize=11)
    ax_b.set_title("shuffled: cell i holds patch perm[i]", fontsize=11)
    return fig


def plot_permutation_demo(tokens: Tensor, checks: Mapping[str, PermutationCheck]) -> Figure:
    """Both sides of ``f(x[:, perm]) == f(x)[:, perm]`` for each module, and their difference.

    ``tokens``: ``(B, N, C)``; the first image (batch index 0) is drawn. Top row: the
    permutation matrix, ``x`` and ``x[:, perm]``. Then one row per entry of ``checks``:
    ``f(x[:, perm])``, ``f(x)[:, perm]`` and ``|difference|`` on its own colour scale.
    """
    first = next(iter(checks.values()))
    perm = first.perm
    n = tokens.shape[1]
    fig, axes = plt.subplots(
        1 + len(checks), 3, figsize=(12, 2.9 * (1 + len(checks))), layout="constrained"
    )
    matrix = torch.zeros(n, n)
    matrix[torch.arange(n), perm] = 1.0  # row i picks token perm[i]: (P x)[i] = x[perm[i]]
    top = [
        (matrix, "permutation P: row i has a 1 in column perm[i]", range(n), "Greys"),
        (tokens[0], "tokens x (one row per token)", range(n), "coolwarm"),
        (tokens[0, perm], "shuffled x[:, perm] = P x", perm.tolist(), "coolwarm"),
    ]
    for ax, (data, title, ids, cmap) in zip(axes[0], top, strict=True):
        lim = float(data.abs().max())
        ax.imshow(data.numpy(), cmap=cmap, vmin=-lim if cmap != "Greys" else 0, vmax=lim)
        ax.set_title(title, fontsize=10)
        ax.set_yticks(range(n), [f"token {i}" for i in ids])
        ax.tick_params(labelsize=9)
    diff_max = max(max(c.max_abs_diff for c in checks.values()), 1e-6)
    for row, (name, check) in enumerate(checks.items(), start=1):
        lim = float(max(check.output_of_shuffled.abs().max(), check.shuffled_output.abs().max()))
        panels = (
            (check.output_of_shuffled[0], f"{name}\nf(x[:, perm]): shuffle, then attend"),
            (check.shuffled_output[0], f"{name}\nf(x)[:, perm]: attend, then shuffle"),
        )
        for ax, (data, title) in zip(axes[row, :2], panels, strict=True):
            ax.imshow(data.numpy(), cmap="coolwarm", vmin=-lim, vmax=lim)
            ax.set_title(title, fontsize=10)
            ax.set_yticks(range(n), [f"token {i}" for i in perm.tolist()])
            ax.tick_params(labelsize=9)
        diff = (check.output_of_shuffled[0] - check.shuffled_output[0]).abs()
        # One scale for every row, so float rounding (~1e-7) stays black next to a real gap.
        im = axes[row, 2].imshow(diff.numpy(), cmap="magma", vmin=0, vmax=diff_max)
        axes[row, 2].set_title(f"|difference|\n{check.summary()}", fontsize=10)
        axes[row, 2].tick_params(labelsize=9)
        fig.colorbar(im, ax=axes[row, 2], shrink=0.9)
    for ax in axes[:, :].flat:
        ax.set_xlabel("channel", fontsize=9)
    return fig
