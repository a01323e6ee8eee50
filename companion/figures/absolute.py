"""Figures for chapter 1, the absolute position embedding. Each function returns a Figure.

Figures are created with ``pyplot`` so that Jupyter shows them; a notebook cell that draws one
ends with ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from torch import Tensor

from companion._checks import to_pair
from companion.absolute import cosine_similarity_map, patchify
from companion.experiments.learned_embedding import PermutationTest
from companion.figures.text_size import SMALL, legible_ticks

#: The widest figure the book shows at full size, in inches. Its text column is 688 px and inline
#: figures render at 100 dpi with 0.1 in of padding on each side, so a figure wider than ~6.7 in
#: is scaled down, and its text with it (below the 9 pt every figure keeps as its smallest font).
MAX_WIDTH = 6.7


def image_to_numpy(image: Tensor) -> np.ndarray:
    """``(3, H, W)`` float in ``[0, 1]`` -> ``(H, W, 3)`` array for ``imshow``."""
    if image.dim() != 3 or image.shape[0] != 3:
        raise ValueError(f"image must have shape (3, H, W), got {tuple(image.shape)}")
    return image.detach().permute(1, 2, 0).clamp(0, 1).numpy()


def draw_patch_grid(
    ax: Axes,
    image: Tensor,
    patch_size: int | tuple[int, int],
    labels: Sequence[int] | None = None,
    label_every: bool = True,
    fontsize: float = 9,
) -> None:
    """Show ``image`` ``(3, H, W)`` on ``ax`` with the patch borders and patch numbers.

    ``labels[i]`` is written in cell ``i`` (row-major); by default cell ``i`` is labelled ``i``.
    With ``label_every=False`` only every other cell of the first row and of the first column,
    and the last cell, are labelled: enough to read the row-major order on a large grid, with
    room between the labels. ``fontsize``: the labels' size in points.
    """
    ph, pw = to_pair("patch_size", patch_size)
    height, width = image.shape[1:]
    h, w = height // ph, width // pw
    ax.imshow(image_to_numpy(image))
    for r in range(1, h):
        ax.axhline(r * ph - 0.5, color="white", lw=0.8)
    for c in range(1, w):
        ax.axvline(c * pw - 0.5, color="white", lw=0.8)
    labels = list(range(h * w)) if labels is None else list(labels)
    for i, label in enumerate(labels):
        r, c = divmod(i, w)
        if label_every or (r == 0 and c % 2 == 0) or (c == 0 and r % 2 == 0) or i == h * w - 1:
            # On a large grid a label can be wider than its cell: align the ones at the image's
            # left and right edges to that edge so that they stay inside the picture.
            x, ha = c * pw + pw / 2 - 0.5, "center"
            if not label_every and c == 0:
                x, ha = c * pw, "left"
            elif not label_every and c == w - 1:
                x, ha = (c + 1) * pw - 1, "right"
            ax.text(
                x,
                r * ph + ph / 2 - 0.5,
                str(label),
                ha=ha,
                va="center",
                fontsize=fontsize,
                color="white",
                bbox={"boxstyle": "round,pad=0.15", "fc": "black", "alpha": 0.55, "lw": 0},
            )
    ax.set_xticks([])
    ax.set_yticks([])


def plot_patch_grid(image: Tensor, patch_size: int | tuple[int, int]) -> Figure:
    """The image cut into patches (numbered row-major) and the ``(N, C*ph*pw)`` patch matrix."""
    ph, pw = to_pair("patch_size", patch_size)
    patches = patchify(image.unsqueeze(0), (ph, pw))[0]  # (N, 3*ph*pw)
    h, w = image.shape[1] // ph, image.shape[2] // pw
    fig, (ax_img, ax_mat) = plt.subplots(
        1, 2, figsize=(MAX_WIDTH - 0.1, 4.0), width_ratios=[1, 1.15], layout="constrained"
    )
    draw_patch_grid(ax_img, image, (ph, pw), label_every=h * w <= 64, fontsize=SMALL)
    ax_img.set_title(
        f"{image.shape[1]}x{image.shape[2]} image, {ph}x{pw} patches\n{h}x{w} grid, N = {h * w}",
        fontsize=SMALL,
    )
    mat = ax_mat.imshow(patches.numpy(), aspect="auto", cmap="gray", interpolation="nearest")
    ax_mat.set_title(f"patchify: one row per patch\nshape {tuple(patches.shape)}", fontsize=SMALL)
    ax_mat.set_xlabel(f"value index inside a flattened patch\n(3 x {ph} x {pw})", fontsize=SMALL)
    ax_mat.set_ylabel("patch number i = row * w + column", fontsize=SMALL)
    ax_mat.tick_params(labelsize=SMALL)
    for k, name in enumerate(("R", "G", "B")):
        if k:
            ax_mat.axvline(k * ph * pw - 0.5, color="tab:red", lw=1.5)
        ax_mat.text(
            (k + 0.5) * ph * pw,
            2,
            f"{name} values",
            color="white",
            ha="center",
            va="top",
            fontsize=SMALL,
            bbox={"fc": "tab:red", "lw": 0, "alpha": 0.8},
        )
    bar = fig.colorbar(mat, ax=ax_mat)
    bar.set_label("pixel value", fontsize=SMALL)
    bar.ax.tick_params(labelsize=SMALL)
    return legible_ticks(fig)


def plot_init_histogram(
    values: Tensor, std: float = 0.02, a: float = -2.0, b: float = 2.0
) -> Figure:
    """Histogram of an initialised embedding, with the truncation bounds ``[a, b]`` marked.

    ``trunc_normal_``'s bounds are absolute numbers, so with ``std=0.02`` they lie 100 standard
    deviations out: the top panel shows the whole bounded range (the values form a spike near
    0), the bottom panel zooms in and overlays the normal density.
    """
    flat = values.detach().flatten().double().numpy()
    fig, (ax_far, ax_near) = plt.subplots(2, 1, figsize=(MAX_WIDTH, 5.6), layout="constrained")
    for ax in (ax_far, ax_near):
        ax.tick_params(labelsize=SMALL)
        ax.set_xlabel("value", fontsize=SMALL)
    ax_far.hist(flat, bins=np.linspace(a * 1.1, b * 1.1, 221), color="tab:blue")
    for bound in (a, b):
        ax_far.axvline(bound, color="tab:red", ls="--")
    ax_far.text(b, ax_far.get_ylim()[1] * 0.9, f" b = {b:g}", color="tab:red", fontsize=SMALL)
    ax_far.text(
        a, ax_far.get_ylim()[1] * 0.9, f"a = {a:g} ", color="tab:red", fontsize=SMALL, ha="right"
    )
    ax_far.set_title(
        f"truncation bounds [{a:g}, {b:g}] are {b / std:.0f} std away", fontsize=SMALL + 1
    )
    ax_far.set_ylabel("count", fontsize=SMALL)
    edges = np.linspace(-5 * std, 5 * std, 81)
    ax_near.hist(flat, bins=edges, density=True, color="tab:blue", alpha=0.7, label="values")
    xs = np.linspace(-5 * std, 5 * std, 400)
    pdf = np.exp(-0.5 * (xs / std) ** 2) / (std * np.sqrt(2 * np.pi))
    ax_near.plot(xs, pdf, color="black", lw=1.5, label=f"normal pdf, std = {std:g}")
    for k in (-2, 2):
        ax_near.axvline(k * std, color="tab:gray", ls=":")
    ax_near.text(2 * std, pdf.max() * 0.95, " ±2 std", color="tab:gray", fontsize=SMALL)
    ax_near.set_title(
        f"zoom on ±5 std: {flat.size:,} values, sample std {flat.std():.4f}", fontsize=SMALL + 1
    )
    ax_near.set_ylabel("density", fontsize=SMALL)
    ax_near.legend(fontsize=SMALL, loc="upper left")
    return legible_ticks(fig)


def _annotated_matrix(ax: Axes, mat: Tensor, title: str, vmin: float, vmax: float) -> None:
    data = mat.detach().numpy()
    ax.imshow(data, cmap="coolwarm", vmin=vmin, vmax=vmax)
    for (r, c), v in np.ndenumerate(data):
        ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=SMALL)
    ax.set_title(title, fontsize=SMALL)
    ax.set_xticks(range(data.shape[1]))
    ax.set_yticks(range(data.shape[0]))
    ax.set_xlabel("channel d", fontsize=SMALL)
    ax.set_ylabel("token n", fontsize=SMALL)
    ax.tick_params(labelsize=SMALL)


def plot_broadcast_add(x: Tensor, pos_embed: Tensor) -> Figure:
    """``x`` ``(B, N, D)`` + ``pos_embed`` ``(1, N, D)``, one row per image, values written in.

    The same ``pos_embed[0]`` appears in every row: broadcasting repeats it over the batch.
    """
    if x.dim() != 3 or pos_embed.dim() != 3 or pos_embed.shape[0] != 1:
        raise ValueError(
            f"x must be (B, N, D) and pos_embed (1, N, D), got {tuple(x.shape)} and "
            f"{tuple(pos_embed.shape)}"
        )
    out = x + pos_embed
    lim = float(torch.cat([x.flatten(), pos_embed.flatten(), out.flatten()]).abs().max())
    b, n, d = x.shape
    # Cells of ~0.5 in hold a value like -1.23; wide tensors get narrower cells to stay on the page.
    cell = min(0.55, (MAX_WIDTH - 2.1) / (3 * d))
    fig, axes = plt.subplots(
        b,
        3,
        figsize=(MAX_WIDTH, (n * cell + 0.9) * b + 0.6),
        layout="constrained",
        squeeze=False,
    )
    for i in range(b):
        _annotated_matrix(axes[i, 0], x[i], f"x[{i}]  ({n}, {d})", -lim, lim)
        _annotated_matrix(axes[i, 1], pos_embed[0], f"+ pos_embed[0]  ({n}, {d})", -lim, lim)
        _annotated_matrix(axes[i, 2], out[i], f"= (x + pos_embed)[{i}]", -lim, lim)
    fig.suptitle(
        f"x {tuple(x.shape)} + pos_embed {tuple(pos_embed.shape)} -> {tuple(out.shape)}:\n"
        "the same table is added to every image",
        fontsize=SMALL + 1,
    )
    return legible_ticks(fig)


def plot_similarity_maps(
    embeddings: Mapping[str, Tensor],
    grid_size: int | tuple[int, int],
    queries: Sequence[tuple[int, int]],
) -> Figure:
    """Cosine similarity of one cell's embedding to every cell, for each embedding and query.

    ``embeddings``: name -> ``(N, D)`` or ``(1, N, D)`` (patch rows only). One row per
    embedding, one column per query cell ``(row, column)``, which is marked with a cross.
    """
    h, w = to_pair("grid_size", grid_size)
    # Room for the row names on the left and the colour bars on the right; the maps share the rest.
    panel = min(2.4, (MAX_WIDTH - 1.4) / len(queries))
    fig, axes = plt.subplots(
        len(embeddings),
        len(queries),
        figsize=(panel * len(queries) + 1.4, (panel + 0.35) * len(embeddings)),
        layout="constrained",
        squeeze=False,
    )
    for row, (name, table) in enumerate(embeddings.items()):
        sim = cosine_similarity_map(table, (h, w))
        # One colour scale per embedding, from its lowest similarity to 1: sin-cos maps span a
        # narrow range (0.6 to 1 for D = 768), which a fixed [-1, 1] scale would flatten.
        low = float(min(sim[qr, qc].min() for qr, qc in queries))
        for col, (qr, qc) in enumerate(queries):
            ax = axes[row, col]
            im = ax.imshow(sim[qr, qc].numpy(), cmap="viridis", vmin=low, vmax=1)
            ax.plot(qc, qr, "x", color="red", ms=8, mew=2)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"query cell ({qr}, {qc})", fontsize=SMALL)
            if col == 0:
                ax.set_ylabel(name, fontsize=SMALL)
        bar = fig.colorbar(im, ax=axes[row, :].tolist(), shrink=0.9)
        bar.set_label("cosine similarity", fontsize=SMALL)
        bar.ax.tick_params(labelsize=SMALL)
    return legible_ticks(fig)


def similarity_mosaic(sim: np.ndarray, gap: int = 1) -> np.ndarray:
    """``(h, w, h, w)`` similarity maps -> one image: tile ``(r, c)`` is map ``sim[r, c]``, tiles
    placed on the grid with ``gap`` empty (NaN, drawn blank) pixels between them."""
    h, w = sim.shape[:2]
    mosaic = np.full((h * (h + gap) - gap, w * (w + gap) - gap), np.nan)
    for r in range(h):
        for c in range(w):
            mosaic[r * (h + gap) : r * (h + gap) + h, c * (w + gap) : c * (w + gap) + w] = sim[r, c]
    return mosaic


def plot_similarity_mosaic(
    embeddings: Mapping[str, Tensor], grid_size: int | tuple[int, int]
) -> Figure:
    """For each embedding, all ``h*w`` similarity maps tiled on the grid (the ViT-paper view).

    Tile ``(r, c)`` is the ``h x w`` map of cosine similarities between cell ``(r, c)`` and
    every cell; thin gaps separate the tiles. Each panel has its own colour scale, from its
    lowest similarity to 1. The panels are stacked, so that each is wide enough to show the
    pattern inside its tiles.
    """
    h, w = to_pair("grid_size", grid_size)
    fig, axes = plt.subplots(
        len(embeddings),
        1,
        figsize=(5.6, 4.7 * len(embeddings)),
        layout="constrained",
        squeeze=False,
    )
    for ax, (name, table) in zip(axes[:, 0], embeddings.items(), strict=True):
        sim = cosine_similarity_map(table, (h, w)).numpy()
        gap = 1
        im = ax.imshow(similarity_mosaic(sim, gap), cmap="viridis", vmin=float(sim.min()), vmax=1)
        bar = fig.colorbar(im, ax=ax, shrink=0.8)
        bar.set_label("cosine similarity", fontsize=9)
        bar.ax.tick_params(labelsize=9)
        ax.set_title(name, fontsize=11)
        ax.set_xticks([(c + 0.5) * (w + gap) - 1 for c in range(w)], [str(c) for c in range(w)])
        ax.set_yticks([(r + 0.5) * (h + gap) - 1 for r in range(h)], [str(r) for r in range(h)])
        ax.tick_params(labelsize=9)
        ax.set_xlabel("query column", fontsize=10)
        ax.set_ylabel("query row", fontsize=10)
    return fig


def plot_resampled_channel(
    before: Tensor,
    after: Tensor,
    old_grid: int | tuple[int, int],
    new_grid: int | tuple[int, int],
    channel: int,
    num_prefix_tokens: int = 0,
) -> Figure:
    """One channel of a position embedding on its grid, before and after resampling.

    ``before`` ``(1, P + h*w, D)``, ``after`` ``(1, P + h'*w', D)``; both panels share one
    colour scale so that values can be compared.
    """
    oh, ow = to_pair("old_grid", old_grid)
    nh, nw = to_pair("new_grid", new_grid)
    p = num_prefix_tokens
    old = before[0, p:, channel].detach().reshape(oh, ow).numpy()
    new = after[0, p:, channel].detach().reshape(nh, nw).numpy()
    lim = float(max(np.abs(old).max(), np.abs(new).max()))
    fig, axes = plt.subplots(1, 2, figsize=(MAX_WIDTH, 3.3), layout="constrained")
    for ax, data, (gh, gw) in zip(axes, (old, new), ((oh, ow), (nh, nw)), strict=True):
        im = ax.imshow(data, cmap="coolwarm", vmin=-lim, vmax=lim)
        ax.set_title(f"channel {channel} on the {gh}x{gw} grid", fontsize=SMALL)
        ax.set_xlabel("column", fontsize=SMALL)
        ax.set_ylabel("row", fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(integer=True))  # rows and columns are whole numbers
    bar = fig.colorbar(im, ax=axes.tolist(), shrink=0.85)
    bar.set_label("value", fontsize=SMALL)
    bar.ax.tick_params(labelsize=SMALL)
    return legible_ticks(fig)


def plot_class_token_orders(num_patches: int = 4) -> Figure:
    """Schematic of the two class-token orders: which rows of the sequence get a position."""
    fig, axes = plt.subplots(
        1, 2, figsize=(MAX_WIDTH, 0.5 * (num_patches + 1) + 1.3), layout="constrained"
    )
    specs = {
        'ViT: order="concat-then-add"': ("pos[0]", [f"pos[{i + 1}]" for i in range(num_patches)]),
        'DeiT-III: order="add-then-concat"': ("(none)", [f"pos[{i}]" for i in range(num_patches)]),
    }
    for ax, (title, (cls_pos, patch_pos)) in zip(axes, specs.items(), strict=True):
        rows = [("cls_token", cls_pos)] + [(f"patch {i}", patch_pos[i]) for i in range(num_patches)]
        for y, (token, pos) in enumerate(rows):
            colour = "tab:orange" if y == 0 else "tab:blue"
            ax.add_patch(plt.Rectangle((0, -y - 0.4), 1.6, 0.8, fc=colour, alpha=0.35))
            ax.text(0.8, -y, token, ha="center", va="center", fontsize=SMALL)
            ax.text(1.95, -y, "+", ha="center", va="center", fontsize=12)
            faded = pos == "(none)"
            ax.add_patch(
                plt.Rectangle(
                    (2.3, -y - 0.4), 1.6, 0.8, fc="tab:green", alpha=0.1 if faded else 0.35
                )
            )
            ax.text(
                3.1,
                -y,
                pos,
                ha="center",
                va="center",
                fontsize=SMALL,
                color="gray" if faded else "black",
            )
        n_pos = num_patches + (0 if cls_pos == "(none)" else 1)
        ax.set_title(f"{title}\npos_embed has shape (1, {n_pos}, D)", fontsize=SMALL)
        ax.set_xlim(-0.1, 4.0)
        ax.set_ylim(-num_patches - 0.6, 0.6)
        ax.axis("off")
    return legible_ticks(fig)


def plot_figure7(
    embeddings: Mapping[str, Tensor], grid_size: int | tuple[int, int], gap: int = 1
) -> Figure:
    """Position-embedding similarity drawn as the ViT paper's Figure 7 (centre) draws it.

    ``embeddings``: name -> ``(N, D)`` or ``(1, N, D)`` patch rows, ``N = h * w``, one panel each,
    side by side. In a panel, the tile at input patch row ``r``, column ``c`` is the ``h x w``
    map of cosine similarities between the embedding of patch ``(r, c)`` and those of all
    patches; the tiles sit on the patch grid, ``gap`` blank pixels apart. Every panel uses one
    colour scale, -1 to 1 (the paper's), so that panels compare: an embedding with no layout
    shows one bright pixel per tile and noise elsewhere.
    """
    h, w = to_pair("grid_size", grid_size)
    if not embeddings:
        raise ValueError("embeddings must name at least one embedding, got none")
    n = len(embeddings)
    panel = min(3.4, (MAX_WIDTH - 0.9) / n)
    fig, axes = plt.subplots(
        1, n, figsize=(panel * n + 0.9, panel + 0.8), layout="constrained", squeeze=False
    )
    im = None
    for ax, (name, table) in zip(axes[0], embeddings.items(), strict=True):
        sim = cosine_similarity_map(table, (h, w)).numpy()
        im = ax.imshow(similarity_mosaic(sim, gap), cmap="viridis", vmin=-1, vmax=1)
        ax.set_title(name, fontsize=SMALL)
        step = max(1, (max(h, w) + 7) // 8)  # at most about 8 labelled ticks per axis
        ax.set_xticks(
            [(c + 0.5) * (w + gap) - 1 for c in range(0, w, step)],
            [str(c) for c in range(0, w, step)],
        )
        ax.set_yticks(
            [(r + 0.5) * (h + gap) - 1 for r in range(0, h, step)],
            [str(r) for r in range(0, h, step)],
        )
        ax.tick_params(labelsize=SMALL, length=0)
        ax.set_xlabel("Input patch column", fontsize=SMALL)
        ax.set_ylabel("Input patch row", fontsize=SMALL)
        for side in ax.spines.values():
            side.set_visible(False)
    assert im is not None
    bar = fig.colorbar(im, ax=axes[0].tolist(), shrink=0.85)
    bar.set_label("Cosine similarity", fontsize=SMALL)
    bar.ax.tick_params(labelsize=SMALL)
    fig.suptitle("Position embedding similarity", fontsize=SMALL + 1)
    return legible_ticks(fig)


def plot_permutation_tests(tests: Sequence[PermutationTest], columns: int = 3) -> Figure:
    """Each test's null (a histogram of the statistic over the shuffles) and, as a red line, the
    value observed on the embedding's real layout; the title gives p and which side was tested.
    What grey and red mean is for the figure's caption to say.

    ``tests``: :class:`companion.experiments.learned_embedding.PermutationTest`, one panel each,
    ``columns`` panels a row.
    """
    if not tests:
        raise ValueError("tests must hold at least one PermutationTest, got none")
    columns = min(columns, len(tests))
    rows = -(-len(tests) // columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(MAX_WIDTH, 2.1 * rows + 0.2), layout="constrained", squeeze=False
    )
    side = {"two-sided": "two-sided", "greater": "one-sided >", "less": "one-sided <"}
    for ax, test in zip(axes.flat, tests, strict=False):
        ax.hist(test.null.numpy(), bins=30, color="0.65")
        ax.axvline(test.observed, color="tab:red", lw=2)
        ax.set_title(
            f"{test.statistic}\np = {test.p_value:.3f} ({side[test.alternative]})", fontsize=SMALL
        )
        ax.tick_params(labelsize=SMALL)
        ax.set_yticks([])
        ax.xaxis.set_major_locator(MaxNLocator(4))
    for ax in list(axes.flat)[len(tests) :]:
        ax.set_visible(False)
    return legible_ticks(fig)
