"""Window multi-head self-attention with Swin's relative position bias.

    Attention(Q, K, V) = SoftMax(Q Kᵀ / √d + B + mask) V

computed independently inside each window of ``N = Wh * Ww`` tokens. What adds position inside
the attention is one object, ``position``: Swin's learned table ``B`` (``BiasTable``), Swin V2's
continuous bias (``ContinuousBias``), a rotary embedding of ``Q`` and ``K`` (``Rotary``), or
``None``.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch.nn.functional as F
from torch import Tensor, nn

from companion._checks import check_choice, check_divisible, check_positive_int, to_pair
from companion.cpb import ContinuousPositionBias
from companion.position import SWIN_CODE, WindowCode, WindowPosition, check_window_position
from companion.relative import WindowSize
from companion.rope import WindowRoPE
from companion.transfer import ResizeMethod

AttnImpl = Literal["sdpa", "eager"]
ATTN_IMPLS: tuple[AttnImpl, ...] = get_args(AttnImpl)

#: ``position=None`` behaves as this code: it adds nothing.
NO_CODE = WindowCode()


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

    relative_position_bias_table: nn.Parameter  # with a BiasTable
    relative_position_index: Tensor
    cpb: ContinuousPositionBias  # with ContinuousBias()
    rope: WindowRoPE  # with Rotary(...)

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
        self.code.build(self)  # before qkv and proj: their initial weights follow its draws
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    @property
    def num_tokens(self) -> int:
        """Tokens per window, ``N = Wh * Ww``."""
        return self.window_size[0] * self.window_size[1]

    @property
    def code(self) -> WindowCode:
        """``position``, or a code that adds nothing for ``position=None``."""
        return self.position or NO_CODE

    def relative_position_bias(self) -> Tensor | None:
        """The bias ``B`` of shape ``(H, N, N)``, or ``None`` when nothing is added."""
        return self.code.bias(self)

    def offset_table(self) -> Tensor | None:
        """The bias of every signed offset, ``((2Wh-1)(2Ww-1), H)`` in ``relative_position_index``'s
        row order, for either kind of ``BiasTable`` (``BiasTable.offset_table``); ``None``
        without one."""
        return self.code.offset_table(self)

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
        q, k = self.code.rotate(self, q, k)
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
        """Switch to another window; the position code moves its parameters
        (``WindowCode.resize``: a table is resized with ``method``, ``companion.transfer``; a
        continuous bias or a rotary embedding recomputes its coordinates). The weights carry
        over."""
        window = to_pair("window_size", window_size)
        if window == self.window_size:
            return
        self.code.resize(self, window, method)
        self.window_size = window

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}, "
            f"position={self.position!r}, attn_impl={self.attn_impl!r}"
        )
