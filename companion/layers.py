"""Small building blocks shared by the models, as timm's ``layers``: stochastic depth
(``DropPath``), the ``Mlp`` of a transformer block, and ``trunc_normal_``, the initialisation every
embedding and bias table is drawn with.

``trunc_normal_`` draws the same numbers under every torch version.
``torch.nn.init.trunc_normal_`` changed its algorithm between releases: torch 2.11 (Colab's in
2026) maps uniform draws through the inverse normal CDF, torch 2.14 draws normals and redraws those
outside the bounds. The same seed therefore gave Colab readers other tables than the book prints.
:func:`trunc_normal_` always does the latter with ``Tensor.normal_``, whose stream of numbers is
the same across versions: under any torch it gives the values torch 2.14's own function gives.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from companion._checks import check_positive_int


class DropPath(nn.Module):
    """Stochastic depth: in training, skip a residual branch for a random subset of samples.

    Each sample's branch output is zeroed with probability ``drop_prob`` and otherwise scaled by
    ``1 / (1 - drop_prob)``, so the expected output equals the input and evaluation (which keeps
    every branch) needs no rescaling. Works on any ``(B, ...)`` tensor.
    """

    def __init__(self, drop_prob: float = 0.0) -> None:
        super().__init__()
        if isinstance(drop_prob, bool) or not isinstance(drop_prob, (int, float)):
            raise TypeError(f"drop_prob must be a float in [0, 1), got {drop_prob!r}")
        if not 0.0 <= drop_prob < 1.0:
            raise ValueError(f"drop_prob must be a float in [0, 1), got {drop_prob!r}")
        self.drop_prob = float(drop_prob)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.drop_prob == 0.0:
            return x
        keep = 1.0 - self.drop_prob
        # One Bernoulli draw per sample, broadcast over all other axes.
        shape = (x.shape[0],) + (1,) * (x.dim() - 1)
        return x * x.new_empty(shape).bernoulli_(keep).div_(keep)

    def extra_repr(self) -> str:
        return f"drop_prob={self.drop_prob}"


class Mlp(nn.Module):
    """The feed-forward half of a transformer block: ``fc2(GELU(fc1(x)))``.

    ``(..., in_features)`` -> ``(..., in_features)`` through ``hidden_features`` channels.
    Submodule names ``fc1``/``fc2`` match timm's, so weights load either way.
    """

    def __init__(self, in_features: int, hidden_features: int) -> None:
        super().__init__()
        check_positive_int("in_features", in_features)
        check_positive_int("hidden_features", hidden_features)
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


#: Below this share of the normal's mass inside ``[a, b]``, redrawing would take many rounds.
MIN_MASS = 0.3


def _normal_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(
    tensor: Tensor, std: float = 0.02, mean: float = 0.0, a: float = -2.0, b: float = 2.0
) -> Tensor:
    """Fill ``tensor`` (any shape) in place with ``N(mean, std^2)`` draws restricted to ``[a, b]``.

    Draws every value from the normal, then redraws the ones outside ``[a, b]`` until none is
    left. The bounds are absolute numbers, as in ``torch.nn.init.trunc_normal_``: with the default
    ``std=0.02`` they sit 100 standard deviations away and nothing is ever redrawn. Returns
    ``tensor``.
    """
    if not std > 0:
        raise ValueError(f"std must be > 0, got {std!r}")
    if not a < b:
        raise ValueError(f"a must be below b, got a={a!r}, b={b!r}")
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    if mass < MIN_MASS:
        raise ValueError(
            f"[a, b] = [{a}, {b}] must hold at least {MIN_MASS:.0%} of N(mean={mean}, std={std}), "
            f"got {mass:.1%}: widen the bounds or move mean inside them"
        )
    with torch.no_grad():
        tensor.normal_(mean, std)
        while True:
            outside = (tensor < a) | (tensor > b)
            if not outside.any():
                return tensor
            tensor.copy_(torch.where(outside, torch.empty_like(tensor).normal_(mean, std), tensor))
