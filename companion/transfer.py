"""Moving a trained Swin to another window or image size: resizing the relative position bias table.

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
window, shift, mask and table (resized here), and the absolute embedding when there is one.

Swin's window code, ``BiasTable`` (``pos="rel"``, ``companion.position``), is at the end: each
window attention holds a ``RelativePositionBias``, the table and its index (chapters 2-3), which
adds ``B`` to the logits and resizes itself with the functions above.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import ClassVar, Literal, Self, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from companion._checks import check_bool, check_choice, to_pair
from companion.position import PositionTerm, WindowCode, register
from companion.relative import (
    WindowSize,
    bias_table_size,
    index_to_offset,
    lookup_bias,
    magnitude_index,
    make_bias_table,
    relative_position_index,
    window_offsets,
)
from companion.trunc_normal import trunc_normal_

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


RelBiasOffsets = Literal["signed", "magnitude"]
REL_BIAS_OFFSETS: tuple[RelBiasOffsets, ...] = get_args(RelBiasOffsets)


@dataclass(frozen=True)
class BiasTable(WindowCode):
    """Swin's learned relative position bias ``B``, looked up from a table by offset.

    ``offsets``: ``"signed"`` (Swin: one row per offset ``(dy, dx)``, a ``(2Wh-1)(2Ww-1)``-row
    table) or ``"magnitude"`` (a controlled variant: one row per ``(|dy|, |dx|)``, a
    ``Wh * Ww``-row table; ``magnitude_index``). ``wrap``: per axis, whether offsets are taken
    around a ring (``wrap_offsets``), for a window that spans a whole axis of a feature map
    treated as a torus.
    """

    color: ClassVar[str] = "#d62728"
    has_table: ClassVar[bool] = True
    can_wrap: ClassVar[bool] = True
    with_absolute: ClassVar[bool] = True
    resize_methods: ClassVar[tuple[str, ...]] = RESIZE_METHODS

    offsets: RelBiasOffsets = "signed"
    wrap: tuple[bool, bool] = (False, False)

    def __post_init__(self) -> None:
        check_choice("offsets", self.offsets, REL_BIAS_OFFSETS)
        if not (isinstance(self.wrap, tuple) and len(self.wrap) == 2):
            raise TypeError(f"wrap must be a pair (bool, bool), got {self.wrap!r}")
        for wraps in self.wrap:
            check_bool("wrap", wraps)

    def __repr__(self) -> str:
        # Only what differs from Swin's own table, so that Swin's prints as BiasTable().
        changed = [f for f in fields(self) if getattr(self, f.name) != f.default]
        return f"BiasTable({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in changed)})"

    @property
    def name(self) -> str:
        return "rel"

    def index(self, window_size: tuple[int, int]) -> Tensor:
        """The ``(N, N)`` table row of every (query, key) pair."""
        if self.offsets == "signed":
            return relative_position_index(window_size, self.wrap)
        return magnitude_index(window_offsets(window_size, self.wrap), window_size)

    def table(self, window_size: tuple[int, int], num_heads: int) -> nn.Parameter:
        """A new table, ``trunc_normal_(std=.02)`` as Swin's, with one row per index value."""
        if self.offsets == "signed":
            return make_bias_table(window_size, num_heads)
        table = nn.Parameter(torch.zeros(window_size[0] * window_size[1], num_heads))
        trunc_normal_(table, std=0.02)
        return table

    def build(
        self, window_size: tuple[int, int], num_heads: int, head_dim: int
    ) -> RelativePositionBias:
        return RelativePositionBias(self, window_size, num_heads)

    def on_torus(self, spans: tuple[bool, bool]) -> Self:
        # On a torus, a window that spans a whole axis has no ends on it: its offsets wrap.
        return dataclasses.replace(self, wrap=spans)


class RelativePositionBias(PositionTerm):
    """``BiasTable``'s term: ``B = relative_position_bias_table[relative_position_index]``.

    Attributes:
        relative_position_bias_table: parameter ``(T, H)``, one learned bias per table row and
            head (``T = (2Wh-1)(2Ww-1)``, or ``Wh * Ww`` with ``offsets="magnitude"``).
        relative_position_index: non-persistent buffer ``(N, N)``, the row of every pair.

    In a checkpoint the table sits on the attention module itself, as in timm's and the
    official Swin (``checkpoint_prefix=""``).
    """

    no_decay = ("relative_position_bias_table",)
    relative_position_index: Tensor

    def __init__(self, code: BiasTable, window_size: tuple[int, int], num_heads: int) -> None:
        super().__init__()
        self.code, self.window_size = code, window_size
        self.relative_position_bias_table = code.table(window_size, num_heads)
        index = code.index(window_size)
        self.register_buffer("relative_position_index", index, persistent=False)

    def bias(self) -> Tensor:
        return lookup_bias(self.relative_position_bias_table, self.relative_position_index)

    def offset_table(self) -> Tensor:
        """``((2Wh-1)(2Ww-1), H)`` in ``relative_position_index``'s row order, for either kind of
        table: with ``"magnitude"`` the rows of ``(dy, dx)``, ``(-dy, dx)``, ``(dy, -dx)`` are
        equal."""
        table = self.relative_position_bias_table
        if self.code.offsets == "signed":
            return table
        signed = range(bias_table_size(self.window_size))  # every row, in the signed order
        offsets = torch.tensor([index_to_offset(row, self.window_size) for row in signed])
        return table[magnitude_index(offsets, self.window_size)]

    def resize(self, window_size: tuple[int, int], method: str = "geometric") -> None:
        """Resize the table with ``method`` (``companion.transfer``) and recompute the index. A
        ``"magnitude"`` table is resized as the signed table it stands for. A table that wraps
        is refused: it never learned the offsets beyond half the window that a window without
        wrap needs."""
        if any(self.code.wrap):
            raise ValueError(
                f"set_window_size cannot move a window with wrap={self.code.wrap} (a torus "
                f"window): its offsets go around the ring; build the model at "
                f"window_size={window_size} instead"
            )
        table, old = self.relative_position_bias_table, self.window_size
        if self.code.offsets == "signed":
            resized = resized_table_parameter(table, old, window_size, check_resize_method(method))
        else:
            signed = self.offset_table()
            resized = magnitude_table_parameter(
                signed, old, window_size, check_resize_method(method), table.requires_grad
            )
        self.relative_position_bias_table = resized
        self.window_size = window_size
        index = self.code.index(window_size).to(table.device)
        self.register_buffer("relative_position_index", index, persistent=False)

    def extra_repr(self) -> str:
        return f"window_size={self.window_size}, code={self.code!r}"


#: Swin's own window code: the default of everything that takes one.
SWIN_CODE = register(BiasTable())
