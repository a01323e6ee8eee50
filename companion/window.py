"""Windows over a feature map: partition, reverse, cyclic shift, padding, shifted-window mask.

Swin computes self-attention inside non-overlapping windows of ``Wh x Ww`` tokens. Every helper
here works on channels-last feature maps ``(B, H, W, C)``, the layout Swin keeps between blocks,
because a window is then a plain reshape away.

Every other block shifts the map by half a window with ``torch.roll`` (a *cyclic* shift), so that
windows straddle the previous block's window borders. Rolling moves the bottom rows and right
columns around to the top and left; tokens that were far apart in the image then share a window.
``shifted_window_mask`` stops them from attending to each other.

The offsets under that mask, at the end: why one bias table still fits the shifted blocks. A
shifted block looks up its bias with the same ``relative_position_index`` as a regular block,
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
import torch.nn.functional as F
from torch import Tensor

from companion._checks import to_pair
from companion.relative import (
    WindowSize,
    flatten_coordinates,
    grid_coordinates,
    pairwise_offsets,
)

#: Added to the attention logits of forbidden (query, key) pairs. Large enough that
#: ``exp(-100)`` is ~1e-44, i.e. zero after softmax, yet finite, so a row can never be all
#: ``-inf`` (which would give NaN). It is the value of the reference implementation.
MASK_VALUE = -100.0


def _check_map(name: str, x: Tensor) -> None:
    if not isinstance(x, Tensor) or x.dim() != 4:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a (B, H, W, C) tensor, got {shape}")


def _check_multiple(height: int, width: int, window: tuple[int, int], name: str) -> None:
    if height % window[0] or width % window[1]:
        raise ValueError(
            f"{name} of size (H, W)=({height}, {width}) must be a multiple of "
            f"window_size={window}; pad it first with pad_to_windows"
        )


def tiles_exactly(resolution: tuple[int, int], window_size: tuple[int, int]) -> bool:
    """Whether windows of ``window_size`` (clamped to the map, as a block clamps them) tile an
    ``(H, W)`` map with no padding: the rule of a torus, where padding would bring a border back."""
    return all(r % min(r, w) == 0 for r, w in zip(resolution, window_size, strict=True))


def window_partition(x: Tensor, window_size: WindowSize) -> Tensor:
    """Cut a feature map into non-overlapping windows.

    Args:
        x: ``(B, H, W, C)`` with ``H`` a multiple of ``Wh`` and ``W`` a multiple of ``Ww``.
        window_size: ``M`` or ``(Wh, Ww)``.

    Returns:
        ``(B * nW, Wh, Ww, C)`` with ``nW = (H / Wh) * (W / Ww)``. Windows are numbered row-major
        within each image, and all windows of image 0 come first: window ``w`` of image ``b`` is at
        index ``b * nW + w``.
    """
    _check_map("x", x)
    wh, ww = to_pair("window_size", window_size)
    b, h, w, c = x.shape
    _check_multiple(h, w, (wh, ww), "x")
    # Split each spatial axis into (number of windows, position inside the window), then bring the
    # two "which window" axes next to the batch axis.
    x = x.view(b, h // wh, wh, w // ww, ww, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, wh, ww, c)


def window_reverse(windows: Tensor, window_size: WindowSize, height: int, width: int) -> Tensor:
    """Undo ``window_partition``: ``(B * nW, Wh, Ww, C)`` -> ``(B, height, width, C)``."""
    _check_map("windows", windows)
    wh, ww = to_pair("window_size", window_size)
    _check_multiple(height, width, (wh, ww), "the map")
    if windows.shape[1:3] != (wh, ww):
        raise ValueError(
            f"windows must have shape (B*nW, {wh}, {ww}, C) for window_size={(wh, ww)}, "
            f"got {tuple(windows.shape)}"
        )
    nh, nw = height // wh, width // ww
    if windows.shape[0] % (nh * nw):
        raise ValueError(
            f"windows.shape[0]={windows.shape[0]} must be a multiple of the {nh * nw} windows "
            f"of a ({height}, {width}) map"
        )
    c = windows.shape[-1]
    x = windows.view(-1, nh, nw, wh, ww, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, height, width, c)


def cyclic_shift(x: Tensor, shift_size: WindowSize, inverse: bool = False) -> Tensor:
    """Roll a ``(B, H, W, C)`` map up by ``sh`` rows and left by ``sw`` columns (or back).

    ``shift_size`` is ``s`` or ``(sh, sw)``; ``0`` on an axis means no shift there. Token
    ``(i, j)`` of the result is token ``((i + sh) % H, (j + sw) % W)`` of ``x``; ``inverse=True``
    rolls the other way, so ``cyclic_shift(cyclic_shift(x, s), s, inverse=True)`` is ``x``.
    """
    _check_map("x", x)
    sh, sw = to_shift_pair(shift_size)
    if inverse:
        return torch.roll(x, shifts=(sh, sw), dims=(1, 2))
    return torch.roll(x, shifts=(-sh, -sw), dims=(1, 2))


def to_shift_pair(shift_size: WindowSize) -> tuple[int, int]:
    """``s`` or ``(sh, sw)`` -> ``(sh, sw)``; unlike a window size, a shift may be 0 on an axis
    (where one window covers the whole axis). Raises ``ValueError`` naming ``shift_size``."""
    pair = (shift_size, shift_size) if isinstance(shift_size, int) else tuple(shift_size)
    if (
        len(pair) != 2
        or any(isinstance(s, bool) or not isinstance(s, int) for s in pair)
        or min(pair) < 0
    ):
        raise ValueError(
            f"shift_size must be an int >= 0 or a pair (sh, sw) of ints >= 0, got {shift_size!r}"
        )
    return pair


def pad_to_windows(x: Tensor, window_size: WindowSize) -> Tensor:
    """Zero-pad ``(B, H, W, C)`` at the bottom and right up to ``(B, Hp, Wp, C)``.

    ``Hp`` and ``Wp`` are the next multiples of ``Wh`` and ``Ww``; a map that already fits is
    returned as is.
    """
    _check_map("x", x)
    wh, ww = to_pair("window_size", window_size)
    _, h, w, _ = x.shape
    pad_h, pad_w = -h % wh, -w % ww
    if pad_h == 0 and pad_w == 0:
        return x
    # F.pad lists (before, after) pairs from the last axis backwards: C, then W, then H.
    return F.pad(x, (0, 0, 0, pad_w, 0, pad_h))


def shifted_window_regions(
    height: int, width: int, window_size: WindowSize, shift_size: WindowSize
) -> Tensor:
    """Label every token of a cyclically shifted ``height x width`` map by where it came from.

    Along each axis the shifted map has three bands: positions ``[0, H - Wh)`` whose windows hold
    only tokens that were neighbours before the shift, ``[H - Wh, H - sh)`` the last window's
    tokens that did not wrap, and ``[H - sh, H)`` the tokens that wrapped around from the top.
    Returns a ``(height, width)`` int64 tensor ``3 * row_band + col_band`` (values in 0..8).
    Two tokens of one window may attend to each other only if their labels are equal.
    """
    wh, ww = to_pair("window_size", window_size)
    sh, sw = to_shift_pair(shift_size)
    _check_multiple(height, width, (wh, ww), "the map")

    def bands(size: int, window: int, shift: int) -> Tensor:
        band = torch.zeros(size, dtype=torch.long)
        band[size - window :] = 1
        band[size - shift :] = 2  # empty when shift == 0: nothing wrapped
        return band

    return 3 * bands(height, wh, sh)[:, None] + bands(width, ww, sw)[None, :]


def shifted_window_mask(
    height: int,
    width: int,
    window_size: WindowSize,
    shift_size: WindowSize,
    mask_value: float = MASK_VALUE,
    device: torch.device | str | None = None,
) -> Tensor:
    """The additive attention mask of a cyclically shifted map, one ``(N, N)`` matrix per window.

    Args:
        height, width: size of the (padded) map, multiples of the window size.
        window_size: ``M`` or ``(Wh, Ww)``; ``N = Wh * Ww``.
        shift_size: ``s`` or ``(sh, sw)``, the shift applied by ``cyclic_shift``.
        mask_value: added to the logits of pairs from different regions.

    Returns:
        ``(nW, N, N)`` float32: ``mask[w, q, k]`` is ``0`` when query ``q`` and key ``k`` of window
        ``w`` came from the same region of the shifted map and ``mask_value`` otherwise.
    """
    wh, ww = to_pair("window_size", window_size)
    labels = shifted_window_regions(height, width, (wh, ww), shift_size)
    # One label per token of each window: (nW, N).
    per_window = window_partition(labels[None, :, :, None], (wh, ww)).reshape(-1, wh * ww)
    different = per_window[:, :, None] != per_window[:, None, :]  # (nW, N, N)
    mask = torch.zeros(different.shape, dtype=torch.float32)
    return mask.masked_fill_(different, mask_value).to(device)


# --------------------------------------------------------------------------- offsets under the mask


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
    ``cyclic_shift``.
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
