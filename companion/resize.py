"""Resizing a relative position bias table to another window, to move a trained Swin to another
window or image size.

A bias table ``((2Wh-1)(2Ww-1), H)`` is, per head, an image on the grid of offsets
``dy in [-(Wh-1), Wh-1]`` x ``dx in [-(Ww-1), Ww-1]``. A larger window has more offsets, so the
table must be resampled onto the larger grid. Two ways are in use:

* ``"bicubic"``: treat the table as a ``(2Wh-1) x (2Ww-1)`` picture and resize it with bicubic
  interpolation (``align_corners=False``). This is what the official Swin code does when it
  fine-tunes at a new window. The picture is *stretched*: offset 1 of the old window lands near
  offset ``1 * (2Wh'-1)/(2Wh-1)`` of the new one, so the short offsets lose their values.
* ``"geometric"``: BEiT's placement. The old offsets are placed at positions that grow
  geometrically, ``0, ±1, ±(1+q), ±(1+q+q²), ...``, with the ratio ``q`` chosen so that the largest
  old offset lands on the largest new offset; the new integer offsets are then read off by
  piecewise-linear interpolation (timm's path without SciPy; BEiT's own code and timm with SciPy
  read them off with a cubic interpolant instead). Offsets near 0 keep their spacing of about 1
  (``q`` is close to 1), and only the long offsets, which matter least, are stretched.

``companion.swin.SwinTransformer.set_input_size`` uses them to move a whole model: every block's
window, shift, mask and table (resized here, by each table's ``RelativePositionBias.resize`` in
``companion.bias_table``), and the absolute embedding when there is one.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from companion._checks import check_choice, to_pair
from companion.relative import WindowSize, bias_table_size

ResizeMethod = Literal["bicubic", "geometric"]
RESIZE_METHODS: tuple[ResizeMethod, ...] = get_args(ResizeMethod)

# BEiT searches the ratio q of the geometric spacing in [1.01, 1.5] by bisection to this width.
_RATIO_LOW, _RATIO_HIGH, _RATIO_TOL = 1.01, 1.5, 1e-6


def _check_table(table: Tensor, window: tuple[int, int]) -> None:
    if (
        not isinstance(table, Tensor)
        or table.dim() != 2
        or table.shape[0] != bias_table_size(window)
    ):
        shape = tuple(table.shape) if isinstance(table, Tensor) else type(table).__name__
        raise ValueError(
            f"table must have shape ((2Wh-1)(2Ww-1), H) = ({bias_table_size(window)}, H) for "
            f"old_window={window}, got {shape}"
        )


def table_as_images(table: Tensor, window_size: WindowSize) -> Tensor:
    """``((2Wh-1)(2Ww-1), H)`` -> ``(H, 2Wh-1, 2Ww-1)``: one picture per head, row ``dy``, column
    ``dx`` (offset ``(0, 0)`` in the centre). Table row ``r`` is offset ``index_to_offset(r)``, so
    the rows are already the pixels of this picture in row-major order."""
    wh, ww = to_pair("window_size", window_size)
    _check_table(table, (wh, ww))
    return table.T.reshape(-1, 2 * wh - 1, 2 * ww - 1)


def images_as_table(images: Tensor) -> Tensor:
    """Inverse of ``table_as_images``: ``(H, 2Wh-1, 2Ww-1)`` -> ``((2Wh-1)(2Ww-1), H)``."""
    return images.flatten(1).T.contiguous()


def geometric_ratio(old_side: int, new_side: int) -> float:
    """The ratio ``q`` of BEiT's spacing for one axis of the offset grid.

    ``old_side = 2W - 1`` and ``new_side = 2W' - 1`` are the grid sides. ``q`` makes the largest
    old offset, placed at ``1 + q + ... + q^(W-2)``, land on the largest new offset ``W' - 1``.
    It is searched by bisection in ``[1.01, 1.5]``, as BEiT does, so a shrinking or unchanged axis
    gets ``q = 1.01`` (a slight stretch), not ``q <= 1``.
    """
    steps, target = old_side // 2, new_side // 2
    low, high = _RATIO_LOW, _RATIO_HIGH
    while high - low > _RATIO_TOL:
        q = (low + high) / 2
        reach = (1 - q**steps) / (1 - q)  # 1 + q + ... + q^(steps-1)
        if reach > target:
            high = q
        else:
            low = q
    return q


def geometric_positions(old_side: int, new_side: int) -> Tensor:
    """Where the ``old_side`` old offsets of one axis sit on the new axis: ``(old_side,)`` float.

    ``0`` for offset 0, ``±(1 + q + ... + q^(k-1))`` for offset ``±k``: the spacing starts at 1 and
    grows by ``q`` each step outwards.
    """
    q = geometric_ratio(old_side, new_side)
    steps = torch.arange(old_side // 2, dtype=torch.float64)
    outward = torch.cumsum(q**steps, 0)  # 1, 1+q, 1+q+q², ...
    return torch.cat((-outward.flip(0), torch.zeros(1, dtype=torch.float64), outward)).float()


def linear_interpolation_matrix(points: Tensor, targets: Tensor) -> Tensor:
    """``(T, P)`` weights that linearly interpolate values given at sorted ``points`` ``(P,)``
    at ``targets`` ``(T,)``; a target outside ``[points[0], points[-1]]`` takes the end value.

    Row ``t`` has at most two non-zero weights (the neighbours of ``targets[t]``) summing to 1, so
    ``matrix @ values`` interpolates and ``Ay @ image @ Axᵀ`` is bilinear interpolation of an image.
    """
    p = points.numel()
    if p == 1:  # a window of 1 has the single offset 0: every target takes its value
        return torch.ones(targets.numel(), 1, dtype=points.dtype)
    right = torch.bucketize(targets, points).clamp(1, p - 1)  # first point >= target
    left = right - 1
    span = points[right] - points[left]
    w_right = ((targets - points[left]) / span).clamp(0, 1)
    matrix = torch.zeros(targets.numel(), p, dtype=points.dtype)
    rows = torch.arange(targets.numel())
    matrix[rows, left] = 1 - w_right
    matrix[rows, right] += w_right
    return matrix


def resize_bias_table(
    table: Tensor,
    old_window: WindowSize,
    new_window: WindowSize,
    method: ResizeMethod = "geometric",
) -> Tensor:
    """Resample a relative position bias table to another window size.

    Args:
        table: ``((2Wh-1)(2Ww-1), H)``, one column per head.
        old_window: ``(Wh, Ww)`` (or ``M``) the table was made for.
        new_window: ``(Wh', Ww')`` (or ``M'``); larger, smaller or non-square.
        method: ``"bicubic"`` or ``"geometric"`` (see the module docstring).

    Returns:
        ``((2Wh'-1)(2Ww'-1), H)`` in ``table``'s dtype; ``table`` itself when the windows match.
    """
    old, new = to_pair("old_window", old_window), to_pair("new_window", new_window)
    check_choice("method", method, RESIZE_METHODS)
    _check_table(table, old)
    if old == new:
        return table
    images = table_as_images(table.detach(), old).float()  # (H, 2Wh-1, 2Ww-1)
    new_sides = (2 * new[0] - 1, 2 * new[1] - 1)
    if method == "bicubic":
        resized = F.interpolate(images[None], size=new_sides, mode="bicubic", align_corners=False)[
            0
        ]
    else:
        # Separable: interpolate along dy with Ay, along dx with Ax (old positions -> new offsets).
        ay, ax = (
            linear_interpolation_matrix(
                geometric_positions(2 * o - 1, side),
                torch.arange(-(side // 2), side // 2 + 1, dtype=torch.float32),
            )
            for o, side in zip(old, new_sides, strict=True)
        )
        resized = ay.to(images.device) @ images @ ax.to(images.device).T
    return images_as_table(resized).to(table.dtype)


def check_resize_method(method: object) -> ResizeMethod:
    """``method`` if it is one of ``RESIZE_METHODS``, else ``ValueError`` naming it."""
    return check_choice("method", method, RESIZE_METHODS)


@torch.no_grad()
def resized_table_parameter(
    table: nn.Parameter, old_window: WindowSize, new_window: WindowSize, method: ResizeMethod
) -> nn.Parameter:
    """``resize_bias_table`` as a new ``nn.Parameter`` that keeps ``requires_grad``."""
    resized = resize_bias_table(table.detach(), old_window, new_window, method)
    return nn.Parameter(resized.clone(), requires_grad=table.requires_grad)


@torch.no_grad()
def magnitude_table_parameter(
    signed: Tensor,
    old_window: WindowSize,
    new_window: WindowSize,
    method: ResizeMethod,
    requires_grad: bool = True,
) -> nn.Parameter:
    """A ``"magnitude"`` table ``(Wh' * Ww', H)`` for ``new_window`` from the signed table
    ``((2Wh-1)(2Ww-1), H)`` it stands for: resize that (``resize_bias_table``), then keep the
    quadrant ``dy, dx >= 0``, whose rows are ``|dy| * Ww' + |dx|``."""
    wh, ww = to_pair("new_window", new_window)
    resized = resize_bias_table(signed.detach(), old_window, (wh, ww), method)
    quadrant = resized.view(2 * wh - 1, 2 * ww - 1, -1)[wh - 1 :, ww - 1 :]
    return nn.Parameter(quadrant.reshape(wh * ww, -1).clone(), requires_grad=requires_grad)
