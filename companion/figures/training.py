"""Figures of chapter 5: example images, learning curves, ablation results, learned bias tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from companion.data import ImageClassificationData

#: One colour per position encoding, the same in every figure of the chapter.
POS_COLORS = {"none": "#7f7f7f", "abs": "#1f77b4", "rel": "#d62728", "abs+rel": "#9467bd"}
METRIC_LABELS = {
    "train_loss": "train loss (label-smoothed)",
    "test_loss": "test loss",
    "train_acc": "train accuracy",
    "test_acc": "test accuracy",
    "lr": "learning rate",
}


def plot_examples(dataset: ImageClassificationData, n: int = 8, title: str = "") -> Figure:
    """The first ``n`` images of ``dataset`` with their class names."""
    cols = min(n, 8)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.6 * cols, 1.9 * rows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i < n:
            image, label = dataset[i]
            ax.imshow(image.permute(1, 2, 0).numpy(), interpolation="nearest")
            ax.set_title(dataset.classes[int(label)], fontsize=9)
    fig.suptitle(title or f"{dataset.name}: first {n} training images", fontsize=11)
    fig.tight_layout()
    return fig


def plot_lr_schedule(total_steps: int, warmup_steps: int, peak_lr: float) -> Figure:
    """The learning rate of every step under ``companion.train.warmup_cosine``."""
    from companion.train import warmup_cosine

    factor = warmup_cosine(total_steps, warmup_steps)
    steps = np.arange(total_steps)
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    ax.plot(steps, [peak_lr * factor(int(s)) for s in steps], color="#1f77b4")
    ax.axvline(warmup_steps, color="k", ls=":", lw=1)
    ax.text(warmup_steps, peak_lr * 0.5, "  end of warm-up", fontsize=9)
    ax.set_xlabel("optimizer step", fontsize=10)
    ax.set_ylabel("learning rate", fontsize=10)
    ax.set_title(f"linear warm-up ({warmup_steps} steps), then cosine to 0", fontsize=11)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_learning_curves(
    runs: Mapping[str, Sequence[Mapping[str, float]]],
    metrics: Sequence[str] = ("train_loss", "test_acc"),
    title: str = "",
) -> Figure:
    """One panel per metric, one line per run: ``runs`` maps a label to its per-epoch records
    (``TrainResult.history`` or a ``metrics.json``'s ``"epochs"``)."""
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics), 3.4), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        for label, history in runs.items():
            epochs = [r["epoch"] for r in history]
            ax.plot(epochs, [r[metric] for r in history], marker="o", ms=3, label=label)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("epoch", fontsize=10)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=10)
        ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize=9)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def plot_ablation_curves(
    curves: Mapping[tuple[str, str, int], Sequence[Mapping[str, float]]],
    chance: Mapping[str, float],
    metric: str = "test_acc",
    title: str = "",
) -> Figure:
    """One panel per dataset: every run's ``metric`` per epoch (thin, one per seed) and the mean
    over seeds (thick), coloured by position encoding; dotted line: chance level.

    ``curves`` maps ``(dataset, pos, seed)`` to that run's per-epoch records.
    """
    datasets = list(dict.fromkeys(k[0] for k in curves))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
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
            ax.axhline(chance[dataset], color="k", ls=":", lw=1, label="chance")
        ax.set_title(dataset, fontsize=11)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("epoch", fontsize=10)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric), fontsize=10)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=9)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def plot_ablation_bars(
    summary: Sequence[Mapping[str, Any]],
    chance: Mapping[str, float],
    paper: Mapping[str, float] | None = None,
    title: str = "",
) -> Figure:
    """Final test accuracy, mean ± std over seeds, per dataset and position encoding.

    ``paper`` (optional) maps ``pos`` to the Swin paper's ImageNet-1K top-1 (Table 4), drawn in an
    extra panel on its own scale: a different model, dataset and budget, shown for the ordering.
    """
    datasets = list(dict.fromkeys(r["dataset"] for r in summary))
    panels = len(datasets) + (paper is not None)
    fig, axes = plt.subplots(1, panels, figsize=(3.9 * panels, 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=False):
        rows = [r for p in POS_COLORS for r in summary if r["dataset"] == dataset and r["pos"] == p]
        x = np.arange(len(rows))
        means = [100 * r["mean"] for r in rows]
        ax.bar(
            x,
            means,
            yerr=[100 * r["std"] for r in rows],
            capsize=4,
            color=[POS_COLORS[r["pos"]] for r in rows],
        )
        for xi, m in zip(x, means, strict=True):
            # Inside the bar, clear of the error bar; above it when the bar is too short.
            inside = m > 12
            ax.text(
                xi,
                3 if inside else m + 1,
                f"{m:.1f}",
                ha="center",
                fontsize=9,
                color="white" if inside else "black",
                fontweight="bold",
            )
        ax.axhline(100 * chance[dataset], color="k", ls=":", lw=1)
        ax.set_xticks(x, [r["pos"] for r in rows], fontsize=10)
        ax.set_ylim(0, 105)
        ax.set_ylabel("final test accuracy (%)", fontsize=10)
        ax.set_title(f"{dataset} (dotted: chance)", fontsize=11)
    if paper is not None:
        ax = axes[0, -1]
        order = [p for p in POS_COLORS if p in paper]
        values = [paper[p] for p in order]
        ax.bar(range(len(order)), values, color=[POS_COLORS[p] for p in order])
        for xi, v in enumerate(values):
            ax.text(xi, v + 0.1, f"{v:.1f}", ha="center", fontsize=9)
        ax.set_xticks(range(len(order)), order, fontsize=10)
        ax.set_ylim(min(values) - 1.5, max(values) + 0.8)
        ax.set_ylabel("ImageNet-1K top-1 (%)", fontsize=10)
        ax.set_title("Swin-T, paper's Table 4", fontsize=11)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


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

    ``tables`` is what ``companion.ablation.bias_tables`` returns (block name -> table and
    window size). Rows are blocks, columns heads. Colour: the bias added to the attention logit
    of a key at offset ``(dy, dx)`` from the query; red raises attention, blue lowers it; each
    row has its own symmetric colour scale. The cross marks the zero offset (the query itself).
    """
    names = list(tables)
    grids = [bias_grid(tables[n]["table"], tables[n]["window_size"]) for n in names]
    heads = max(g.shape[0] for g in grids)
    fig, axes = plt.subplots(
        len(names),
        heads,
        figsize=(2.1 * heads + 1.0, 2.1 * len(names)),
        squeeze=False,
        layout="constrained",
    )
    for row, (name, grid) in enumerate(zip(names, grids, strict=True)):
        lim = float(np.abs(grid).max()) or 1.0
        wh, ww = (s // 2 for s in grid.shape[1:])
        for h in range(heads):
            ax = axes[row, h]
            if h >= grid.shape[0]:
                ax.axis("off")
                continue
            im = ax.imshow(
                grid[h],
                cmap="RdBu_r",
                vmin=-lim,
                vmax=lim,
                extent=(-ww - 0.5, ww + 0.5, wh + 0.5, -wh - 0.5),
            )
            ax.plot(0, 0, "k+", ms=7)
            ax.set_xticks(range(-ww, ww + 1, max(1, ww)))
            ax.set_yticks(range(-wh, wh + 1, max(1, wh)))
            ax.tick_params(labelsize=9)
            ax.set_title(f"head {h}", fontsize=9)
            if h == 0:
                ax.set_ylabel(f"{_short(name)}\ndy", fontsize=9)
            if row == len(names) - 1:
                ax.set_xlabel("dx", fontsize=9)
        fig.colorbar(im, ax=list(axes[row, : grid.shape[0]]), shrink=0.8, pad=0.02)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def _short(name: str) -> str:
    """``layers.1.blocks.0.attn`` -> ``stage 1 block 0``."""
    parts = name.split(".")
    if len(parts) >= 4 and parts[0] == "layers" and parts[2] == "blocks":
        return f"stage {parts[1]} block {parts[3]}"
    return name
