"""Window multi-head self-attention with Swin's relative position bias.

    Attention(Q, K, V) = SoftMax(Q Kᵀ / √d + B + mask) V

computed independently inside each window of ``N = Wh * Ww`` tokens. What adds position inside
the attention is one object, ``position``: Swin's learned table ``B`` (``BiasTable``), Swin V2's
continuous bias (``ContinuousBias``), a rotary embedding of ``Q`` and ``K`` (``Rotary``), or
``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from companion._checks import check_bool, check_choice, check_divisible, check_positive_int, to_pair
from companion.cpb import ContinuousPositionBias, offset_grid
from companion.init import trunc_normal_
from companion.relative import (
    WindowSize,
    lookup_bias,
    magnitude_index,
    make_bias_table,
    relative_position_index,
    window_offsets,
)
from companion.rope import ROPE_KINDS, RopeKind, WindowRoPE
from companion.transfer import ResizeMethod, resize_bias_table, resized_table_parameter

AttnImpl = Literal["sdpa", "eager"]
ATTN_IMPLS: tuple[AttnImpl, ...] = get_args(AttnImpl)
RelBiasOffsets = Literal["signed", "magnitude"]
REL_BIAS_OFFSETS: tuple[RelBiasOffsets, ...] = get_args(RelBiasOffsets)


# --------------------------------------------------------------------------- position codes
# What adds position inside the attention: exactly one of these, or None. Each holds only the
# options that make sense for it (only a table can wrap around a torus), so an impossible
# combination cannot be written down.


@dataclass(frozen=True)
class BiasTable:
    """Swin's learned relative position bias ``B``, looked up from a table by offset.

    ``offsets``: ``"signed"`` (Swin: one row per offset ``(dy, dx)``, a ``(2Wh-1)(2Ww-1)``-row
    table) or ``"magnitude"`` (a controlled variant: one row per ``(|dy|, |dx|)``, a
    ``Wh * Ww``-row table; ``companion.relative.magnitude_index``). ``wrap``: per axis, whether
    offsets are taken around a ring (``companion.relative.wrap_offsets``), for a window that
    spans a whole axis of a feature map treated as a torus.
    """

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


@dataclass(frozen=True)
class ContinuousBias:
    """Swin V2's continuous position bias: ``B`` computed by an MLP from the log-spaced offset
    (``companion.cpb``), so a larger window needs no resizing."""


@dataclass(frozen=True)
class Rotary:
    """A 2-D rotary embedding of ``q`` and ``k`` (``companion.rope``), ``"axial"`` or
    ``"mixed"``: the logit sees the positions only through their offset, and nothing is added."""

    kind: RopeKind = "axial"

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, ROPE_KINDS)


#: What a ``WindowAttention`` adds position with; ``None``: nothing (plain self-attention).
WindowPosition = BiasTable | ContinuousBias | Rotary | None


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


def biased_logits(q: Tensor, k: Tensor, scale: float, bias: Tensor | None) -> Tensor:
    """The attention logits ``q @ kᵀ · scale + B``, before the softmax.

    ``q``, ``k``: ``(B_, H, N, d)``; ``bias``: ``B``, ``(H, N, N)``, or ``None`` for no bias.
    Returns ``(B_, H, N, N)``: ``B`` is broadcast over the ``B_`` windows, the same in each.
    """
    logits = (q * scale) @ k.transpose(-2, -1)
    return logits if bias is None else logits + bias


class WindowAttention(nn.Module):
    """Multi-head self-attention inside windows, with what adds position to it (``position``).

    Args:
        dim: channels ``C`` of each token; must be divisible by ``num_heads``.
        window_size: ``M`` or ``(Wh, Ww)``; the number of tokens per window is ``N = Wh * Ww``.
        num_heads: attention heads ``H``; each has ``d = C / H`` channels.
        qkv_bias: learn a bias in the query/key/value projection.
        position: ``BiasTable()`` (Swin's learned bias ``B``, the default), ``ContinuousBias()``
            (Swin V2's), ``Rotary(kind)`` (rotates ``q`` and ``k``) or ``None`` (no position:
            then there is no position parameter at all).
        attn_impl: ``"sdpa"`` uses ``F.scaled_dot_product_attention`` (fused kernels where the
            device has them); ``"eager"`` spells the formula out. Both give the same result.

    Parameter and buffer names follow timm's ``WindowAttention`` (``qkv``, ``proj``,
    ``relative_position_bias_table``, ``relative_position_index``) so weights load either way;
    a continuous bias lives in ``cpb``, a rotary embedding in ``rope``.
    """

    relative_position_bias_table: nn.Parameter
    relative_position_index: Tensor

    def __init__(
        self,
        dim: int,
        window_size: WindowSize,
        num_heads: int,
        qkv_bias: bool = True,
        position: WindowPosition = BiasTable(),
        attn_impl: AttnImpl = "sdpa",
    ) -> None:
        super().__init__()
        check_positive_int("dim", dim)
        check_positive_int("num_heads", num_heads)
        check_divisible("dim", dim, "num_heads", num_heads)
        self.dim = dim
        self.window_size = to_pair("window_size", window_size)
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.attn_impl: AttnImpl = check_choice("attn_impl", attn_impl, ATTN_IMPLS)
        if not isinstance(position, BiasTable | ContinuousBias | Rotary | None):
            raise TypeError(
                f"position must be BiasTable(...), ContinuousBias(), Rotary(...) or None, "
                f"got {position!r}"
            )
        self.position = position
        if isinstance(position, BiasTable):
            self.relative_position_bias_table = position.table(self.window_size, num_heads)
            index = position.index(self.window_size)
            self.register_buffer("relative_position_index", index, persistent=False)
        self.cpb = (
            ContinuousPositionBias(self.window_size, num_heads)
            if isinstance(position, ContinuousBias)
            else None
        )
        self.rope = (
            WindowRoPE(self.window_size, self.head_dim, num_heads, position.kind)
            if isinstance(position, Rotary)
            else None
        )
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    @property
    def num_tokens(self) -> int:
        """Tokens per window, ``N = Wh * Ww``."""
        return self.window_size[0] * self.window_size[1]

    @property
    def rel_pos_bias(self) -> bool:
        """Whether ``B`` comes from a learned table (``position`` is a ``BiasTable``)."""
        return isinstance(self.position, BiasTable)

    def relative_position_bias(self) -> Tensor | None:
        """The bias ``B`` of shape ``(H, N, N)``, or ``None`` when nothing is added."""
        if self.cpb is not None:
            return self.cpb()
        if not self.rel_pos_bias:
            return None
        return lookup_bias(self.relative_position_bias_table, self.relative_position_index)

    def offset_table(self) -> Tensor | None:
        """The bias of every signed offset, ``((2Wh-1)(2Ww-1), H)`` in ``relative_position_index``'s
        row order, for either kind of ``BiasTable``; ``None`` without one. With ``"magnitude"``
        the rows of ``(dy, dx)`` and ``(-dy, dx)``, ``(dy, -dx)`` are equal."""
        if not isinstance(self.position, BiasTable):
            return None
        if self.position.offsets == "signed":
            return self.relative_position_bias_table
        rows = magnitude_index(offset_grid(self.window_size).long(), self.window_size)
        return self.relative_position_bias_table[rows.flatten()]

    def _additive_terms(self, mask: Tensor | None) -> Tensor | None:
        """``B`` and the mask combined into one additive term, broadcastable to the logits.

        The bias is gathered once per forward (not once per window) and broadcast; with a mask
        the result has shape ``(nW, H, N, N)`` and the logits are viewed as
        ``(batch, nW, H, N, N)`` so that window ``w`` of every image gets ``mask[w]``.
        """
        bias = self.relative_position_bias()
        if mask is None:
            return None if bias is None else bias.unsqueeze(0)
        mask = mask.unsqueeze(1)  # (nW, 1, N, N)
        return mask if bias is None else mask + bias.unsqueeze(0)

    def _qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        b, n, _ = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # each (B_, H, N, d)
        if self.rope is not None:
            q, k = self.rope(q, k)
        return q, k, v

    def _check_input(self, x: Tensor) -> None:
        # One check, for a reader who calls the module by hand with a map instead of windows.
        if x.dim() != 3 or x.shape[1:] != (self.num_tokens, self.dim):
            raise ValueError(
                f"x must have shape (num_windows*batch, N={self.num_tokens}, dim={self.dim}) "
                f"for window_size={self.window_size}, got {tuple(x.shape)}"
            )

    def attention_probs(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """SoftMax(QKᵀ/√d + B + mask) of shape ``(B_, H, N, N)``, for inspection and figures."""
        self._check_input(x)
        q, k, _ = self._qkv(x)
        return self._eager_probs(q, k, mask)

    def _eager_probs(self, q: Tensor, k: Tensor, mask: Tensor | None) -> Tensor:
        if mask is None:
            return biased_logits(q, k, self.scale, self.relative_position_bias()).softmax(dim=-1)
        # Shifted windows (chapter 4): the mask of window w is added to window w of every image.
        logits = biased_logits(q, k, self.scale, None)  # (B_, H, N, N)
        terms = self._additive_terms(mask)
        assert terms is not None  # with a mask there is always a term
        logits = logits.view(-1, mask.shape[0], *logits.shape[1:]) + terms
        return logits.flatten(0, 1).softmax(dim=-1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: ``(num_windows*batch, N, C)``; ``mask``: ``(num_windows, N, N)`` additive
        (0 where attention is allowed, a large negative number where not) or ``None``.
        Returns ``(num_windows*batch, N, C)``."""
        self._check_input(x)
        b, n, c = x.shape
        q, k, v = self._qkv(x)
        if self.attn_impl == "eager":
            out = self._eager_probs(q, k, mask) @ v
        else:
            extra = self._additive_terms(mask)
            if extra is not None:
                extra = extra.to(q.dtype)
                if mask is not None:
                    # Repeat the (nW, H|1, N, N) term once per image: SDPA's fused kernels take
                    # only 4-D inputs (a 5-D (batch, nW, H, N, d) layout falls back to the
                    # unfused path).
                    nw = mask.shape[0]
                    extra = extra.expand(b // nw, *extra.shape).reshape(b, -1, n, n)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=extra)
        return self.proj(out.transpose(1, 2).reshape(b, n, c))

    def set_window_size(self, window_size: WindowSize, method: ResizeMethod = "geometric") -> None:
        """Switch to another window: the table is resized with ``method``
        (``companion.transfer.resize_bias_table``) and the index recomputed; a continuous bias or
        a rotary embedding recomputes its coordinates. The weights carry over.

        A ``"magnitude"`` table is resized as the signed table it stands for (``offset_table``,
        mirror-symmetric on each axis, as is every resize of it), keeping the rows
        ``dy, dx >= 0``. A table that wraps (a torus window) is refused: it never learned the
        offsets beyond half the window that a window without wrap needs."""
        window = to_pair("window_size", window_size)
        if window == self.window_size:
            return
        position = self.position
        if isinstance(position, BiasTable):
            if any(position.wrap):
                raise ValueError(
                    f"set_window_size cannot move a window with wrap={position.wrap} (a torus "
                    f"window): its offsets go around the ring; build the model at "
                    f"window_size={window} instead"
                )
            table = self.relative_position_bias_table
            if position.offsets == "signed":
                resized = resized_table_parameter(table, self.window_size, window, method)
            else:
                signed = self.offset_table()
                assert signed is not None  # a BiasTable has one
                resized = magnitude_table_parameter(
                    signed, self.window_size, window, method, table.requires_grad
                )
            self.relative_position_bias_table = resized
            index = position.index(window).to(table.device)
            self.register_buffer("relative_position_index", index, persistent=False)
        if self.cpb is not None:
            self.cpb.set_window_size(window)
        if self.rope is not None:
            self.rope.set_window_size(window)
        self.window_size = window

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}, "
            f"position={self.position!r}, attn_impl={self.attn_impl!r}"
        )
