"""Chapter 3 exercises: how often each table row is read, a 2-D lookup, a directional head, and
attention from position alone."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from companion._checks import check_choice, to_pair
from companion.attention import WindowAttention
from companion.relative import (
    WindowSize,
    bias_table_size,
    flatten_coordinates,
    grid_coordinates,
    lookup_bias,
    pairwise_offsets,
    relative_position_index,
    shift_offsets,
)

Direction = Literal["left", "right", "up", "down"]

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py); an empty tuple is a question whose answer is no
#: value a reader could meet before (a yes or no, a picture, a quantity the exercise names).
ANSWERS: dict[int, tuple[str, ...]] = {
    1: ("centre: 49 corner: 1",),  # pairs reading the centre row and a corner row, M = 7
    2: (),  # the same B
    3: (),  # a picture: the bright side
    4: (),  # SoftMax(B), the same for every input
    5: ("33.94",),  # max |B + B.T| of the distance table
}


def pairs_per_offset(window_size: WindowSize) -> Tensor:
    """Exercise 1: how many (query, key) pairs read each row of the table.

    Returns ``(2Wh-1, 2Ww-1)`` counts on the offset grid (row ``dy + Wh - 1``, column
    ``dx + Ww - 1``); they equal ``(Wh - |dy|) * (Ww - |dx|)`` and sum to ``N²``.
    """
    wh, ww = to_pair("window_size", window_size)
    index = relative_position_index((wh, ww))
    counts = torch.bincount(index.flatten(), minlength=bias_table_size((wh, ww)))
    return counts.view(2 * wh - 1, 2 * ww - 1)


def lookup_bias_2d(table: Tensor, window_size: WindowSize) -> Tensor:
    """Exercise 2: the same ``B`` from a 2-D table indexed directly by the shifted ``(dy, dx)``.

    ``table`` ``((2Wh-1)(2Ww-1), H)`` is viewed as ``(2Wh-1, 2Ww-1, H)``: row-major flattening
    is exactly the numbering of ``relative_position_index``, so the view needs no copy. Returns
    ``(H, N, N)``.
    """
    wh, ww = to_pair("window_size", window_size)
    size = bias_table_size((wh, ww))
    if table.dim() != 2 or table.shape[0] != size:
        raise ValueError(
            f"table must have shape ({size}, num_heads) for window_size={window_size!r}, "
            f"got {tuple(table.shape)}"
        )
    grid = table.view(2 * wh - 1, 2 * ww - 1, table.shape[1])
    shifted = shift_offsets(
        pairwise_offsets(flatten_coordinates(grid_coordinates((wh, ww)))), (wh, ww)
    )
    return grid[shifted[..., 0], shifted[..., 1]].permute(2, 0, 1).contiguous()


def directional_bias_table(
    window_size: WindowSize, toward: Direction, strength: float = 1.0
) -> Tensor:
    """Exercise 3: a one-head table that favours keys on one side of the query.

    ``toward="left"`` adds ``strength`` per column that the key lies to the left of the query.
    With offset = query - key, a key to the left has ``dx > 0``, so that bias is
    ``strength * dx``; "up" is ``strength * dy``, and "right"/"down" flip the sign.
    Returns ``((2Wh-1)(2Ww-1), 1)``.
    """
    wh, ww = to_pair("window_size", window_size)
    check_choice("toward", toward, ("left", "right", "up", "down"))
    dy, dx = torch.meshgrid(torch.arange(-(wh - 1), wh), torch.arange(-(ww - 1), ww), indexing="ij")
    signed = {"left": dx, "right": -dx, "up": dy, "down": -dy}[toward]
    return (strength * signed.float()).flatten()[:, None]


def position_only_attention(attn: WindowAttention) -> Tensor:
    """Exercise 4: attention weights from the bias alone, ``SoftMax(B)``: ``(H, N, N)``.

    This is the Swin paper's "rel. pos. w/o app." row of Table 4: the content term ``QKᵀ/√d``
    is dropped, so every image gets the same attention pattern.
    """
    if not isinstance(attn, WindowAttention):
        raise TypeError(f"attn must be a WindowAttention, got {type(attn).__name__}")
    bias = attn.relative_position_bias()
    if bias is None:
        raise ValueError(f"attn must add a position bias B, got position={attn.position!r}")
    return bias.softmax(dim=-1)


def transpose_gaps(table: Tensor, window_size: WindowSize) -> tuple[float, float]:
    """Exercise 5 (predict, then check): ``(max |B - Bᵀ|, max |B + Bᵀ|)`` over all heads.

    Swapping query and key negates the offset (chapter 2's mirror property), so ``Bᵀ`` reads
    each pair's bias at the opposite offset. A table that is even in the offset (a distance
    penalty) gives a symmetric ``B`` (first number 0); an odd one (``strength * dx``) an
    antisymmetric ``B`` (second number 0).
    """
    bias = lookup_bias(table.detach(), relative_position_index(window_size))  # (H, N, N)
    flipped = bias.transpose(-1, -2)
    return float((bias - flipped).abs().max()), float((bias + flipped).abs().max())
