"""Window multi-head self-attention with Swin's relative position bias.

    Attention(Q, K, V) = SoftMax(Q Kᵀ / √d + B + mask) V

computed independently inside each window of ``N = Wh * Ww`` tokens.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from companion._checks import check_choice, check_divisible, check_positive_int, to_pair
from companion.cpb import ContinuousPositionBias
from companion.init import trunc_normal_
from companion.relative import (
    WindowSize,
    flatten_coordinates,
    grid_coordinates,
    lookup_bias,
    make_bias_table,
    pairwise_offsets,
    relative_position_index,
)
from companion.rope import RopeKind, WindowRoPE
from companion.transfer import ResizeMethod, resize_bias_table, resized_table_parameter

AttnImpl = Literal["sdpa", "eager"]
RelBiasOffsets = Literal["signed", "magnitude"]
REL_BIAS_OFFSETS: tuple[str, ...] = ("signed", "magnitude")


def window_offsets(window_size: WindowSize, wrap: tuple[bool, bool] = (False, False)) -> Tensor:
    """``(N, N, 2)`` offsets ``query - key`` of a window, as ``pairwise_offsets`` gives them, except
    that on an axis where ``wrap`` is true they are taken around a ring of the window's length
    ``M`` (into ``[-(M // 2), (M - 1) // 2]``): the window is a whole axis of a torus, and the
    tokens at its two ends are neighbours."""
    wh, ww = to_pair("window_size", window_size)
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates((wh, ww))))
    for axis, (size, wraps) in enumerate(zip((wh, ww), wrap, strict=True)):
        if wraps:
            offsets[..., axis] = (offsets[..., axis] + size // 2) % size - size // 2
    return offsets


def magnitude_position_index(
    window_size: WindowSize, wrap: tuple[bool, bool] = (False, False)
) -> Tensor:
    """The ``(N, N)`` index of a bias that sees only ``(|dy|, |dx|)``: ``|dy| * Ww + |dx|``.

    A controlled variant of ``relative_position_index``: offsets that differ only in sign
    (``(1, 2)``, ``(-1, 2)``, ``(1, -2)``, ``(-1, -2)``) share one row of a ``Wh * Ww``-row
    table, so the bias knows how far apart two tokens are along each axis but not which one is
    left of or above the other. In particular ``B[q, k] = B[k, q]``. ``wrap``: see
    ``window_offsets``.
    """
    _, ww = to_pair("window_size", window_size)
    magnitude = window_offsets(window_size, wrap).abs()
    return magnitude[..., 0] * ww + magnitude[..., 1]


def wrapped_position_index(window_size: WindowSize, wrap: tuple[bool, bool]) -> Tensor:
    """``relative_position_index`` (shift, multiply, sum) of the offsets of
    ``window_offsets(window_size, wrap)``: the signed bias of a window that spans a torus axis."""
    wh, ww = to_pair("window_size", window_size)
    offsets = window_offsets((wh, ww), wrap)
    return (offsets[..., 0] + wh - 1) * (2 * ww - 1) + offsets[..., 1] + ww - 1


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


def _check_wrap(wrap: object) -> tuple[bool, bool]:
    if not (isinstance(wrap, tuple) and len(wrap) == 2 and all(isinstance(w, bool) for w in wrap)):
        raise TypeError(f"wrap must be a pair (bool, bool), got {wrap!r}")
    return wrap  # type: ignore[return-value]


def biased_logits(q: Tensor, k: Tensor, scale: float, bias: Tensor | None) -> Tensor:
    """The attention logits ``q @ kᵀ · scale + B``, before the softmax.

    ``q``, ``k``: ``(B_, H, N, d)``; ``bias``: ``B``, ``(H, N, N)``, or ``None`` for no bias.
    Returns ``(B_, H, N, N)``: ``B`` is broadcast over the ``B_`` windows, the same in each.
    """
    logits = (q * scale) @ k.transpose(-2, -1)
    return logits if bias is None else logits + bias


class WindowAttention(nn.Module):
    """Multi-head self-attention inside windows, with an optional relative position bias.

    Args:
        dim: channels ``C`` of each token; must be divisible by ``num_heads``.
        window_size: ``M`` or ``(Wh, Ww)``; the number of tokens per window is ``N = Wh * Ww``.
        num_heads: attention heads ``H``; each has ``d = C / H`` channels.
        qkv_bias: learn a bias in the query/key/value projection.
        rel_pos_bias: add the learned bias ``B``; ``False`` gives the "no relative position" variant
            (then there is no table parameter at all).
        attn_impl: ``"sdpa"`` uses ``F.scaled_dot_product_attention`` (fused kernels where the
            device has them); ``"eager"`` spells the formula out. Both give the same result.
        rel_bias_offsets: ``"signed"`` (Swin: one bias per offset ``(dy, dx)``, a
            ``(2Wh-1)(2Ww-1)``-row table) or ``"magnitude"`` (a controlled variant: one bias per
            ``(|dy|, |dx|)``, a ``Wh * Ww``-row table; see ``magnitude_position_index``).
        wrap: per axis, whether offsets are taken around a ring (``window_offsets``): for a
            window that spans a whole axis of a feature map treated as a torus.
        cpb: use Swin V2's continuous position bias (``companion.cpb``) as ``B`` instead of a
            table (then ``rel_pos_bias`` must be ``False``).
        rope: ``"axial"`` or ``"mixed"`` rotates ``q`` and ``k`` with a 2-D rotary embedding
            (``companion.rope``) before ``QKᵀ``; ``None`` for none.

    Parameter and buffer names follow timm's ``WindowAttention`` (``qkv``, ``proj``,
    ``relative_position_bias_table``, ``relative_position_index``) so weights load either way.
    """

    def __init__(
        self,
        dim: int,
        window_size: WindowSize,
        num_heads: int,
        qkv_bias: bool = True,
        rel_pos_bias: bool = True,
        attn_impl: AttnImpl = "sdpa",
        rel_bias_offsets: RelBiasOffsets = "signed",
        wrap: tuple[bool, bool] = (False, False),
        cpb: bool = False,
        rope: RopeKind | None = None,
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
        self.attn_impl: AttnImpl = check_choice("attn_impl", attn_impl, ("sdpa", "eager"))  # type: ignore[assignment]
        self.rel_pos_bias = rel_pos_bias
        self.rel_bias_offsets: RelBiasOffsets = check_choice(
            "rel_bias_offsets", rel_bias_offsets, REL_BIAS_OFFSETS
        )  # type: ignore[assignment]
        self.wrap = _check_wrap(wrap)
        if rel_pos_bias:
            if rel_bias_offsets == "signed":
                table = make_bias_table(self.window_size, num_heads)
                index = (
                    wrapped_position_index(self.window_size, wrap)
                    if any(wrap)
                    else relative_position_index(self.window_size)
                )
            else:  # one row per (|dy|, |dx|), initialised like Swin's table
                table = nn.Parameter(torch.zeros(self.num_tokens, num_heads))
                trunc_normal_(table, std=0.02)
                index = magnitude_position_index(self.window_size, wrap)
            self.relative_position_bias_table = table
            self.register_buffer("relative_position_index", index, persistent=False)
        if cpb and rel_pos_bias:
            raise ValueError("cpb=True replaces the bias table: pass rel_pos_bias=False with it")
        if any(wrap) and (cpb or rope is not None):
            raise ValueError(
                f"wrap={wrap} takes offsets around a ring, which only a bias table does: "
                f"use it without cpb (got {cpb}) and rope (got {rope!r})"
            )
        self.cpb = ContinuousPositionBias(self.window_size, num_heads) if cpb else None
        if rope is not None:
            check_choice("rope", rope, ("axial", "mixed"))
        self.rope = (
            None if rope is None else WindowRoPE(self.window_size, self.head_dim, num_heads, rope)
        )
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    @property
    def num_tokens(self) -> int:
        """Tokens per window, ``N = Wh * Ww``."""
        return self.window_size[0] * self.window_size[1]

    def relative_position_bias(self) -> Tensor | None:
        """The bias ``B`` of shape ``(H, N, N)``, or ``None`` when disabled."""
        if self.cpb is not None:
            return self.cpb()
        if not self.rel_pos_bias:
            return None
        return lookup_bias(self.relative_position_bias_table, self.relative_position_index)

    def offset_table(self) -> Tensor | None:
        """The bias of every signed offset, ``((2Wh-1)(2Ww-1), H)`` in ``relative_position_index``'s
        row order, whichever ``rel_bias_offsets``; ``None`` without a bias. With ``"magnitude"``
        the rows of ``(dy, dx)`` and ``(-dy, dx)``, ``(dy, -dx)`` are equal."""
        if not self.rel_pos_bias:
            return None
        if self.rel_bias_offsets == "signed":
            return self.relative_position_bias_table
        wh, ww = self.window_size
        dy = torch.arange(-(wh - 1), wh).abs()[:, None]
        dx = torch.arange(-(ww - 1), ww).abs()[None, :]
        return self.relative_position_bias_table[(dy * ww + dx).flatten()]

    def _check_input(self, x: Tensor, mask: Tensor | None) -> None:
        if x.dim() != 3 or x.shape[1] != self.num_tokens or x.shape[2] != self.dim:
            raise ValueError(
                f"x must have shape (num_windows*batch, N={self.num_tokens}, dim={self.dim}) "
                f"for window_size={self.window_size}, got {tuple(x.shape)}"
            )
        if mask is not None:
            n = self.num_tokens
            if mask.dim() != 3 or mask.shape[1:] != (n, n) or x.shape[0] % mask.shape[0]:
                raise ValueError(
                    f"mask must have shape (num_windows, {n}, {n}) with num_windows dividing "
                    f"x.shape[0]={x.shape[0]}, got {tuple(mask.shape)}"
                )

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

    def attention_probs(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """SoftMax(QKᵀ/√d + B + mask) of shape ``(B_, H, N, N)``, for inspection and figures."""
        self._check_input(x, mask)
        q, k, _ = self._qkv(x)
        return self._eager_probs(q, k, mask)

    def _eager_probs(self, q: Tensor, k: Tensor, mask: Tensor | None) -> Tensor:
        if mask is None:
            return biased_logits(q, k, self.scale, self.relative_position_bias()).softmax(dim=-1)
        # Shifted windows (chapter 4): the mask of window w is added to window w of every image.
        logits = biased_logits(q, k, self.scale, None)  # (B_, H, N, N)
        nw = mask.shape[0]
        logits = logits.view(-1, nw, *logits.shape[1:]) + self._additive_terms(mask)
        return logits.flatten(0, 1).softmax(dim=-1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: ``(num_windows*batch, N, C)``; ``mask``: ``(num_windows, N, N)`` additive
        (0 where attention is allowed, a large negative number where not) or ``None``.
        Returns ``(num_windows*batch, N, C)``."""
        self._check_input(x, mask)
        b, n, c = x.shape
        q, k, v = self._qkv(x)
        if self.attn_impl == "eager":
            out = self._eager_probs(q, k, mask) @ v
        else:
            extra = self._additive_terms(mask)
            if extra is not None:
                extra = extra.to(q.dtype)
            if mask is not None:
                # Repeat the (nW, H|1, N, N) term once per image: SDPA's fused kernels take only
                # 4-D inputs (a 5-D (batch, nW, H, N, d) layout falls back to the unfused path).
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
        ``dy, dx >= 0``. A window with ``wrap`` (a torus) is refused: its table never learned the
        offsets beyond half the window that a window without wrap needs."""
        window = to_pair("window_size", window_size)
        if window == self.window_size:
            return
        if any(self.wrap):
            raise ValueError(
                f"set_window_size cannot move a window with wrap={self.wrap} (a torus window): its "
                f"offsets go around the ring; build the model at window_size={window} instead"
            )
        if self.rel_pos_bias:
            table = self.relative_position_bias_table
            if self.rel_bias_offsets == "signed":
                self.relative_position_bias_table = resized_table_parameter(
                    table, self.window_size, window, method
                )
                index = relative_position_index(window)
            else:
                self.relative_position_bias_table = magnitude_table_parameter(
                    self.offset_table(), self.window_size, window, method, table.requires_grad
                )
                index = magnitude_position_index(window)
            self.register_buffer(
                "relative_position_index", index.to(table.device), persistent=False
            )
        for code in (self.cpb, self.rope):
            if code is not None:
                code.set_window_size(window)
        self.window_size = window

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}, "
            f"rel_pos_bias={self.rel_pos_bias}, attn_impl={self.attn_impl!r}"
            + (
                f", rel_bias_offsets={self.rel_bias_offsets!r}"
                if self.rel_bias_offsets != "signed"
                else ""
            )
            + (f", wrap={self.wrap}" if any(self.wrap) else "")
        )
