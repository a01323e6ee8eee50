"""Window multi-head self-attention with what adds position to it.

    Attention(Q, K, V) = SoftMax(Q Kᵀ / √d + B + mask) V

computed independently inside each window of ``N = Wh * Ww`` tokens. What adds position inside
the attention is one window code (``position``, ``companion.position``): Swin's learned table
``B`` (``BiasTable``), Swin V2's continuous bias (``ContinuousBias``), a rotary embedding of
``Q`` and ``K`` (``Rotary``), or ``None``. The code's parameters live in its term, ``code``.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch.nn.functional as F
from torch import Tensor, nn

from companion._checks import check_choice, check_divisible, check_positive_int, to_pair
from companion.bias_table import SWIN_CODE
from companion.position import (
    PositionTerm,
    WindowPosition,
    build_term,
    check_window_position,
    keep_checkpoint_names,
)
from companion.relative import WindowSize

AttnImpl = Literal["sdpa", "eager"]
ATTN_IMPLS: tuple[AttnImpl, ...] = get_args(AttnImpl)


def biased_logits(q: Tensor, k: Tensor, scale: float, bias: Tensor | None) -> Tensor:
    """The attention logits ``q @ kᵀ · scale + B``, before the softmax.

    ``q``, ``k``: ``(B_, H, N, d)``; ``bias``: ``B``, ``(H, N, N)``, or ``None`` for no bias.
    Returns ``(B_, H, N, N)``: ``B`` is broadcast over the ``B_`` windows, the same in each.
    """
    logits = (q * scale) @ k.transpose(-2, -1)
    return logits if bias is None else logits + bias


def bias_and_mask(bias: Tensor | None, mask: Tensor | None, windows: int) -> Tensor | None:
    """``B + mask`` as one term added to the ``(B_, H, N, N)`` logits of ``windows = B_``
    windows: ``B`` ``(H, N, N)`` the same in every window, the shifted-window ``mask``
    ``(nW, N, N)`` on window ``w`` of every image. ``None`` when there is neither.

    The bias is computed once per forward (not once per window); with a mask the ``(nW, H, N, N)``
    sum is repeated once per image, as SDPA's fused kernels take 4-D masks only.
    """
    if mask is None:
        return None if bias is None else bias.unsqueeze(0)
    terms = mask.unsqueeze(1) if bias is None else mask.unsqueeze(1) + bias  # (nW, H|1, N, N)
    return terms.repeat(windows // mask.shape[0], 1, 1, 1)


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

    Attributes:
        code: the position code's term (``companion.position.PositionTerm``), which owns the
            code's parameters: ``code.relative_position_bias_table`` for a ``BiasTable``.

    The ``state_dict`` keys follow timm's ``WindowAttention`` (``qkv``, ``proj``,
    ``relative_position_bias_table``) so weights load either way: the code's keys are saved
    under its ``checkpoint_prefix`` (``companion.position.keep_checkpoint_names``), a
    continuous bias's under ``cpb``, a rotary embedding's under ``rope``.
    """

    code: PositionTerm

    def __init__(
        self,
        dim: int,
        window_size: WindowSize,
        num_heads: int,
        qkv_bias: bool = True,
        position: WindowPosition = SWIN_CODE,
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
        self.position = check_window_position("position", position)
        # Before qkv and proj: their initial weights follow the code's draws.
        self.code = build_term(position, self.window_size, num_heads, self.head_dim)
        keep_checkpoint_names(self, "code", self.code.checkpoint_prefix)
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    @property
    def num_tokens(self) -> int:
        """Tokens per window, ``N = Wh * Ww``."""
        return self.window_size[0] * self.window_size[1]

    def relative_position_bias(self) -> Tensor | None:
        """The bias ``B`` of shape ``(H, N, N)``, or ``None`` when nothing is added."""
        return self.code.bias()

    def offset_table(self) -> Tensor | None:
        """The bias of every signed offset, ``((2Wh-1)(2Ww-1), H)`` in ``relative_position_index``'s
        row order, for either kind of ``BiasTable``; ``None`` without one."""
        return self.code.offset_table()

    def _heads(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(B_, N, C)`` -> ``q``, ``k``, ``v``, each ``(B_, H, N, d)``."""
        self._check_input(x)
        b, n, _ = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
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
        q, k, _ = self._heads(x)
        q, k = self.code.rotate(q, k)
        terms = bias_and_mask(self.code.bias(), mask, len(x))
        return biased_logits(q, k, self.scale, terms).softmax(dim=-1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: ``(num_windows*batch, N, C)``; ``mask``: ``(num_windows, N, N)`` additive
        (0 where attention is allowed, a large negative number where not) or ``None``.
        Returns ``(num_windows*batch, N, C)``."""
        q, k, v = self._heads(x)  # (B_, H, N, d) each
        q, k = self.code.rotate(q, k)  # a rotary code turns q and k; the others leave them
        terms = bias_and_mask(self.code.bias(), mask, len(x))  # B + mask, or None
        if terms is not None:
            terms = terms.to(q.dtype)  # the bias is float32; q may be bf16 under autocast
        if self.attn_impl == "eager":  # the formula, spelled out
            out = biased_logits(q, k, self.scale, terms).softmax(dim=-1) @ v
        else:  # the same in one call: fused kernels where the device has them
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=terms)
        return self.proj(out.transpose(1, 2).reshape(x.shape))

    def set_window_size(self, window_size: WindowSize, method: str = "geometric") -> None:
        """Switch to another window; the position code moves its parameters
        (``PositionTerm.resize``: a table is resized with ``method``, ``companion.resize``; a
        continuous bias or a rotary embedding recomputes its coordinates). The weights carry
        over."""
        window = to_pair("window_size", window_size)
        if window == self.window_size:
            return
        self.code.resize(window, method)
        self.window_size = window

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}, "
            f"position={self.position!r}, attn_impl={self.attn_impl!r}"
        )
