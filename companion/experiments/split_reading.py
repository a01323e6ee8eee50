"""A cell of an ablation read split by split (chapters 5 and 6): accuracies with the two-stage
bootstrap (seeds *and* images); a cell whose seeds split into solved and unsolved is read as a
count (solved k of n, exact interval on the rate), its mean never read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from companion.experiments.bootstrap import gap_interval
from companion.experiments.predictions import (
    cell_of,
    constant_answer,
    correct_by_seed,
    pos_label,
    solved_seeds,
)
from companion.experiments.stats import binomial_interval


def cells_of(results: dict[str, Any], dataset: str, variants: bool = True) -> list[str]:
    """The cells of ``dataset``: the main grid, then (if ``variants``) the controlled variants."""
    found = list(dict.fromkeys(cell_of(r) for r in results["runs"] if r["dataset"] == dataset))
    main = [c for c in found if c.count(":") == 1]
    return main + [c for c in found if c.count(":") == 2] if variants else main


def seed_matrix(results: dict[str, Any], cell: str, split: str) -> tuple[list[int], np.ndarray]:
    """The seeds, sorted, and their ``(seeds, images)`` bool matrix of ``split``'s images."""
    by_seed = correct_by_seed(results, cell, split)
    seeds = sorted(by_seed)
    return seeds, np.stack([by_seed[s] for s in seeds])


def accuracy_table(
    results: dict[str, Any],
    dataset: str,
    splits: Sequence[str],
    rule: dict[str, Any],
    cells: Sequence[str] | None = None,
) -> str:
    """Markdown: per cell, its accuracy on each split with its interval, and solved k of n."""
    head = " | ".join(f"`{s}` (constant answer {100 * constant_answer(results, dataset, s):.1f})"
                      for s in splits)  # fmt: skip
    lines = [f"| cell | {head} | solved (`{rule['split']}` ≥ {100 * rule['threshold']:g} %) |"]
    lines.append("|---" * (len(splits) + 2) + "|")
    for cell in cells or cells_of(results, dataset):
        flags = solved_seeds(results, cell, rule).values()
        k, n = sum(flags), len(flags)
        mark = " (split)" if 0 < k < n else ""
        entries = []
        for s in splits:
            i = gap_interval(seed_matrix(results, cell, s)[1])
            entries.append(f"{100 * i.estimate:.1f} [{100 * i.low:.1f}, {100 * i.high:.1f}]{mark}")
        low, high = binomial_interval(k, n)
        count = f"{k} of {n} (rate {low:.2f}–{high:.2f})"
        lines.append(f"| `{pos_label(cell)}` | " + " | ".join(entries) + f" | {count} |")
    lines.append("")
    lines.append(
        "*Accuracy (%), mean over seeds [95 % bootstrap interval over seeds and test images]; "
        "(split): some seeds solved, some did not, so read the count, not the mean.*"
    )
    return "\n".join(lines) + "\n"


def glance_entry(lift: np.ndarray, won: np.ndarray) -> str:
    """The mean lift of the seeds, or where they split, the count solved, their mean lift and each
    other seed's (seeds short of the mark need not agree with each other: never averaged)."""
    if won.all() or not won.any():
        return f"{lift.mean():+.1f}"
    solved = f"{int(won.sum())}/{len(won)} solved: {lift[won].mean():+.1f}"
    if len(won) - int(won.sum()) == 1:
        return f"{solved} · 1 other: {lift[~won][0]:+.1f}"
    return f"{solved} · others: " + ", ".join(f"{v:+.1f}" for v in lift[~won])
