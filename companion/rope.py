"""Rotary position embedding (RoPE) in 2-D, inside Swin's windows.

RoPE (Su et al., 2021) gives a token its position by *rotating* its query and key rather than by
adding anything. Split a head's ``d`` channels into ``d/2`` pairs; pair ``p`` of the token at
position ``t`` is rotated by the angle ``t · f_p``. For a query at ``t_q`` and a key at ``t_k``,

    <R(t_q f) q, R(t_k f) k> = <q, R((t_k - t_q) f) k>

because rotations compose and a rotation's transpose is its inverse: the logit sees the positions
only through the offset ``t_k - t_q``. That is the relative position bias's promise, kept without a
table, so nothing has to be resized when the window grows.

In 2-D the position is ``(row, col)`` and each pair gets one angle ``row · f_row + col · f_col``:

* ``"axial"``: fixed frequencies; the first half of the pairs turn with the row, the second half
  with the column (``f_col = 0`` and ``f_row = 0`` respectively). Frequencies fall geometrically,
  ``f_k = θ^(-4k/d)``, from one radian per step to slow ones that tell far positions apart.
* ``"mixed"``: learnable frequencies per head; each pair turns along a direction of the plane,
  initialised at a random angle per head (the two halves at right angles), so a head can learn
  diagonal patterns that the axial form cannot express (Heo et al., ECCV 2024, "Rotary Position
  Embedding for Vision Transformer").

Inside a window the position is the token's cell in the window. In a shifted window every pair of
tokens that the mask lets attend to each other came from one region of the rolled map, so their
in-window offset is their true offset in the image (``test_rope`` checks it); pairs brought
together by the roll are masked out anyway.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import torch
from torch import Tensor, nn

from companion._checks import check_choice, check_positive_int, to_pair
from companion.position import PositionTerm, WindowCode, register
from companion.relative import WindowSize, flatten_coordinates, grid_coordinates

RopeKind = Literal["axial", "mixed"]
ROPE_KINDS: tuple[RopeKind, ...] = get_args(RopeKind)
#: ``θ`` of the frequency ladder; RoPE-ViT uses 10 inside Swin's small windows (100 in ViT).
ROPE_THETA = 10.0


def window_positions(window_size: WindowSize) -> Tensor:
    """``(N, 2)`` float32: ``(row, col)`` of every token of the window, row-major (token order)."""
    return flatten_coordinates(grid_coordinates(window_size)).T.float()


def frequency_ladder(head_dim: int, theta: float = ROPE_THETA) -> Tensor:
    """``(d/4,)`` frequencies ``θ^(-4k/d)``, ``k = 0, ..., d/4 - 1``: one per pair of one axis."""
    return theta ** (-torch.arange(0, head_dim, 4, dtype=torch.float32)[: head_dim // 4] / head_dim)


def axial_frequencies(head_dim: int, theta: float = ROPE_THETA) -> Tensor:
    """``(2, 1, d/2)``: ``[0]`` multiplies the row, ``[1]`` the column; the first ``d/4`` pairs
    turn with the row only, the last ``d/4`` with the column only (the same for every head)."""
    ladder = frequency_ladder(head_dim, theta)
    zeros = torch.zeros_like(ladder)
    return torch.stack((torch.cat((ladder, zeros)), torch.cat((zeros, ladder))))[:, None, :]


def mixed_frequencies(
    head_dim: int,
    num_heads: int,
    theta: float = ROPE_THETA,
    generator: torch.Generator | None = None,
) -> Tensor:
    """``(2, H, d/2)`` starting frequencies of RoPE-Mixed: head ``h`` turns its first ``d/4`` pairs
    along the direction ``α_h`` (a random angle) and the last ``d/4`` along ``α_h + 90°``, with the
    axial ladder's magnitudes. ``[0]`` multiplies the row, ``[1]`` the column."""
    ladder = frequency_ladder(head_dim, theta)
    alpha = torch.rand(num_heads, 1, generator=generator) * 2 * math.pi
    angles = torch.cat(
        (alpha.expand(-1, ladder.numel()), (alpha + math.pi / 2).expand(-1, ladder.numel())), 1
    )
    magnitude = torch.cat((ladder, ladder))
    return torch.stack((magnitude * torch.sin(angles), magnitude * torch.cos(angles)))


def rotation_angles(freqs: Tensor, positions: Tensor) -> Tensor:
    """``row · f_row + col · f_col`` for every head, token and pair.

    ``freqs`` ``(2, H, P)`` (or ``(2, 1, P)``), ``positions`` ``(N, 2)`` -> ``(H, N, P)``.
    """
    return (
        positions[None, :, 0:1] * freqs[0][:, None, :]
        + positions[None, :, 1:2] * freqs[1][:, None, :]
    )


