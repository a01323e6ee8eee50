"""Figures for chapter 6: resized bias tables, log-spaced coordinates, 2-D RoPE, and the
resolution-transfer experiment (its images and its results).

Every ``plot_*`` function returns a new matplotlib Figure no wider than the book's column, with no
text smaller than 9 pt. ``bump_table`` makes a hand-built table whose resizing is easy to follow;
it is an illustration, not a learned bias.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor

from companion._checks import check_positive_int, to_pair
from companion.cpb import log_space, normalise_offsets
from companion.data import make_dataset
from companion.data.tasks import PATCH
from companion.experiments.resolution_transfer import (
    TRAIN_SIZE,
    WINDOW_GROWN,
    WINDOW_KEPT,
    grown_condition,
)
from companion.figures.text_size import SMALL, legible_ticks
from companion.relative import WindowSize
from companion.resize import ResizeMethod, geometric_positions, resize_bias_table, table_as_images
from companion.rope import WindowRoPE, equal_content_logits, window_positions

#: The book's text column, in inches.
WIDTH = 6.6
#: Every text's size: the smallest legible on a phone at WIDTH (companion.figures.text_size).
FONT = SMALL


def bump_table(
    window_size: WindowSize, peak: tuple[int, int] = (0, 2), width: float = 0.7
) -> Tensor:
    """A two-head illustrative table ``((2Wh-1)(2Ww-1), 2)`` on a window's offset grid.

    Head 0 prefers near keys: ``-0.5 · distance``. Head 1 prefers one offset: a bump
    ``exp(-|offset - peak|² / (2 width²))`` at ``peak = (dy, dx)`` (by default the key two columns
    to the left of the query). Where that bump goes when the table is resized is the question.
    """
    wh, ww = to_pair("window_size", window_size)
    dy = torch.arange(-(wh - 1), wh, dtype=torch.float32)[:, None]
    dx = torch.arange(-(ww - 1), ww, dtype=torch.float32)[None, :]
    near = -0.5 * torch.sqrt(dy**2 + dx**2)
    bump = torch.exp(-((dy - peak[0]) ** 2 + (dx - peak[1]) ** 2) / (2 * width**2))
    return torch.stack((near.flatten(), bump.flatten()), dim=1)


def _draw_offsets(ax: Axes, image: Tensor, window: tuple[int, int], limits, title: str) -> None:
    """One table picture on axes in offset units, so grids of different windows line up."""
    wh, ww = window
    extent = (-(ww - 1) - 0.5, ww - 1 + 0.5, wh - 1 + 0.5, -(wh - 1) - 0.5)
    ax.imshow(image.numpy(), extent=extent, cmap="viridis", vmin=limits[0], vmax=limits[1])
    ax.set_title(title, fontsize=FONT)
    ax.tick_params(labelsize=FONT)


def plot_resized_tables(
    table: Tensor,
    old_window: WindowSize,
    new_window: WindowSize,
    heads: Sequence[int] | None = None,
    title: str = "",
) -> Figure:
    """Rows: heads. Columns: the old table, bicubic and geometric resizing to ``new_window``.

    All panels use offset units (``dx`` across, ``dy`` down) and share one axis range, the new
    window's, so the old grid sits in the middle and the reader sees where each value went.
    """
    old, new = to_pair("old_window", old_window), to_pair("new_window", new_window)
    pictures = {
        "old": table_as_images(table.detach(), old),
        "bicubic": table_as_images(resize_bias_table(table, old, new, "bicubic"), new),
        "geometric": table_as_images(resize_bias_table(table, old, new, "geometric"), new),
    }
    heads = list(range(table.shape[1])) if heads is None else list(heads)
    fig, axes = plt.subplots(
        len(heads), 3, figsize=(WIDTH, 2.3 * len(heads) + 0.5), squeeze=False, layout="constrained"
    )
    reach = max(new[1], old[1]) - 0.5, max(new[0], old[0]) - 0.5
    for row, h in enumerate(heads):
        limits = (float(pictures["old"][h].min()), float(pictures["old"][h].max()))
        for col, (name, images) in enumerate(pictures.items()):
            window = old if name == "old" else new
            label = f"{window[0]}×{window[1]}" + ("" if name == "old" else f", {name}")
            _draw_offsets(axes[row, col], images[h], window, limits, label)
            axes[row, col].set_xlim(-reach[0], reach[0])
            axes[row, col].set_ylim(reach[1], -reach[1])
        # The head names its row, beside the axis: in the titles it made them wider than a panel.
        axes[row, 0].set_ylabel(f"head {h}\nrow offset dy", fontsize=FONT)
    for ax in axes[-1]:
        ax.set_xlabel("column offset dx", fontsize=FONT)
    if title:
        fig.suptitle(title, fontsize=FONT + 1)
    return legible_ticks(fig)


def plot_offset_placement(old_window: int, new_window: int) -> Figure:
    """Where each old offset ``0..W-1`` lands on the new axis: bicubic stretches all of them by
    ``(2W'-1)/(2W-1)``; geometric keeps offset 1 at 1 and spreads the long ones."""
    old, new = (
        check_positive_int("old_window", old_window),
        check_positive_int("new_window", new_window),
    )
    offsets = np.arange(old)
    # align_corners=False maps old pixel centres k to k · (2W'-1)/(2W-1) around the centre.
    stretched = offsets * (2 * new - 1) / (2 * old - 1)
    geometric = geometric_positions(2 * old - 1, 2 * new - 1)[old - 1 :].numpy()
    fig, ax = plt.subplots(figsize=(WIDTH, 2.2), layout="constrained")
    for y, xs in enumerate((geometric, stretched)):
        ax.scatter(xs, np.full_like(xs, y, dtype=float), s=40, zorder=3)
        for k, x in enumerate(xs):
            ax.annotate(
                str(k),
                (x, y),
                textcoords="offset points",
                xytext=(0, 7),
                ha="center",
                fontsize=FONT,
            )
    ax.set_yticks([0, 1], ["geometric", "bicubic"], fontsize=FONT)
    ax.set_xticks(range(new), [str(t) for t in range(new)], fontsize=FONT)
    ax.set_xlim(-0.5, new - 0.5)
    ax.set_ylim(-0.6, 1.6)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel(
        f"offset on the new {new}-wide window's axis (old offsets 0..{old - 1} labelled)",
        fontsize=FONT,
    )
    return legible_ticks(fig)


def plot_log_spacing(window: int, larger_window: int) -> Figure:
    """The coordinate each offset gets: linear ``8·d/(W-1)`` vs log-spaced, for the training
    window and for a larger one normalised by the training window (its new offsets lie beyond)."""
    w, big = (
        check_positive_int("window", window),
        check_positive_int("larger_window", larger_window),
    )
    fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 2.6), layout="constrained")
    for ax, side in zip(axes, (w, big), strict=True):
        d = torch.arange(-(side - 1), side, dtype=torch.float32)
        normed = normalise_offsets(torch.stack((d, d), -1), w)[:, 0]
        ax.plot(d, normed / 8, "o", ms=3, label="linear d/(W-1)")
        ax.plot(d, log_space(normed), "o", ms=3, label="log-spaced")
        ax.axvspan(-(w - 1), w - 1, color="0.9", zorder=0)
        ax.set_title(f"window {side} (normalised by {w})", fontsize=FONT)
        ax.set_xlabel("offset d", fontsize=FONT)
        ax.tick_params(labelsize=FONT)
    axes[0].set_ylabel("MLP input", fontsize=FONT)
    axes[0].legend(fontsize=FONT, loc="upper left")
    return legible_ticks(fig)


