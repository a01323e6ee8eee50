"""Figures of chapter 5 and Appendix A: example images, learning curves, ablation results with
every seed, learned bias tables, the Swin paper's Table 4 as differences."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from companion.bias_table import BiasTable
from companion.data.dataset import ImageClassificationData
from companion.experiments.stats import paired_interval
from companion.figures.absolute import MAX_WIDTH
from companion.figures.relative import text_width
from companion.figures.text_size import SMALL, legible_ticks
from companion.position import Position

#: One colour per position encoding of chapter 5, the same in every figure; any other position
#: takes its window code's (``WindowCode.color``, ``pos_color``).
POS_COLORS = {"none": "#7f7f7f", "abs": "#1f77b4", "rel": BiasTable.color, "abs+rel": "#9467bd"}


def pos_color(pos: str) -> str:
    """The colour of position ``pos``: ``POS_COLORS``', else its window code's own."""
    code = Position.parse(pos).window
    return POS_COLORS.get(pos) or (code.color if code is not None else POS_COLORS["none"])


METRIC_LABELS = {
    "train_loss": "train loss (label-smoothed)",
    "test_loss": "test loss",
    "train_acc": "train accuracy",
    "test_acc": "test accuracy",
    "lr": "learning rate",
}
#: Line plots get at most this many panels across the book's column; more go on further rows.
PANELS_ACROSS = 2
#: Inches of free space between two neighbouring image titles.
TITLE_GAP = 0.12
#: Bias heat maps per row; a block with more heads continues on the next row.
HEADS_ACROSS = 6


def _panel_grid(
    num_panels: int, height: float, across: int = PANELS_ACROSS
) -> tuple[Figure, list[Axes]]:
    """``num_panels`` axes, ``across`` to a row, in a figure ``MAX_WIDTH`` wide.

    ``height``: inches per row. Only the axes asked for are created (a short last row is
    centred on a grid of half-width columns), so ``fig.axes`` holds exactly the panels.
    """
    across = min(num_panels, across)
    rows = math.ceil(num_panels / across)
    fig = plt.figure(figsize=(MAX_WIDTH, height * rows), layout="constrained")
    # Two grid columns per panel, so that the odd panel of a last row can sit in the middle.
    grid = fig.add_gridspec(rows, 2 * across)
    axes = []
    for i in range(num_panels):
        row, col = divmod(i, across)
        left_over = num_panels - row * across
        start = 2 * col + (across - left_over if left_over < across else 0)
        axes.append(fig.add_subplot(grid[row, start : start + 2]))
    return fig, axes


def plot_examples(dataset: ImageClassificationData, n: int = 8, title: str = "") -> Figure:
    """The first ``n`` images of ``dataset`` with their class names.

    As many images to a row as their names fit across the book's column at 9 pt, at most 4, so
    that objects of a few pixels stay visible on a phone.
    """
    widest = max(text_width(dataset.classes[int(label)], 9) for label in dataset.labels[:n])
    cols = max(1, min(n, 4, int(MAX_WIDTH // (widest + TITLE_GAP))))
    rows = -(-n // cols)
    size = MAX_WIDTH / cols  # one image and its title
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(MAX_WIDTH, (size + 0.1) * rows + 0.4),
        squeeze=False,
        layout="constrained",
    )
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i < n:
            image, label = dataset[i]
            ax.imshow(image.permute(1, 2, 0).numpy(), interpolation="nearest")
            ax.set_title(dataset.classes[int(label)], fontsize=SMALL)
    fig.suptitle(title or f"{dataset.name}: first {n} training images", fontsize=SMALL + 1)
    return legible_ticks(fig)


def plot_lr_schedule(total_steps: int, warmup_steps: int, peak_lr: float) -> Figure:
    """The learning rate of every step under ``companion.train.warmup_cosine``."""
    from companion.train import warmup_cosine

    factor = warmup_cosine(total_steps, warmup_steps)
    steps = np.arange(total_steps)
    # Text of 11 pt and more: shown on a 390 px phone (the figure scaled to about half its
    # width) it is still 8 CSS px (tests/book_figures.py: assert_legible_on_a_phone).
    fig, ax = plt.subplots(figsize=(MAX_WIDTH, 3.0), layout="constrained")
    ax.plot(steps, [peak_lr * factor(int(s)) for s in steps], color="#1f77b4")
    ax.axvline(warmup_steps, color="k", ls=":", lw=1)
    ax.text(warmup_steps, peak_lr * 0.5, "  end of warm-up", fontsize=11)
    ax.set_xlabel("optimizer step", fontsize=11)
    ax.set_ylabel("learning rate", fontsize=11)
    ax.tick_params(labelsize=11)
    ax.yaxis.get_offset_text().set_fontsize(11)
    ax.set_title(f"linear warm-up ({warmup_steps} steps), then cosine to 0", fontsize=12)
    ax.grid(alpha=0.3)
    return fig


def plot_learning_curves(
    runs: Mapping[str, Sequence[Mapping[str, float]]],
    metrics: Sequence[str] = ("train_loss", "test_acc"),
    title: str = "",
) -> Figure:
    """One panel per metric, one line per run: ``runs`` maps a label to its per-epoch records
    (``TrainResult.history`` or a ``metrics.json``'s ``"epochs"``).

    Two panels to a row; the legend goes below them, where it hides no curve.
    """
    fig, axes = _panel_grid(len(metrics), 3.0)
    for ax, metric in zip(axes, metrics, strict=True):
        for label, history in runs.items():
            epochs = [r["epoch"] for r in history]
            ax.plot(epochs, [r[metric] for r in history], marker="o", ms=3, label=label)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("epoch", fontsize=SMALL)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    fig.legend(
        *axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=4, fontsize=SMALL
    )
    if title:
        fig.suptitle(title, fontsize=SMALL + 1)
    return legible_ticks(fig)


def plot_ablation_curves(
    curves: Mapping[tuple[str, str, int], Sequence[Mapping[str, float]]],
    chance: Mapping[str, float],
    metric: str = "test_acc",
    title: str = "",
    level: str = "chance",
) -> Figure:
    """One panel per dataset: every run's ``metric`` per epoch (thin, one per seed) and the mean
    over seeds (thick), coloured by position encoding; dotted line: ``chance[dataset]``, named
    ``level`` in the legend (e.g. "constant answer").

    ``curves`` maps ``(dataset, pos, seed)`` to that run's per-epoch records. Two panels to a
    row; one legend below them all, where it hides no curve.
    """
    datasets = list(dict.fromkeys(k[0] for k in curves))
    fig, axes = _panel_grid(len(datasets), 3.0)
    for ax, dataset in zip(axes, datasets, strict=True):
        for pos in POS_COLORS:
            runs = [h for (d, p, _), h in curves.items() if d == dataset and p == pos]
            if not runs:
                continue
            color = POS_COLORS[pos]
            for history in runs:
                ax.plot(
                    [r["epoch"] for r in history],
                    [r[metric] for r in history],
                    color=color,
                    lw=0.7,
                    alpha=0.45,
                )
            length = min(len(h) for h in runs)
            mean = np.mean([[r[metric] for r in h[:length]] for h in runs], axis=0)
            ax.plot(range(1, length + 1), mean, color=color, lw=2.2, label=f"{pos} (mean)")
        if "acc" in metric:
            ax.axhline(chance[dataset], color="k", ls=":", lw=1, label=level)
        ax.set_title(dataset, fontsize=SMALL + 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("epoch", fontsize=SMALL)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    # One entry per label, whichever panels it appears in.
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    fig.legend(
        list(entries.values()), list(entries), loc="outside lower center", ncols=3, fontsize=SMALL
    )
    if title:
        fig.suptitle(title, fontsize=SMALL + 1)
    return legible_ticks(fig)


def bias_grid(table: np.ndarray, window_size: Sequence[int]) -> np.ndarray:
    """``((2Wh-1)(2Ww-1), H)`` table -> ``(H, 2Wh-1, 2Ww-1)``: entry ``[h, dy + Wh-1, dx + Ww-1]``
    is head ``h``'s bias for a key at offset ``(dy, dx) = query - key``.

    The table's row number is ``(dy + Wh - 1) * (2Ww - 1) + (dx + Ww - 1)`` (chapter 2), which is
    row-major order on the offset grid, so one reshape lays it out.
    """
    wh, ww = window_size
    return np.asarray(table).T.reshape(-1, 2 * wh - 1, 2 * ww - 1)


def plot_bias_tables(tables: Mapping[str, Mapping[str, Any]], title: str = "") -> Figure:
    """Every block's learned bias, one small heat map per head.

    ``tables`` is what ``companion.experiments.runs.ablation.bias_tables`` returns (block name ->
    table and window size). Each block takes a row of heads (more rows when it has more than
    ``HEADS_ACROSS`` heads). Colour: the bias added to the attention logit of a key at offset
    ``(dy, dx)`` from the query; red raises attention, blue lowers it; each block has its own
    symmetric colour scale, in the colour bar at its right. The cross marks the zero offset (the
    query itself).
    """
    names = list(tables)
    grids = [bias_grid(tables[n]["table"], tables[n]["window_size"]) for n in names]
    across = min(max(g.shape[0] for g in grids), HEADS_ACROSS)
    lines = [math.ceil(g.shape[0] / across) for g in grids]  # rows of panels per block
    # The block names and colour bars take ~1.5 in of the column; the heads share the rest.
    panel = min(2.0, (MAX_WIDTH - 1.5) / across)
    fig, axes = plt.subplots(
        sum(lines),
        across,
        figsize=(MAX_WIDTH, (panel + 0.15) * sum(lines) + 0.6),
        squeeze=False,
        layout="constrained",
    )
    first = 0
    for name, grid, count in zip(names, grids, lines, strict=True):
        block = axes[first : first + count]
        lim = float(np.abs(grid).max()) or 1.0
        wh, ww = (side // 2 for side in grid.shape[1:])
        for h, ax in enumerate(block.flat):
            if h >= grid.shape[0]:
                ax.axis("off")
                continue
            image = ax.imshow(
                grid[h],
                cmap="RdBu_r",
                vmin=-lim,
                vmax=lim,
                extent=(-ww - 0.5, ww + 0.5, wh + 0.5, -wh - 0.5),
            )
            ax.plot(0, 0, "k+", ms=7)
            ax.set_xticks(range(-ww, ww + 1, max(1, ww)))
            ax.set_yticks(range(-wh, wh + 1, max(1, wh)))
            # The row's heads share one offset grid: its dy labels once, at the left, are enough.
            ax.tick_params(labelsize=SMALL, labelleft=h % across == 0)
            ax.set_title(f"head {h}", fontsize=SMALL)
            if h % across == 0:
                ax.set_ylabel(_short(name).replace(" block", "\nblock") + "\ndy", fontsize=SMALL)
        # At the right end of the block's rows even when a row has fewer heads: a colour bar
        # between two panels would push the columns of every other row apart.
        bar = fig.colorbar(image, ax=list(block.flat), shrink=0.8, pad=0.02)
        bar.ax.tick_params(labelsize=SMALL)
        first += count
    for ax in axes[-1]:
        ax.set_xlabel("dx", fontsize=SMALL)
    if title:
        fig.suptitle(title, fontsize=SMALL + 1)
    return legible_ticks(fig)


#: A panel of more cells than this breaks their names at every hyphen (``_row_label``).
CELLS_ON_ONE_LINE = 8


def _short(name: str) -> str:
    """``layers.1.blocks.0.attn`` -> ``stage 1 block 0``."""
    parts = name.split(".")
    if len(parts) >= 4 and parts[0] == "layers" and parts[2] == "blocks":
        return f"stage {parts[1]} block {parts[3]}"
    return name


def _row_label(row: Mapping[str, Any], narrow: bool = False) -> str:
    """``rel`` for the standard Swin, ``rel`` over ``no-shift`` for a controlled variant (a long
    name such as ``abs-offset-bias`` broken after its first hyphen, so neighbours never touch).
    ``narrow``: a crowded panel, where every name breaks after each hyphen and plus."""
    variant, pos = row.get("variant", "swin"), row["pos"]
    if narrow:
        pos = pos.replace("+", "+\n")
        variant = variant.replace("-", "-\n")
    elif len(variant) > 10 and "-" in variant:
        variant = variant.replace("-", "-\n", 1)
    return pos if variant == "swin" else f"{pos}\n{variant}"


def plot_seed_dots(
    rows: Sequence[Mapping[str, Any]],
    chance: Mapping[str, float],
    confidence: float = 0.95,
    across: int = PANELS_ACROSS,
    title: str = "",
    level: str = "chance",
    panel: str = "dataset",
) -> Figure:
    """Final test accuracy of every run: one dot per seed, the mean as a short bar and an
    interval of the mean as a black line, per panel (``row[panel]``: a dataset, or a test split)
    and cell.

    ``rows``: summary rows (``dataset``, ``pos``, optional ``variant``, ``values`` in [0, 1], one
    per seed), drawn in the order given and coloured by ``pos``. A row with ``low`` and ``high``
    (e.g. a bootstrap interval over seeds and test images) is drawn with it; otherwise the
    ``confidence`` t interval over seeds, only within the possible range 0-100 %. ``chance``
    gives each panel's dotted line, named ``level`` (e.g. "constant answer"). The y axis always
    runs from 0 to 100 %, so distances read as they are.
    """
    datasets = list(dict.fromkeys(r[panel] for r in rows))
    fig, axes = _panel_grid(len(datasets), 3.2, across=min(len(datasets), across))
    for ax, dataset in zip(axes, datasets, strict=True):
        mine = [r for r in rows if r[panel] == dataset]
        for x, row in enumerate(mine):
            color = pos_color(row["pos"])
            values = 100 * np.asarray(row["values"], dtype=float)
            # A fixed, symmetric spread of the dots, so equal values stay visible side by side.
            offsets = np.linspace(-0.18, 0.18, len(values)) if len(values) > 1 else np.zeros(1)
            ax.scatter(x + offsets, values, s=16, color=color, alpha=0.75, zorder=3, lw=0)
            ax.plot([x - 0.3, x + 0.3], [values.mean()] * 2, color=color, lw=2.4, zorder=4)
            if "low" in row:
                low, high = 100 * row["low"], 100 * row["high"]
                ax.plot([x, x], [low, high], color="k", lw=1.1, zorder=5)
            elif len(values) > 1:  # the interval of a mean is a paired one against 0
                _, low, high = paired_interval(list(values), confidence)
                ax.plot([x, x], [max(low, 0.0), min(high, 100.0)], color="k", lw=1.1, zorder=5)
        ax.axhline(100 * chance[dataset], color="k", ls=":", lw=1)
        narrow = len(mine) > CELLS_ON_ONE_LINE
        ax.set_xticks(range(len(mine)), [_row_label(r, narrow) for r in mine], fontsize=SMALL)
        ax.set_xlim(-0.6, len(mine) - 0.4)
        ax.set_ylim(0, 102)
        ax.set_yticks(range(0, 101, 20))
        ax.tick_params(axis="y", labelsize=SMALL)
        ax.set_ylabel("final test accuracy (%)", fontsize=SMALL)
        ax.set_title(f"{dataset} (dotted: {level})", fontsize=SMALL)
        ax.grid(axis="y", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=SMALL + 1)
    return legible_ticks(fig)


def plot_table4_differences(
    table: Mapping[str, Mapping[str, float]],
    reference: str,
    metrics: Mapping[str, str],
    colors: Mapping[str, str] | None = None,
    title: str = "",
) -> Figure:
    """The Swin paper's Table 4 as differences: each row minus the ``reference`` row, in points,
    one group of bars per metric (``metrics``: key -> axis label), each bar labelled with its
    value. The axis is centred on 0, so a gap of one point looks like one point whatever the
    metric's own level. ``colors`` maps a row to its colour (others: grey).
    """
    rows = [r for r in table if r != reference]
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(MAX_WIDTH, 3.6), layout="constrained")
    lim = max(abs(table[r][m] - table[reference][m]) for r in rows for m in metrics)
    for i, row in enumerate(rows):
        diffs = [table[row][m] - table[reference][m] for m in metrics]
        xs = np.arange(len(metrics)) + (i - (len(rows) - 1) / 2) * width
        color = (colors or {}).get(row, "#bcbd22")
        ax.bar(xs, diffs, width=width * 0.92, color=color, label=row)
        for x, d in zip(xs, diffs, strict=True):
            ax.text(x, d + (0.08 if d >= 0 else -0.08), f"{d:+.1f}", ha="center",
                    va="bottom" if d >= 0 else "top", fontsize=SMALL)  # fmt: skip
    ax.axhline(0, color="k", lw=1)
    ax.set_xticks(range(len(metrics)), list(metrics.values()), fontsize=SMALL)
    ax.set_ylim(-lim - 0.7, lim + 0.7)
    ax.set_ylabel(f"minus '{reference}' (points)", fontsize=SMALL)
    ax.tick_params(axis="y", labelsize=SMALL)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize=SMALL)
    if title:
        ax.set_title(title, fontsize=SMALL + 1)
    return legible_ticks(fig)
