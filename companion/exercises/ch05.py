"""Solutions to the exercises of chapter 5, "Train a small Swin on a GPU"."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from companion.data import IMAGE_SIZE, ImageClassificationData


def lr_at_step(step: int, total_steps: int, warmup_steps: int, peak_lr: float) -> float:
    """Exercise 1: the learning rate of step ``step`` (0-based) under linear warm-up then cosine.

    Written out independently of ``companion.train.warmup_cosine`` so the test can compare them.
    """
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return peak_lr * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def position_parameter_count(model: nn.Module) -> int:
    """Exercise 2: how many parameters encode position (absolute embedding + bias tables)?"""
    return sum(
        p.numel()
        for name, p in model.named_parameters()
        if name.endswith(("absolute_pos_embed", "relative_position_bias_table"))
    )


def position_only_baseline(
    train: ImageClassificationData, test: ImageClassificationData, cells: int = 4
) -> float:
    """Exercise 3: test accuracy of a rule that sees only *where object A is* (its cell in a
    ``cells x cells`` grid) and answers the most frequent training label of that cell.

    For ``relation`` this measures how much A's absolute position alone gives away (A near the
    left border is more often left of B, because B must still fit in the frame).
    """

    def cell_of(data: ImageClassificationData) -> Tensor:
        a = data.meta["centres"][:, 0] if data.meta["centres"].dim() == 3 else data.meta["centres"]
        idx = (a / (IMAGE_SIZE / cells)).long().clamp(0, cells - 1)
        return idx[:, 0] * cells + idx[:, 1]

    counts = torch.zeros(cells * cells, train.num_classes)
    counts.index_put_((cell_of(train), train.labels), torch.ones(len(train)), accumulate=True)
    rule = counts.argmax(1)  # the majority label of each cell (cells never seen answer 0)
    return (rule[cell_of(test)] == test.labels).float().mean().item()


def favourite_offsets(table: Tensor, window_size: Sequence[int]) -> list[tuple[int, int]]:
    """Exercise 4: for each head, the offset ``(dy, dx) = query - key`` with the largest bias.

    ``table``: ``((2Wh-1)(2Ww-1), H)``. Row ``r`` of the table is the offset
    ``(r // (2Ww-1) - (Wh-1), r % (2Ww-1) - (Ww-1))`` (chapter 2's index, read backwards).
    """
    wh, ww = window_size
    rows = table.argmax(0).tolist()
    return [(r // (2 * ww - 1) - (wh - 1), r % (2 * ww - 1) - (ww - 1)) for r in rows]
