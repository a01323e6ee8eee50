"""Solutions to chapter 0's exercises (companion.exercises.ch00)."""

from __future__ import annotations

import pytest
import torch

from companion.absolute import AbsolutePositionEmbedding
from companion.bias_table import BiasTable
from companion.exercises.ch00 import (
    check_with_absolute_embedding,
    inverse_permutation,
    pooled_output_difference,
)


def test_inverse_permutation_undoes_the_shuffle():
    torch.manual_seed(0)
    perm = torch.randperm(10)
    inv = inverse_permutation(perm)
    x = torch.randn(2, 10, 3)
    assert torch.equal(x[:, perm][:, inv], x)
    assert torch.equal(perm[inv], torch.arange(10))


def test_inverse_permutation_rejects_non_permutations():
    with pytest.raises(ValueError, match="perm must be a permutation"):
        inverse_permutation(torch.tensor([0, 0, 1]))


def test_mean_pooling_makes_attention_without_position_permutation_invariant(window_attention):
    torch.manual_seed(1)
    diff = pooled_output_difference(
        window_attention(window_size=4), torch.randn(2, 16, 8), torch.randperm(16)
    )
    assert diff < 1e-5


def test_mean_pooling_does_not_hide_a_relative_position_bias(window_attention):
    torch.manual_seed(1)
    diff = pooled_output_difference(
        window_attention(BiasTable(), window_size=4), torch.randn(2, 16, 8), torch.randperm(16)
    )
    assert diff > 1e-5


def test_absolute_embedding_breaks_equivariance(window_attention):
    torch.manual_seed(2)
    pos = AbsolutePositionEmbedding(16, 8)
    check = check_with_absolute_embedding(
        pos, window_attention(window_size=4), torch.randn(2, 16, 8), torch.randperm(16)
    )
    assert not check.is_equivariant()
    assert check.max_abs_diff > 1e-3


@pytest.mark.parametrize("value", [0.0, 5.0, -3.0])
def test_a_constant_bias_table_leaves_attention_equivariant(value, window_attention):
    from companion.exercises.ch00 import check_with_constant_table

    tokens = 3 * torch.randn(1, 16, 8, generator=torch.Generator().manual_seed(1))
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(2))
    attn_rel = window_attention(BiasTable(), window_size=4)
    with torch.no_grad():
        attn_rel.code.relative_position_bias_table.normal_(std=1.0)
    before = attn_rel.code.relative_position_bias_table.clone()
    assert check_with_constant_table(attn_rel, tokens, perm, value).max_abs_diff < 1e-5
    assert torch.equal(attn_rel.code.relative_position_bias_table, before)  # the copy was changed
