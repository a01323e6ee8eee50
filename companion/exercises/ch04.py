"""Chapter 4 exercises: why the cyclic shift, the mask from first principles, how far information
travels through two blocks (and what the mask's -100 lets through), and what the relative
position bias costs in parameters."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from companion._checks import check_positive_int, to_pair
from companion.relative import WindowSize
from companion.swin import SwinBlock
from companion.window import (
    MASK_VALUE,
    cyclic_shift,
    shifted_window_mask,
    to_shift_pair,
    window_partition,
)

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py); an empty tuple is a question whose answer is no
#: value a reader could meet before (a yes or no, a picture, a quantity the exercise names).
ANSWERS: dict[int, tuple[str, ...]] = {
    1: ("81 windows",),  # windows of a 56 x 56 map shifted by 3 without the cyclic shift (M = 7)
    2: (),  # the same mask
    3: ("9.8e-45",),  # the largest weight a masked pair keeps at one attention layer
    4: ("23,322",),  # relative position biases in Swin-T
    5: ("(15, 64)",),  # windows with a masked pair, of all
}


def naive_shifted_window_count(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> int:
    """Exercise 1: windows needed when the shifted partition is used *without* the cyclic shift.

    Window borders then sit at ``s, s + M, s + 2M, ...`` on each axis, so besides the full windows
    there is a smaller window before the first border (when ``s > 0``) and one after the last.
    Each would be padded to ``M x M`` and attended separately. The cyclic shift keeps the count at
    ``(H / M) * (W / M)``, the same as the regular partition.
    """
    check_positive_int("height", height)
    check_positive_int("width", width)
    wh, ww = to_pair("window_size", window_size)
    sh, sw = to_shift_pair(shift_size)

    def per_axis(size: int, window: int, shift: int) -> int:
        return (1 if shift else 0) + math.ceil((size - shift) / window)

    return per_axis(height, wh, sh) * per_axis(width, ww, sw)


def mask_from_original_coordinates(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> Tensor:
    """Exercise 2: rebuild the shifted-window mask from where each token was before the roll.

    Roll a map of original ``(row, col)`` coordinates exactly as the features are rolled and cut it
    into windows. Two tokens of a window were neighbours in the image, and may attend to each
    other, when their original rows differ by less than ``Wh`` and their columns by less than
    ``Ww``; tokens brought together by the wrap-around are at least ``H - Wh + 1`` rows (or
    ``W - Ww + 1`` columns) apart. Returns ``(nW, N, N)`` with ``0`` / ``MASK_VALUE``, equal to
    ``companion.window.shifted_window_mask`` whenever the map holds at least two windows along
    each shifted axis.
    """
    wh, ww = to_pair("window_size", window_size)
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    coords = torch.stack((rows, cols), dim=-1)[None]  # (1, H, W, 2)
    per_window = window_partition(cyclic_shift(coords, shift_size), (wh, ww)).flatten(
        1, 2
    )  # (nW, N, 2)
    distance = (per_window[:, :, None, :] - per_window[:, None, :, :]).abs()  # (nW, N, N, 2)
    neighbours = (distance[..., 0] < wh) & (distance[..., 1] < ww)
    return torch.zeros(neighbours.shape).masked_fill_(~neighbours, MASK_VALUE)


def influence_map(blocks: nn.Module, x: Tensor, token: tuple[int, int]) -> Tensor:
    """Exercise 3: which tokens of the input ``x`` can change output token ``token`` of ``blocks``?

    ``blocks`` maps ``(1, H, W, C)`` to ``(1, H, W, C)`` (one ``SwinBlock``, or an
    ``nn.Sequential`` of them). Back-propagate from the output token to the input: a token
    influences it exactly when its gradient is non-zero. Returns an ``(H, W)`` bool tensor.
    """
    x = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(blocks(x)[0, token[0], token[1]].sum(), x)
    return grad[0].abs().sum(-1) != 0


def masked_pair_weights(block: SwinBlock, windows: Tensor) -> tuple[Tensor, Tensor]:
    """Exercise 3: the attention weights a shifted block's attention layer puts on the pairs its
    mask blocks, and on the pairs it keeps, as two 1-D tensors ``(masked, allowed)``.

    ``block``: a ``SwinBlock`` with a shift (its ``attn`` and its ``attn_mask``, ``(nW, N, N)``);
    ``windows``: ``(nW, N, C)`` tokens, one window each. The mask adds ``-100``, not ``-inf``, so
    a masked weight is about ``e^-100`` times an allowed one: a float32 subnormal, not 0.
    """
    mask = block.attn_mask
    if mask is None:
        raise ValueError("block must be a shifted block (its attn_mask is None)")
    if windows.dim() != 3 or windows.shape[:2] != mask.shape[:2]:
        raise ValueError(
            f"windows must have shape ({mask.shape[0]}, {mask.shape[1]}, C), "
            f"got {tuple(windows.shape)}"
        )
    with torch.no_grad():
        probs = block.attn.attention_probs(windows, mask)  # (nW, H, N, N)
    blocked = (mask != 0)[:, None].expand_as(probs)
    return probs[blocked], probs[~blocked]


def bias_table_parameters(model: nn.Module) -> int:
    """Exercise 4: the number of learned relative position biases in ``model``.

    Each block holds a ``((2Wh-1)(2Ww-1), heads)`` table: for Swin-T that is ``169 x heads`` per
    block, a tiny fraction of the network.
    """
    return sum(
        p.numel()
        for name, p in model.named_parameters()
        if name.endswith("relative_position_bias_table")
    )


def windows_with_masked_pairs(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> tuple[int, int]:
    """Exercise 5 (predict, then check): ``(windows with a masked pair, all windows)`` of a
    shifted map.

    Only windows that hold wrapped tokens need the mask: those in the last window row or the
    last window column, ``nH + nW - 1`` of ``nH * nW`` when both axes are shifted.
    """
    mask = shifted_window_mask(height, width, window_size, shift_size)
    return int((mask != 0).any(dim=(1, 2)).sum()), mask.shape[0]