def plot_table_image(table: Tensor, window_size: WindowSize, title: str) -> Figure:
    """Each head's column of a ``((2Wh-1)(2Ww-1), H)`` table (or a CPB's output) as a picture."""
    window = to_pair("window_size", window_size)
    images = table_as_images(table.detach(), window)
    heads = images.shape[0]
    fig, axes = plt.subplots(
        1, heads, figsize=(WIDTH, WIDTH / heads + 0.6), squeeze=False, layout="constrained"
    )
    for h, ax in enumerate(axes[0]):
        limits = (float(images[h].min()), float(images[h].max()))
        _draw_offsets(ax, images[h], window, limits, f"head {h}")
        ax.set_xlabel("dx", fontsize=FONT)
    axes[0, 0].set_ylabel("dy", fontsize=FONT)
    fig.suptitle(title, fontsize=FONT + 1)
    return legible_ticks(fig)


def plot_rope_logits(ropes: dict[str, WindowRoPE], queries: Sequence[int], seed: int = 0) -> Figure:
    """Rows: RoPE variants; columns: queries. Each panel: head 0's equal-content logits of one
    query laid out on the window, the query outlined. Moving the query moves the pattern with it."""
    fig, axes = plt.subplots(
        len(ropes),
        len(queries),
        figsize=(WIDTH, 2.3 * len(ropes) + 0.3),
        squeeze=False,
        layout="constrained",
    )
    for row, (name, rope) in enumerate(ropes.items()):
        logits = equal_content_logits(rope, seed)[0]
        wh, ww = rope.window_size
        limits = (float(logits.min()), float(logits.max()))
        positions = window_positions(rope.window_size).long()
        for col, q in enumerate(queries):
            ax = axes[row, col]
            ax.imshow(
                logits[q].view(wh, ww).numpy(), cmap="viridis", vmin=limits[0], vmax=limits[1]
            )
            y, x = positions[q].tolist()
            ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, ec="red", lw=2))
            ax.set_title(f"{name}, query ({y}, {x})", fontsize=FONT)
            ax.set_xticks([])
            ax.set_yticks([])
    return legible_ticks(fig)


