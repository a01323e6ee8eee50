"""Self-attention without position information cannot tell token orders apart.

For a permutation ``perm`` of the ``N`` tokens, write ``x[:, perm]`` for the shuffled sequence
(new token ``i`` is old token ``perm[i]``). Self-attention ``f`` with no position information is
*permutation-equivariant*:

    f(x[:, perm]) == f(x)[:, perm]

shuffling the input only shuffles the output the same way. ``permutation_equivariance_check``
measures both sides; ``shuffle_patches`` does the same shuffle to the patches of an image.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from companion._checks import to_pair
from companion.absolute import patchify, unpatchify

#: float32 rounding makes the two sides differ by ~1e-7 even when they are mathematically equal.
EQUIVARIANCE_ATOL = 1e-5


def check_permutation(perm: Tensor, n: int) -> Tensor:
    """Return ``perm`` if it is a 1-D integer tensor holding each of ``0 .. n-1`` exactly once."""
    if not isinstance(perm, Tensor) or perm.dtype.is_floating_point or perm.dtype == torch.bool:
        raise TypeError(f"perm must be an integer tensor, got {perm!r}")
    if perm.dim() != 1 or perm.numel() != n or not torch.equal(perm.sort().values, torch.arange(n)):
        raise ValueError(
            f"perm must be a permutation of 0..{n - 1} (each index exactly once), "
            f"got {perm.tolist()}"
        )
    return perm


@dataclass(frozen=True)
class PermutationCheck:
    """Both sides of ``f(x[:, perm]) == f(x)[:, perm]``, each ``(B, N, C)``."""

    perm: Tensor
    output_of_shuffled: Tensor  # f(x[:, perm]): shuffle, then attend
    shuffled_output: Tensor  # f(x)[:, perm]: attend, then shuffle
    max_abs_diff: float

    def is_equivariant(self, atol: float = EQUIVARIANCE_ATOL) -> bool:
        """True when the two sides agree up to ``atol`` (float rounding)."""
        return self.max_abs_diff <= atol

    def summary(self) -> str:
        """One line that reads the same on every machine (rounding noise is not printed)."""
        if self.is_equivariant():
            return f"max |f(x[perm]) - f(x)[perm]| <= {EQUIVARIANCE_ATOL:g}: equivariant"
        return f"max |f(x[perm]) - f(x)[perm]| = {self.max_abs_diff:.3g}: NOT equivariant"


def permutation_equivariance_check(
    attn_module: Callable[[Tensor], Tensor], tokens: Tensor, perm: Tensor
) -> PermutationCheck:
    """Run ``attn_module`` on shuffled tokens and shuffle its output on the original ones.

    ``tokens``: ``(B, N, C)``; ``perm``: ``(N,)`` a permutation of ``0 .. N-1``. Any module that
    maps ``(B, N, C)`` to ``(B, N, C)`` works, e.g. ``WindowAttention(position=None)``
    (equivariant) or ``WindowAttention(position=BiasTable())`` (not: the bias depends on where
    each token sits).
    """
    if tokens.dim() != 3:
        raise ValueError(f"tokens must have shape (B, N, C), got {tuple(tokens.shape)}")
    check_permutation(perm, tokens.shape[1])
    with torch.no_grad():
        output_of_shuffled = attn_module(tokens[:, perm])
        shuffled_output = attn_module(tokens)[:, perm]
    diff = (output_of_shuffled - shuffled_output).abs().max().item()
    return PermutationCheck(perm, output_of_shuffled, shuffled_output, diff)


def shuffle_patches(image: Tensor, patch_size: int | tuple[int, int], perm: Tensor) -> Tensor:
    """Rearrange the patches of ``image`` ``(C, H, W)`` or ``(B, C, H, W)`` like a jigsaw.

    Patch ``i`` of the result (row-major) is patch ``perm[i]`` of the input, so for a
    ``PatchEmbed`` ``pe``: ``pe(shuffle_patches(x, p, perm)) == pe(x)[:, perm]``.
    """
    if image.dim() not in (3, 4):
        raise ValueError(
            f"image must have shape (C, H, W) or (B, C, H, W), got {tuple(image.shape)}"
        )
    batched = image if image.dim() == 4 else image.unsqueeze(0)
    ph, pw = to_pair("patch_size", patch_size)
    patches = patchify(batched, (ph, pw))  # (B, N, C*ph*pw); checks the size is a multiple
    check_permutation(perm, patches.shape[1])
    grid = (batched.shape[2] // ph, batched.shape[3] // pw)
    out = unpatchify(patches[:, perm], grid, (ph, pw))
    return out if image.dim() == 4 else out[0]
