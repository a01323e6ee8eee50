"""Solutions to the exercises of chapter 5, "Train a small Swin"."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from companion._checks import check_choice, check_positive_int
from companion.data.dataset import ImageClassificationData
from companion.data.tasks import IMAGE_SIZE
from companion.experiments.stats import t_quantile

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py).
ANSWERS: dict[int, tuple[str, ...]] = {
    1: ("29.8", "29.5", "27.9", "27.3"),  # relation, rules on one object's cell: near 2/7
    2: ("2048", "588"),  # position parameters of abs and rel in tiny-cpu
    3: ("6 of 12 at distance 0 or 1",),  # abs+rel's favourites on relation, seed 0
    4: ("83.5", "102.2"),  # the t interval over abs+rel's ten seeds on seen
}


def position_parameter_count(model: nn.Module) -> int:
    """Exercise 2: how many parameters encode position (absolute embedding + bias tables)?"""
    return sum(
        p.numel()
        for name, p in model.named_parameters()
        if name.endswith(("pos_embed", "relative_position_bias_table"))
    )


def position_only_baseline(
    train: ImageClassificationData,
    test: ImageClassificationData,
    cells: int = 4,
    obj: str = "A",
) -> float:
    """Exercise 1: test accuracy of a rule that sees only *where one object is* (its cell in a
    ``cells x cells`` grid over the image) and answers the most frequent training label of that
    cell: the best any rule can do from that cell alone (up to sampling noise).

    ``obj`` is ``"A"`` or ``"B"`` (``relation``'s two objects; ``grid-cell`` has one object and
    ignores it). For ``relation`` this measures how much one object's absolute position gives
    away: only the frame's borders can (B must still fit in the frame).
    """
    check_positive_int("cells", cells)
    check_choice("obj", obj, ("A", "B"))

    def cell_of(data: ImageClassificationData) -> Tensor:
        centres = data.meta["centres"]
        where = centres[:, "AB".index(obj)] if centres.dim() == 3 else centres
        idx = (where / (IMAGE_SIZE / cells)).long().clamp(0, cells - 1)
        return idx[:, 0] * cells + idx[:, 1]

    counts = torch.zeros(cells * cells, train.num_classes)
    counts.index_put_((cell_of(train), train.labels), torch.ones(len(train)), accumulate=True)
    rule = counts.argmax(1)  # the majority label of each cell (cells never seen answer 0)
    return (rule[cell_of(test)] == test.labels).float().mean().item()


def position_only_baselines(
    train: ImageClassificationData,
    test: ImageClassificationData,
    cells: Sequence[int] = (4, 8),
) -> dict[str, float]:
    """Exercise 1, both objects: ``position_only_baseline`` for A alone and B alone, on each
    grid of ``cells``. Returns ``{"A only, 4x4 cells": accuracy, ...}``."""
    return {
        f"{obj} only, {c}x{c} cells": position_only_baseline(train, test, c, obj)
        for obj in ("A", "B")
        for c in cells
    }


def favourite_offsets(table: Tensor, window_size: Sequence[int]) -> list[tuple[int, int]]:
    """Exercise 3: for each head, the offset ``(dy, dx) = query - key`` with the largest bias.

    ``table``: ``((2Wh-1)(2Ww-1), H)``. Row ``r`` of the table is the offset
    ``(r // (2Ww-1) - (Wh-1), r % (2Ww-1) - (Ww-1))`` (chapter 2's index, read backwards).
    """
    wh, ww = window_size
    rows = table.argmax(0).tolist()
    return [(r // (2 * ww - 1) - (wh - 1), r % (2 * ww - 1) - (ww - 1)) for r in rows]


def t_interval_by_hand(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """Exercise 4: ``(mean, low, high)`` of ``values`` (one per seed) with the t interval
    ``mean ± t * sd / sqrt(n)``, ``t`` the ``(1 + confidence) / 2`` quantile of Student's t with
    ``n - 1`` degrees of freedom and ``sd`` the sample standard deviation.

    Written out from the formula, to be compared with
    ``companion.experiments.stats.paired_interval`` (the same interval, over differences). It
    assumes one roughly normal spread of values: a cell whose seeds split into solved and
    unsolved is two groups, and there the interval can reach values no seed reached, or past
    100 %.
    """
    if len(values) < 2:
        raise ValueError(f"values must hold at least 2 numbers, got {len(values)}")
    half = (
        t_quantile((1 + confidence) / 2, len(values) - 1)
        * statistics.stdev(values)
        / math.sqrt(len(values))
    )
    mean = statistics.fmean(values)
    return mean, mean - half, mean + half
