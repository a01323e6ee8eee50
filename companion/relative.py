"""Swin's relative position index and bias, one function per step.

For a window of ``Wh x Ww`` tokens (``N = Wh * Ww``), every (query, key) pair has a 2-D offset
``(dy, dx) = query - key`` with ``dy`` in ``[-(Wh-1), Wh-1]`` and ``dx`` in ``[-(Ww-1), Ww-1]``.
The steps below turn each offset into one integer in ``[0, (2Wh-1)(2Ww-1))`` so that a single
learnable table of that many rows can hold one bias per offset (and per head):

    grid_coordinates -> flatten_coordinates -> pairwise_offsets
        -> shift_offsets -> multiply_row_offsets -> sum_offsets

``relative_position_index`` composes them and ``offset_to_index`` applies the last three to one
offset (so the row formula is written nowhere else); ``make_bias_table`` makes the table and
``lookup_bias`` reads ``B`` out of it. Two controlled variants reuse the offsets:
``wrap_offsets`` takes them around a ring (a window that spans a whole axis of a torus) and
``magnitude_index`` keeps only ``(|dy|, |dx|)``.

The window code built on them, ``BiasTable`` (``pos="rel"``), lives in ``companion.bias_table``;
the table's resizing to another window in ``companion.resize``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from companion._checks import (
    check_int_in_range,
    check_offset_in_window,
    check_pairs_fit_in_memory,
    check_positive_int,
    to_pair,
)
from companion.layers import trunc_normal_

WindowSize = int | tuple[int, int]


def grid_coordinates(window_size: WindowSize) -> Tensor:
    """Row and column number of every cell of the window.

    Returns a ``(2, Wh, Ww)`` int64 tensor: ``[0]`` holds row numbers, ``[1]`` column numbers.
    """
    wh, ww = to_pair("window_size", window_size)
    rows, cols = torch.meshgrid(torch.arange(wh), torch.arange(ww), indexing="ij")
    return torch.stack((rows, cols))


def flatten_coordinates(coords: Tensor) -> Tensor:
    """``(2, Wh, Ww)`` -> ``(2, N)``: token ``i`` is cell ``(i // Ww, i % Ww)``, row-major order."""
    if coords.dim() != 3 or coords.shape[0] != 2:
        raise ValueError(f"coords must have shape (2, Wh, Ww), got {tuple(coords.shape)}")
    return coords.flatten(1)


def pairwise_offsets(coords_flat: Tensor) -> Tensor:
    """``(2, N)`` -> ``(N, N, 2)``: entry ``[q, k]`` is ``coords[q] - coords[k]`` (query minus key).

    Broadcasting ``(2, N, 1) - (2, 1, N)`` makes every pair at once; the permute puts the
    ``(dy, dx)`` pair last so that ``offsets[q, k]`` reads as one 2-D offset.
    """
    if coords_flat.dim() != 2 or coords_flat.shape[0] != 2:
        raise ValueError(f"coords_flat must have shape (2, N), got {tuple(coords_flat.shape)}")
    offsets = coords_flat[:, :, None] - coords_flat[:, None, :]
    return offsets.permute(1, 2, 0).contiguous()


def shift_offsets(offsets: Tensor, window_size: WindowSize) -> Tensor:
    """Add ``Wh - 1`` to row offsets and ``Ww - 1`` to column offsets, making both non-negative.

    ``(N, N, 2)`` -> ``(N, N, 2)`` with ``dy + Wh - 1`` in ``[0, 2Wh-2]`` and ``dx + Ww - 1`` in
    ``[0, 2Ww-2]``.
    """
    wh, ww = to_pair("window_size", window_size)
    return offsets + torch.tensor([wh - 1, ww - 1], dtype=offsets.dtype)


def multiply_row_offsets(shifted: Tensor, window_size: WindowSize) -> Tensor:
    """Multiply the shifted row offset by ``2Ww - 1``, the number of distinct column offsets.

    ``(N, N, 2)`` -> ``(N, N, 2)``. After this, row offsets step in strides of ``2Ww - 1``, so
    adding a column offset (at most ``2Ww - 2``) can never reach the next row's value: this is
    the row-major numbering of a ``(2Wh-1) x (2Ww-1)`` grid of offsets.
    """
    _, ww = to_pair("window_size", window_size)
    return shifted * torch.tensor([2 * ww - 1, 1], dtype=shifted.dtype)


def sum_offsets(scaled: Tensor) -> Tensor:
    """``(N, N, 2)`` -> ``(N, N)``: add the two parts into one table row number."""
    return scaled.sum(-1)


def wrap_offsets(offsets: Tensor, window_size: WindowSize, wrap: tuple[bool, bool]) -> Tensor:
    """Offsets ``(..., 2)`` taken around a ring of the window's length ``M`` on each axis where
    ``wrap`` is true (into ``[-(M // 2), (M - 1) // 2]``): the window is a whole axis of a torus,
    and the tokens at its two ends are neighbours."""
    wrapped = offsets.clone()
    for axis, (size, wraps) in enumerate(
        zip(to_pair("window_size", window_size), wrap, strict=True)
    ):
        if wraps:
            wrapped[..., axis] = (offsets[..., axis] + size // 2) % size - size // 2
    return wrapped


def window_offsets(window_size: WindowSize, wrap: tuple[bool, bool] = (False, False)) -> Tensor:
    """``(N, N, 2)`` offsets ``query - key`` of every pair of the window (the first three steps),
    taken around a ring on the axes where ``wrap`` is true (``wrap_offsets``)."""
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(window_size)))
    return wrap_offsets(offsets, window_size, wrap) if any(wrap) else offsets