def resize_figure(old: int, new: int, method: ResizeMethod, head: int) -> Figure:
    """The explorer's figure: ``bump_table(old)``'s ``head`` before and after resizing."""
    table = bump_table(old)
    resized = resize_bias_table(table, old, new, method)
    # A bare Figure, not pyplot's: the explorer renders it itself, a notebook must not show it too.
    fig = Figure(figsize=(WIDTH, 3.2), layout="constrained")
    axes = fig.subplots(1, 2)
    limits = (float(table[:, head].min()), float(table[:, head].max()))
    reach = max(old, new) - 0.5
    for ax, (t, w, label) in zip(
        axes, ((table, old, f"{old}×{old}"), (resized, new, f"{new}×{new}, {method}")), strict=True
    ):
        _draw_offsets(ax, table_as_images(t, w)[head], (w, w), limits, f"head {head}: {label}")
        ax.set_xlim(-reach, reach)
        ax.set_ylim(reach, -reach)
        ax.set_xlabel("column offset dx", fontsize=FONT)
    axes[0].set_ylabel("row offset dy", fontsize=FONT)
    return legible_ticks(fig)


#: Per-seed columns of :func:`plot_moved_seeds`: (label, condition or None for the reference,
#: metric, marker, colour).
_SEED_MARKS = (
    ("trained at 32 px", "trained", "acc", "s", "0.55"),
    ("window kept", WINDOW_KEPT, "acc", "o", "tab:blue"),
    ("kept, fine-tuned", WINDOW_KEPT, "acc_finetuned", "o", "tab:green"),
    ("window grown", WINDOW_GROWN, "acc", "^", "tab:orange"),
    ("grown, fine-tuned", WINDOW_GROWN, "acc_finetuned", "^", "tab:red"),
    ("trained at the new size", None, "acc", "D", "black"),
)


def _seed_values(
    rows: Sequence[dict], reference: dict | None, dataset: str, pos: str, rendering: str,
    size: int, condition: str | None, metric: str,
) -> list[float]:  # fmt: skip
    """Each seed's accuracy in one column of :func:`plot_moved_seeds`."""
    if condition is None:
        runs = reference["runs"] if reference is not None else []
        return [r["final"]["test_acc"] for r in runs if (r["dataset"], r["pos"]) == (dataset, pos)]
    if condition == "trained":
        wanted = (dataset, pos, "scaled", TRAIN_SIZE, "trained")
    else:
        name = grown_condition(pos) if condition == WINDOW_GROWN else condition
        wanted = (dataset, pos, rendering, size, name)
    return [
        r[metric] for r in rows
        if (r["dataset"], r["pos"], r.get("rendering", "scaled"), r["size"], r["condition"])
        == wanted
    ]  # fmt: skip


