"""Chapter 2 exercises: the relative position index by hand, and what breaks without each step.

The chapter itself also uses ``index_with_row_multiplier`` and ``offset_collisions`` to show the
collisions that the multiply step prevents.
"""

from __future__ import annotations

import torch
from torch import Tensor

from companion._checks import check_positive_int, to_pair
from companion.relative import (
    WindowSize,
    bias_table_size,
    flatten_coordinates,
    grid_coordinates,
    pairwise_offsets,
    relative_position_index,
    shift_offsets,
    sum_offsets,
)

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py); an empty tuple is a question whose answer is no
#: value a reader could meet before (a yes or no, a picture, a quantity the exercise names).
ANSWERS: dict[int, tuple[str, ...]] = {
    1: (),  # 21 and 3 by hand, checked against the M = 3 index the chapter prints on purpose
    2: ("[(-2, 2), (-1, 1), (0, 0), (1, -1), (2, -2)]",),
    3: (),  # 2Ww - 1, which the exercise names
    4: ("529",),  # rows of a 12 x 12 window's table
    5: (),  # yes, a different valid numbering
    6: (),  # raw == -raw.T
    7: ("[(48, 0)]", "[(0, 48)]"),
}


def _check_token(name: str, token: object, n: int) -> int:
    if not isinstance(token, int) or isinstance(token, bool):
        raise TypeError(
            f"{name} must be an int token number, got {token!r} ({type(token).__name__})"
        )
    if not 0 <= token < n:
        raise ValueError(f"{name} must be a token number in [0, {n - 1}], got {token}")
    return token


def index_by_hand(query: int, key: int, window_size: WindowSize) -> int:
    """Exercise 1: the index of one (query, key) pair with plain integers, step by step.

    Tokens are numbered row by row, so token ``t`` sits at ``(t // Ww, t % Ww)``.
    """
    wh, ww = to_pair("window_size", window_size)
    _check_token("query", query, wh * ww)
    _check_token("key", key, wh * ww)
    (qy, qx), (ky, kx) = divmod(query, ww), divmod(key, ww)  # flatten, undone
    dy, dx = qy - ky, qx - kx  # pairwise offset: query minus key
    dy, dx = dy + wh - 1, dx + ww - 1  # shift: both now >= 0
    dy = dy * (2 * ww - 1)  # multiply: one row of offsets spans 2Ww - 1 numbers
    return dy + dx  # sum


def shifted_offsets(window_size: WindowSize) -> Tensor:
    """The ``(N, N, 2)`` offsets after the shift, built with the chapter's companion steps."""
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(window_size)))
    return shift_offsets(offsets, window_size)


def index_with_row_multiplier(window_size: WindowSize, multiplier: int) -> Tensor:
    """Exercise 2: the ``(N, N)`` index built with any row multiplier instead of ``2Ww - 1``.

    ``multiplier=1`` is "no multiply at all": the two shifted offsets are simply added.
    ``multiplier=2 * Ww - 1`` reproduces ``relative_position_index``.
    """
    check_positive_int("multiplier", multiplier)
    scaled = shifted_offsets(window_size) * torch.tensor([multiplier, 1])
    return sum_offsets(scaled)


def offset_numbers(window_size: WindowSize, multiplier: int) -> Tensor:
    """The number each possible offset gets with this multiplier, on the offset grid.

    Returns ``(2Wh-1, 2Ww-1)``: entry ``[dy + Wh - 1, dx + Ww - 1]`` is
    ``(dy + Wh - 1) * multiplier + (dx + Ww - 1)``.
    """
    wh, ww = to_pair("window_size", window_size)
    check_positive_int("multiplier", multiplier)
    rows, cols = torch.meshgrid(torch.arange(2 * wh - 1), torch.arange(2 * ww - 1), indexing="ij")
    return rows * multiplier + cols


def offset_collisions(window_size: WindowSize, multiplier: int) -> dict[int, list[tuple[int, int]]]:
    """The numbers shared by two or more different offsets ``(dy, dx)`` with this multiplier.

    Returns ``{number: [offsets that get it]}``, only for numbers that collide; an empty dict means
    every offset got its own number (and so its own row of the bias table).
    """
    wh, ww = to_pair("window_size", window_size)
    numbers = offset_numbers((wh, ww), multiplier)
    owners: dict[int, list[tuple[int, int]]] = {}
    for (i, j), number in zip(
        torch.cartesian_prod(torch.arange(2 * wh - 1), torch.arange(2 * ww - 1)).tolist(),
        numbers.flatten().tolist(),
        strict=True,
    ):
        owners.setdefault(number, []).append((i - (wh - 1), j - (ww - 1)))
    return {number: offs for number, offs in owners.items() if len(offs) > 1}


def smallest_collision_free_multiplier(window_size: WindowSize) -> int:
    """Exercise 3: the smallest row multiplier that gives every offset its own number.

    It is ``2Ww - 1`` whenever there is more than one row offset (``Wh > 1``); with a single row
    of tokens there is no row offset to separate, and any multiplier (so 1) works.
    """
    wh, ww = to_pair("window_size", window_size)
    multiplier = 1
    while offset_collisions((wh, ww), multiplier):
        multiplier += 1
    return multiplier


def count_distinct_offsets(window_size: WindowSize) -> int:
    """Exercise 4: count the different offsets that occur in the window, by brute force."""
    wh, ww = to_pair("window_size", window_size)
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates((wh, ww))))
    return len({tuple(pair) for pair in offsets.reshape(-1, 2).tolist()})


def column_major_index(window_size: WindowSize) -> Tensor:
    """Exercise 5: number the offsets column by column instead: ``dx' * (2Wh - 1) + dy'``.

    ``dy'``, ``dx'`` are the shifted offsets. This is an equally valid index (a different
    numbering of the same table rows); only consistency between index and table matters.
    """
    wh, _ = to_pair("window_size", window_size)
    shifted = shifted_offsets(window_size)
    return shifted[..., 1] * (2 * wh - 1) + shifted[..., 0]


def index_without_shift(window_size: WindowSize) -> Tensor:
    """Exercise 6: multiply and sum the raw offsets, skipping the shift: ``dy * (2Ww - 1) + dx``.

    The values run from ``-(T-1)/2`` to ``(T-1)/2`` with ``T = (2Wh-1)(2Ww-1)``: half of them
    are negative, so they are not valid row numbers of a table.
    """
    _, ww = to_pair("window_size", window_size)
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(window_size)))
    return sum_offsets(offsets * torch.tensor([2 * ww - 1, 1]))


def pairs_reading_row(window_size: WindowSize, row: int) -> list[tuple[int, int]]:
    """Exercise 7 (predict, then check): every ``(query, key)`` pair whose index is ``row``.

    The last row, ``T - 1``, is the largest shifted offset ``(2Wh - 2, 2Ww - 2)``, i.e.
    ``(dy, dx) = (Wh - 1, Ww - 1)``: the query in the bottom-right corner, the key in the
    top-left one. Only that one pair is so far apart; row 0 is the same pair the other way round.
    """
    index = relative_position_index(window_size)
    total = bias_table_size(window_size)
    if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < total:
        raise ValueError(f"row must be an int in [0, {total - 1}] for this window, got {row!r}")
    return [(int(q), int(k)) for q, k in (index == row).nonzero().tolist()]
