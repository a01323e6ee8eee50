"""Solutions to the exercises of chapter 0, *Introduction: why attention needs position*."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import Tensor

from companion.absolute import AbsolutePositionEmbedding
from companion.attention import WindowAttention
from companion.permutation import (
    PermutationCheck,
    check_permutation,
    permutation_equivariance_check,
)

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py); an empty tuple is a question whose answer is no
#: value a reader could meet before (a yes or no, a picture, a quantity the exercise names).
ANSWERS: dict[int, tuple[str, ...]] = {
    1: ("[2, 3, 0, 5, 1, 4]",),  # the inverse of the chapter's perm
    2: ("0.225",),  # the biased module's pooled difference
    3: ("0.025",),  # the absolute embedding's equivariance gap
    4: (),  # a yes/no question: equivariant again (no value a reader could meet before)
}


def inverse_permutation(perm: Tensor) -> Tensor:
    """Exercise 1: the permutation ``inv`` that undoes ``perm``: ``x[:, perm][:, inv] == x``.

    ``perm[i]`` says where new token ``i`` came from; ``argsort`` answers the reverse question,
    where old token ``j`` went: ``perm[inv[j]] == j``.
    """
    check_permutation(perm, perm.numel())
    return torch.argsort(perm)


def pooled_output_difference(
    attn_module: Callable[[Tensor], Tensor], tokens: Tensor, perm: Tensor
) -> float:
    """Exercise 2: ``max |mean_n f(x) - mean_n f(x[:, perm])|``, the change a shuffle makes to a
    mean-pooled output.

    Equivariance plus an order-free pooling (the mean over tokens) gives *invariance*: without
    position, a classifier on top of the pooled tokens gives the same answer for the image and
    for any shuffle of its patches. ``tokens``: ``(B, N, C)``.
    """
    check = permutation_equivariance_check(attn_module, tokens, perm)
    pooled_original = check.shuffled_output.mean(dim=1)  # the mean ignores the order of rows
    pooled_shuffled = check.output_of_shuffled.mean(dim=1)
    return (pooled_original - pooled_shuffled).abs().max().item()


def check_with_absolute_embedding(
    pos_embedding: AbsolutePositionEmbedding,
    attn_module: Callable[[Tensor], Tensor],
    tokens: Tensor,
    perm: Tensor,
) -> PermutationCheck:
    """Exercise 3: the equivariance check for ``f(x) = attn(x + pos)``.

    The position embedding is added *after* the shuffle, so token ``perm[i]`` now receives
    ``pos[i]`` instead of ``pos[perm[i]]``: what a token is paired with depends on where it
    sits, and the check fails.
    """
    return permutation_equivariance_check(lambda x: attn_module(pos_embedding(x)), tokens, perm)


def check_with_constant_table(
    attn_rel: WindowAttention, tokens: Tensor, perm: Tensor, value: float
) -> PermutationCheck:
    """Exercise 4 (predict, then check): the equivariance check with every entry of the bias
    table set to ``value`` (on a copy of ``attn_rel``).

    A constant added to every logit of a row shifts the row and the softmax ignores shifts, so
    the constant table is no position information at all: the module is equivariant again.
    """
    module = copy.deepcopy(attn_rel)
    with torch.no_grad():
        for table in module.code.parameters():  # the bias table, the code's one parameter
            table.fill_(value)
    return permutation_equivariance_check(module, tokens, perm)