def plot_moved_seeds(
    rows: Sequence[dict],
    references: dict[str, dict],
    dataset: str,
    renderings: Sequence[str],
    size: int,
    constant: dict[str, float] | None = None,
) -> Figure:
    """One panel per rendering: every seed of every code as a dot, trained at 32 px, moved to
    ``size`` px with the window kept and grown (a table resized geometrically), each as moved and
    after the short fine-tune, and trained at ``size`` px where there is a reference. Dots, not
    means: a cell whose seeds split shows as two clusters. ``constant``: rendering -> the
    constant answer on its test images (a dashed line)."""
    fig, axes = plt.subplots(
        len(renderings), 1, figsize=(WIDTH, 2.5 * len(renderings) + 0.7), sharey=True,
        squeeze=False, constrained_layout=True,
    )  # fmt: skip
    codes = list(dict.fromkeys(r["pos"] for r in rows))
    for j, rendering in enumerate(renderings):
        ax = axes[j, 0]
        for x, pos in enumerate(codes):
            for k, (label, condition, metric, marker, colour) in enumerate(_SEED_MARKS):
                values = _seed_values(rows, references.get(rendering), dataset, pos, rendering,
                                      size, condition, metric)  # fmt: skip
                offset = (k - 2.5) * 0.13
                ax.plot(
                    [x + offset] * len(values), [100 * v for v in values], marker, color=colour,
                    ms=3.5, alpha=0.8, label=label if (x, j) == (0, 0) else None,
                )  # fmt: skip
        if constant is not None:
            ax.axhline(100 * constant[rendering], color="0.4", ls="--", lw=0.8)
        ax.set_xticks(range(len(codes)), codes, fontsize=FONT)
        ax.set_title(f"{dataset}, {rendering} rendering at {size} px", fontsize=FONT)
        ax.set_ylim(0, 102)
        ax.set_ylabel("test accuracy (%)", fontsize=FONT)
        ax.tick_params(labelsize=FONT)
        ax.grid(alpha=0.3, axis="y")
    fig.legend(loc="outside lower center", ncol=3, fontsize=FONT, frameon=False)
    return legible_ticks(fig)


def plot_renderings(
    tasks: Sequence[str],
    sizes: Sequence[int],
    renderings: Sequence[str] = ("scaled",),
    index: int = 0,
    seed: int = 0,
) -> Figure:
    """Test image ``index`` of each task drawn at each size in each rendering
    (``companion.data``'s ``size`` and ``rendering``), with the 4-px patches the small Swin cuts
    it into drawn as a faint grid.

    Rows: tasks; columns: 32 px once (both renderings draw the same image there), then every
    larger size in every rendering. ``scaled`` draws the same scene with more pixels (an object
    grows past its patch); ``world`` keeps every object's 32-px size on a larger canvas.
    """
    columns = [(size, r) for size in sizes for r in (renderings if size != TRAIN_SIZE else ("",))]
    fig, axes = plt.subplots(
        len(tasks), len(columns), figsize=(WIDTH * min(1.0, 0.27 * len(columns)),
                                           2.0 * len(tasks) + 0.2),
        squeeze=False, constrained_layout=True,
    )  # fmt: skip
    for row, task in enumerate(tasks):
        for col, (size, rendering) in enumerate(columns):
            data = make_dataset(
                task, "test", index + 1, seed=seed, size=size, rendering=rendering or "scaled"
            )
            image, label = data[index]
            ax = axes[row, col]
            ax.imshow(image.permute(1, 2, 0).numpy(), interpolation="nearest")
            edges = np.arange(PATCH, size, PATCH) - 0.5
            for edge in edges:
                ax.axhline(edge, color="white", lw=0.3, alpha=0.25)
                ax.axvline(edge, color="white", lw=0.3, alpha=0.25)
            ax.set_xticks([])
            ax.set_yticks([])
            title = f"{size} px" + (f", {rendering}" if rendering else "")
            ax.set_title(f"{title}\n{size // PATCH}x{size // PATCH} patches", fontsize=FONT)
            if col == 0:
                ax.set_ylabel(f"{task}\n{data.classes[int(label)]}", fontsize=FONT)
    return legible_ticks(fig)
