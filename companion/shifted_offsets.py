"""Offsets under the shifted-window mask: why one bias table still fits the shifted blocks.

A shifted block looks up its bias with the same ``relative_position_index`` as a regular block,
i.e. by where query and key sit *inside the window*. That is only right if, for every pair the
mask lets through, the in-window offset equals the tokens' true offset in the image. It does:
a kept pair comes from one region of the rolled map, which was contiguous in the image, so the
roll moved both tokens by the same amount. The pairs the roll brought together across the border
are the ones whose in-window offset is wrong (by a whole map height or width), and exactly those
are masked. :func:`shifted_pair_offsets` computes both offsets for every pair, so the claim can be
checked rather than believed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from companion._checks import to_pair
from companion.relative import (
    WindowSize,
    flatten_coordinates,
    grid_coordinates,
    pairwise_offsets,
)
from companion.window import cyclic_shift, shifted_window_mask, window_partition


@dataclass
class ShiftedPairOffsets:
    """Both offsets of every (window, query, key) pair of a cyclically shifted map.

    ``in_window``: ``(N, N, 2)``, query minus key from their places in the window (what the bias
    lookup uses, the same for every window). ``image``: ``(nW, N, N, 2)``, query minus key from
    the tokens' original image coordinates. ``kept``: ``(nW, N, N)`` bool, the pairs the mask
    lets through.
    """

    in_window: Tensor
    image: Tensor
    kept: Tensor

    @property
    def agrees(self) -> Tensor:
        """``(nW, N, N)`` bool: the in-window offset is the true image offset."""
        return (self.image == self.in_window).all(dim=-1)

    def summary(self) -> str:
        kept, agrees = self.kept, self.agrees
        return (
            f"kept pairs: {int(kept.sum())}, with their true offset: {int((agrees & kept).sum())}\n"
            f"masked pairs: {int((~kept).sum())}, with their true offset: "
            f"{int((agrees & ~kept).sum())}"
        )


def shifted_pair_offsets(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> ShiftedPairOffsets:
    """In-window and true image offsets of every pair, and the mask, for a shifted map.

    ``height``, ``width``: multiples of the window size; ``shift_size``: as for
    ``companion.window.cyclic_shift``.
    """
    wh, ww = to_pair("window_size", window_size)
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    where = torch.stack([rows, cols], dim=-1)[None]  # (1, H, W, 2): each token's image position
    rolled = cyclic_shift(where, shift_size)
    positions = window_partition(rolled, (wh, ww)).reshape(-1, wh * ww, 2)  # (nW, N, 2)
    image = positions[:, :, None, :] - positions[:, None, :, :]  # (nW, N, N, 2)
    in_window = pairwise_offsets(flatten_coordinates(grid_coordinates((wh, ww))))
    kept = shifted_window_mask(height, width, (wh, ww), shift_size) == 0
    return ShiftedPairOffsets(in_window=in_window, image=image, kept=kept)


def wrapped_offset_errors(offsets: ShiftedPairOffsets) -> Tensor:
    """The distinct ``image - in_window`` differences of the masked pairs, ``(K, 2)``, sorted.

    Each is a whole map height and/or width: what the bias would have been wrong by, had the
    mask let those pairs through.
    """
    diff = offsets.image - offsets.in_window  # (nW, N, N, 2)
    return torch.unique(diff[~offsets.kept], dim=0)