def relative_position_index(
    window_size: WindowSize, wrap: tuple[bool, bool] = (False, False)
) -> Tensor:
    """The ``(N, N)`` int64 index into the bias table, for a window of ``window_size``.

    ``window_size`` is an int ``M`` (an ``M x M`` window) or a pair ``(Wh, Ww)``. ``wrap``: see
    ``wrap_offsets`` (Swin's index has none).
    """
    check_pairs_fit_in_memory("window_size", window_size)
    coords = grid_coordinates(window_size)
    offsets = pairwise_offsets(flatten_coordinates(coords))
    if any(wrap):  # a controlled variant: a window that is a whole axis of a torus
        offsets = wrap_offsets(offsets, window_size, wrap)
    scaled = multiply_row_offsets(shift_offsets(offsets, window_size), window_size)
    return sum_offsets(scaled)


def magnitude_index(offsets: Tensor, window_size: WindowSize) -> Tensor:
    """Offsets ``(..., 2)`` -> rows ``|dy| * Ww + |dx|`` of a ``Wh * Ww``-row table.

    A controlled variant of the shift, multiply and sum steps: offsets that differ only in sign
    (``(1, 2)``, ``(-1, 2)``, ``(1, -2)``, ``(-1, -2)``) share one row, so the bias knows how far
    apart two tokens are along each axis but not which one is left of or above the other.
    """
    _, ww = to_pair("window_size", window_size)
    magnitude = offsets.abs()
    return magnitude[..., 0] * ww + magnitude[..., 1]


def bias_table_size(window_size: WindowSize) -> int:
    """Number of distinct offsets, hence rows of the bias table: ``(2Wh-1) * (2Ww-1)``."""
    wh, ww = to_pair("window_size", window_size)
    return (2 * wh - 1) * (2 * ww - 1)


def make_bias_table(window_size: WindowSize, num_heads: int) -> nn.Parameter:
    """A ``((2Wh-1)(2Ww-1), num_heads)`` parameter, initialised with ``trunc_normal_(std=.02)``.

    Small random values (rather than zeros) give each head a slightly different starting bias;
    ``.02`` is Swin's choice for this table and ViT's for its position embedding (not for every
    parameter: timm's ViT starts its class token at ``std=1e-6``, the original JAX ViT at zeros).
    """
    check_positive_int("num_heads", num_heads)
    table = nn.Parameter(torch.zeros(bias_table_size(window_size), num_heads))
    trunc_normal_(table, std=0.02)
    return table


def lookup_bias(table: Tensor, index: Tensor) -> Tensor:
    """Gather ``B``: ``table`` ``(T, H)`` and ``index`` ``(N, N)`` -> bias ``(H, N, N)``.

    ``B[h, q, k] = table[index[q, k], h]``: pairs with the same offset share one learned value.
    """
    n = index.shape[0]
    return table[index.view(-1)].view(n, n, -1).permute(2, 0, 1).contiguous()


def offset_to_index(dy: int, dx: int, window_size: WindowSize) -> int:
    """The bias-table row of the offset ``(dy, dx) = query - key``: shift, multiply, sum.

    ``(dy + Wh - 1) * (2Ww - 1) + (dx + Ww - 1)``, the same number ``relative_position_index``
    puts at every pair with this offset. ``dy`` must lie in ``[-(Wh-1), Wh-1]`` and ``dx`` in
    ``[-(Ww-1), Ww-1]``: no two tokens of the window are further apart than that.
    """
    check_offset_in_window(dy, dx, window_size)
    offset = torch.tensor([dy, dx])  # the last three steps, on one offset
    return int(sum_offsets(multiply_row_offsets(shift_offsets(offset, window_size), window_size)))


def index_to_offset(index: int, window_size: WindowSize) -> tuple[int, int]:
    """Inverse of ``offset_to_index``: the offset ``(dy, dx)`` stored in table row ``index``.

    ``index`` must lie in ``[0, (2Wh-1)(2Ww-1))``. ``divmod`` by ``2Ww - 1`` undoes the multiply
    (the quotient is the shifted row offset, the remainder the shifted column offset), then the
    shift is undone.
    """
    wh, ww = to_pair("window_size", window_size)
    rows = bias_table_size((wh, ww))
    check_int_in_range("index", index, 0, rows - 1, f"(the table has {rows} rows)")
    row, col = divmod(index, 2 * ww - 1)
    return row - (wh - 1), col - (ww - 1)
