"""Swin V2's continuous position bias: the bias is a small MLP of the log-spaced offset.

Swin v1 learns one number per offset and head, so a table learned for a 7 x 7 window has nothing
to say about offset 9. Swin V2 (Liu et al., CVPR 2022) computes the bias from the offset instead:

    B[h, q, k] = 16 · sigmoid( MLP(c(offset(q, k)))[h] )

where ``c`` maps the integer offset ``(dy, dx)`` to a point of ``[-8, 8]``-ish, log-spaced, one step
per function below:

    offset_grid -> normalise_offsets -> log_space        (= log_spaced_coordinates)

* ``offset_grid``: every offset of the window, ``(2Wh-1, 2Ww-1, 2)``, in the order of the bias
  table's rows (chapter 2's index).
* ``normalise_offsets``: divide by ``W - 1`` (the largest offset; the *pretraining* window's when
  one is given, so a larger window reaches beyond 1) and multiply by 8.
* ``log_space``: ``sign(x) · log2(1 + |x|) / log2(8)``. Near 0 this is almost linear; far out it
  grows slowly, so a window 4 x larger moves the outermost coordinate by ``log2(4)/3`` only,
  and the MLP is asked to extrapolate a little instead of a lot.

The MLP (``2 -> 512 -> ReLU -> H``, no bias in the last layer), the coordinates and the
``16 · sigmoid`` follow timm's ``SwinTransformerV2`` ``WindowAttention``, with the same
``state_dict`` keys under ``cpb_mlp``. (Swin V2 also changed the attention itself to scaled cosine
attention; here only the position code changes, so that it is the one thing compared.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from companion._checks import check_positive_int, to_pair
from companion.position import PositionTerm, WindowCode, register
from companion.relative import WindowSize, lookup_bias, relative_position_index

#: Offsets are normalised to ``[-NORM_RANGE, NORM_RANGE]`` before the logarithm.
NORM_RANGE = 8.0
#: The bias is ``BIAS_RANGE · sigmoid(...)``, so it lies in ``(0, 16)``.
BIAS_RANGE = 16.0
#: Hidden width of the MLP (Swin V2's).
HIDDEN = 512


def offset_grid(window_size: WindowSize) -> Tensor:
    """Every offset ``(dy, dx)`` of a ``Wh x Ww`` window as float32 ``(2Wh-1, 2Ww-1, 2)``.

    Entry ``[i, j]`` is ``(i - (Wh-1), j - (Ww-1))``: row-major, so flattening the first two axes
    gives the offsets in the order of the bias table's rows (``relative.index_to_offset``).
    """
    wh, ww = to_pair("window_size", window_size)
    dy = torch.arange(-(wh - 1), wh, dtype=torch.float32)
    dx = torch.arange(-(ww - 1), ww, dtype=torch.float32)
    return torch.stack(torch.meshgrid(dy, dx, indexing="ij"), dim=-1)


def normalise_offsets(offsets: Tensor, window_size: WindowSize) -> Tensor:
    """Divide ``dy`` by ``Wh - 1`` and ``dx`` by ``Ww - 1`` (1 for a window of 1), times 8.

    ``window_size`` is the window that defines the scale: the current one, or the pretraining one
    when a model trained at one window runs at another.
    """
    wh, ww = to_pair("window_size", window_size)
    scale = torch.tensor([max(wh - 1, 1), max(ww - 1, 1)], dtype=offsets.dtype)
    return offsets / scale * NORM_RANGE


def log_space(x: Tensor) -> Tensor:
    """``sign(x) · log2(1 + |x|) / log2(8)``, elementwise; ``±8`` maps to ``±log2(9)/3 ≈ ±1.06``."""
    return torch.sign(x) * torch.log2(x.abs() + 1.0) / math.log2(NORM_RANGE)


def log_spaced_coordinates(
    window_size: WindowSize, pretrained_window_size: WindowSize | None = None
) -> Tensor:
    """The MLP's inputs ``(2Wh-1, 2Ww-1, 2)``: ``log_space(normalise_offsets(offset_grid))``.

    Equal to timm's SwinV2 ``relative_coords_table[0]`` for the same windows.
    """
    scale_window = window_size if pretrained_window_size is None else pretrained_window_size
    return log_space(normalise_offsets(offset_grid(window_size), scale_window))


class ContinuousPositionBias(PositionTerm):
    """``B = 16 · sigmoid(MLP(log-spaced offsets))``, looked up to ``(num_heads, N, N)``.

    Args:
        window_size: ``M`` or ``(Wh, Ww)``.
        num_heads: heads ``H``: the MLP's outputs.
        pretrained_window_size: the window whose ``W - 1`` normalises the offsets; ``None``
            means the window itself.

    Attributes:
        cpb_mlp: ``Linear(2, 512) -> ReLU -> Linear(512, H, bias=False)``; keys
            ``cpb_mlp.0.weight``, ``cpb_mlp.0.bias``, ``cpb_mlp.2.weight`` as in timm's SwinV2.
        relative_coords_table: non-persistent buffer ``(2Wh-1, 2Ww-1, 2)``.
        relative_position_index: non-persistent buffer ``(N, N)`` (chapter 2's index).
    """

    relative_coords_table: Tensor
    relative_position_index: Tensor
    # As a window code's term: saved under the attention's ``cpb``; the MLP is not decayed.
    checkpoint_prefix = "cpb."
    no_decay = ("cpb_mlp.",)

    def __init__(
        self,
        window_size: WindowSize,
        num_heads: int,
        pretrained_window_size: WindowSize | None = None,
    ) -> None:
        super().__init__()
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, HIDDEN), nn.ReLU(inplace=True), nn.Linear(HIDDEN, num_heads, bias=False)
        )
        self.pretrained_window_size = (
            None
            if pretrained_window_size is None
            else to_pair("pretrained_window_size", pretrained_window_size)
        )
        self.window_size = to_pair("window_size", window_size)
        self._set_buffers()

    def _set_buffers(self) -> None:
        coords = log_spaced_coordinates(self.window_size, self.pretrained_window_size)
        self.register_buffer("relative_coords_table", coords, persistent=False)
        index = relative_position_index(self.window_size)
        self.register_buffer("relative_position_index", index, persistent=False)

    def bias_table(self) -> Tensor:
        """The MLP's output per offset, ``((2Wh-1)(2Ww-1), H)``, before the ``16 · sigmoid``."""
        coords = self.relative_coords_table.to(next(self.cpb_mlp.parameters()).dtype)
        return self.cpb_mlp(coords).view(-1, self.num_heads)

    def forward(self) -> Tensor:
        """The bias ``(H, N, N)``, each entry in ``(0, 16)``."""
        index = self.relative_position_index
        return BIAS_RANGE * torch.sigmoid(lookup_bias(self.bias_table(), index))

    def bias(self) -> Tensor:
        return self()

    def resize(self, window_size: tuple[int, int], method: str = "geometric") -> None:
        self.set_window_size(window_size)  # nothing to resize: the MLP takes any offset

    def set_window_size(self, window_size: WindowSize, keep_scale: bool = True) -> None:
        """Use the MLP on another window: only the coordinates and the index are recomputed.

        With ``keep_scale`` (the default) and no ``pretrained_window_size``, the old window
        becomes the pretraining window, so that every offset keeps the coordinate the MLP was
        trained on and the new offsets lie beyond it (what Swin V2's fine-tuning configurations
        get by naming their pretraining window). ``keep_scale=False`` renormalises by the new
        window, as timm's ``set_window_size`` does for a model built without a pretraining window:
        offset 3 then means something else.
        """
        window = to_pair("window_size", window_size)
        if keep_scale and self.pretrained_window_size is None and window != self.window_size:
            self.pretrained_window_size = self.window_size
        self.window_size = window
        device = self.relative_coords_table.device
        self._set_buffers()
        self.to(device)

    def extra_repr(self) -> str:
        return (
            f"window_size={self.window_size}, num_heads={self.num_heads}, "
            f"pretrained_window_size={self.pretrained_window_size}"
        )


@dataclass(frozen=True)
class ContinuousBias(WindowCode):
    """Swin V2's continuous position bias as a window code (``pos="cpb"``): each window
    attention holds a ``ContinuousPositionBias``, so a larger window needs no resizing."""

    @property
    def name(self) -> str:
        return "cpb"

    def build(
        self, window_size: tuple[int, int], num_heads: int, head_dim: int
    ) -> ContinuousPositionBias:
        return ContinuousPositionBias(window_size, num_heads)


register(ContinuousBias())