def rotate_pairs(x: Tensor, angles: Tensor) -> Tensor:
    """Rotate channel pairs ``(x[2p], x[2p+1])`` of ``x`` ``(..., H, N, d)`` by ``angles``
    ``(H, N, d/2)``: ``(a, b) -> (a cos φ - b sin φ, a sin φ + b cos φ)``."""
    pairs = x.unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


class WindowRoPE(PositionTerm):
    """2-D rotary embedding of the queries and keys of one window attention.

    Args:
        window_size: ``M`` or ``(Wh, Ww)``.
        head_dim: channels ``d`` per head; a multiple of 4 (``d/2`` pairs, half per axis).
        num_heads: heads ``H``.
        kind: ``"axial"`` (fixed) or ``"mixed"`` (learnable per-head frequencies).
        theta: base of the frequency ladder.

    Attributes:
        freqs: ``(2, H, d/2)`` parameter (mixed) or ``(2, 1, d/2)`` non-persistent buffer (axial).
        positions: non-persistent buffer ``(N, 2)``, each token's ``(row, col)`` in the window.
    """

    freqs: Tensor
    positions: Tensor
    # As a window code's term: saved under the attention's ``rope``; frequencies not decayed.
    checkpoint_prefix = "rope."
    no_decay = ("freqs",)

    def __init__(
        self,
        window_size: WindowSize,
        head_dim: int,
        num_heads: int,
        kind: RopeKind = "axial",
        theta: float = ROPE_THETA,
    ) -> None:
        super().__init__()
        self.head_dim = check_positive_int("head_dim", head_dim)
        if head_dim % 4:
            raise ValueError(
                f"head_dim must be a multiple of 4 for 2-D RoPE (channel pairs, half per axis), "
                f"got head_dim={head_dim}"
            )
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.kind: RopeKind = check_choice("kind", kind, ROPE_KINDS)
        self.theta = float(theta)
        if kind == "mixed":
            self.freqs = nn.Parameter(mixed_frequencies(head_dim, num_heads, self.theta))
        else:
            self.register_buffer("freqs", axial_frequencies(head_dim, self.theta), persistent=False)
        self.set_window_size(window_size)

    def set_window_size(self, window_size: WindowSize) -> None:
        """Recompute the token positions for another window (the frequencies carry over)."""
        self.window_size = to_pair("window_size", window_size)
        positions = window_positions(self.window_size).to(self.freqs.device)
        self.register_buffer("positions", positions, persistent=False)

    def rotate(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        return self(q, k)

    def resize(self, window_size: tuple[int, int], method: str = "geometric") -> None:
        self.set_window_size(window_size)  # nothing to resize: positions are recomputed

    def angles(self) -> Tensor:
        """``(H or 1, N, d/2)`` rotation angles of every token of the window."""
        return rotation_angles(self.freqs, self.positions)

    def forward(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        """Rotate ``q`` and ``k`` ``(B_, H, N, d)``; returns both, same shapes."""
        angles = self.angles()
        return rotate_pairs(q, angles), rotate_pairs(k, angles)

    def extra_repr(self) -> str:
        return (
            f"window_size={self.window_size}, head_dim={self.head_dim}, "
            f"num_heads={self.num_heads}, kind={self.kind!r}, theta={self.theta}"
        )


def equal_content_logits(rope: WindowRoPE, seed: int = 0) -> Tensor:
    """``(H, N, N)`` logits ``q_i · k_j`` after ``rope`` when every token of the window has the same
    query and key (one random pair per head, drawn from ``seed``): whatever varies across the
    matrix comes from the positions alone."""
    g = torch.Generator().manual_seed(seed)
    n = rope.window_size[0] * rope.window_size[1]
    q = torch.randn(1, rope.num_heads, 1, rope.head_dim, generator=g).expand(1, -1, n, -1)
    k = torch.randn(1, rope.num_heads, 1, rope.head_dim, generator=g).expand(1, -1, n, -1)
    q, k = rope(q, k)
    return (q @ k.transpose(-2, -1))[0].detach()


@dataclass(frozen=True)
class Rotary(WindowCode):
    """A 2-D rotary embedding of ``q`` and ``k`` as a window code (``pos="rope-axial"`` or
    ``"rope-mixed"``): each window attention holds a ``WindowRoPE``; the logit sees the positions
    only through their offset, and nothing is added."""

    kind: RopeKind = "axial"

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, ROPE_KINDS)

    @property
    def name(self) -> str:
        return f"rope-{self.kind}"

    def build(self, window_size: tuple[int, int], num_heads: int, head_dim: int) -> WindowRoPE:
        return WindowRoPE(window_size, head_dim, num_heads, self.kind)


register(Rotary("axial"))
register(Rotary("mixed"))
