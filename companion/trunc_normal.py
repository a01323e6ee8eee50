"""Truncated-normal initialisation that draws the same numbers under every torch version.

``torch.nn.init.trunc_normal_`` changed its algorithm between releases: torch 2.11 (Colab's in
2026) maps uniform draws through the inverse normal CDF, torch 2.14 draws normals and redraws those
outside the bounds. The same seed therefore gave Colab readers other tables than the book prints.
:func:`trunc_normal_` always does the latter with ``Tensor.normal_``, whose stream of numbers is
the same across versions: under any torch it gives the values torch 2.14's own function gives.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

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
