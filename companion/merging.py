"""Patch merging: how a Swin stage halves its map and doubles its channels.

``merge_groups`` stacks each 2 x 2 group of neighbours into one vector; ``PatchMerging`` (Swin's)
normalises and projects that concatenation, so the order of the four neighbours (where in its
group a feature was) reaches the next stage. ``PoolMerging`` is a controlled variant that
averages the group instead and so forgets that order (``companion.swin``'s
``patch_merging="avgpool"``).
"""

from __future__ import annotations

from typing import Literal, get_args

from torch import Tensor, nn

from companion._checks import check_positive_int
from companion.window import pad_to_windows

PatchMergingKind = Literal["concat", "avgpool"]
PATCH_MERGING_CHOICES: tuple[PatchMergingKind, ...] = get_args(PatchMergingKind)


def merged_resolution(resolution: tuple[int, int]) -> tuple[int, int]:
    """The map ``(⌈H/2⌉, ⌈W/2⌉)`` that merging 2 x 2 groups leaves of an ``(H, W)`` map (an odd
    side is padded first): the one statement of each stage's size."""
    return (resolution[0] + 1) // 2, (resolution[1] + 1) // 2


def merge_groups(x: Tensor) -> Tensor:
    """Concatenate each 2 x 2 group of neighbours: ``(B, H, W, C)`` -> ``(B, ⌈H/2⌉, ⌈W/2⌉, 4C)``.

    The order is top-left, bottom-left, top-right, bottom-right (the reference order: pretrained
    weights depend on it). An odd side is zero-padded at the bottom/right first.
    """
    x = pad_to_windows(x, 2)
    b, h, w, c = x.shape
    # (B, H/2, row-in-group, W/2, col-in-group, C) -> (B, H/2, W/2, col, row, C) -> 4C channels
    return x.view(b, h // 2, 2, w // 2, 2, c).permute(0, 1, 3, 4, 2, 5).flatten(3)


class PatchMerging(nn.Module):
    """Halve the resolution and double the channels: ``(B, H, W, C)`` -> ``(B, ⌈H/2⌉, ⌈W/2⌉, 2C)``.

    ``merge_groups`` stacks each 2 x 2 group into one ``4C`` vector, which is normalised and
    projected to ``2C`` channels: the resolution halves, as in a CNN's strided stage.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = check_positive_int("dim", dim)
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.reduction(self.norm(merge_groups(x)))


class PoolMerging(nn.Module):
    """An order-free patch merging (a controlled variant): ``(B, H, W, C)`` -> ``(B, ⌈H/2⌉,
    ⌈W/2⌉, 2C)``.

    Each 2 x 2 group is *averaged* instead of concatenated, then normalised and projected to
    ``2C``. Permuting the four neighbours of a group changes nothing, so, unlike
    ``PatchMerging``, the merge itself tells the next stage nothing about where inside its group
    a feature was.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = check_positive_int("dim", dim)
        self.norm = nn.LayerNorm(dim)
        self.reduction = nn.Linear(dim, 2 * dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        groups = merge_groups(x)  # (B, H/2, W/2, 4C): the four neighbours side by side
        mean = groups.unflatten(-1, (4, x.shape[-1])).mean(3)  # (B, H/2, W/2, C)
        return self.reduction(self.norm(mean))
