"""companion.permutation: attention without position only reorders its outputs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.absolute import PatchEmbed
from companion.bias_table import BiasTable
from companion.permutation import (
    EQUIVARIANCE_ATOL,
    check_permutation,
    permutation_equivariance_check,
    shuffle_patches,
)


@pytest.mark.parametrize("attn_impl", ["sdpa", "eager"])
def test_attention_without_position_is_permutation_equivariant(attn_impl, window_attention):
    attn = window_attention(None, attn_impl=attn_impl)
    tokens = torch.randn(3, 6, 8)
    check = permutation_equivariance_check(attn, tokens, torch.tensor([2, 4, 0, 1, 5, 3]))
    assert check.output_of_shuffled.shape == (3, 6, 8)
    assert check.shuffled_output.shape == (3, 6, 8)
    assert check.max_abs_diff < EQUIVARIANCE_ATOL
    assert check.is_equivariant()
    assert check.summary().endswith(": equivariant")


@pytest.mark.parametrize("attn_impl", ["sdpa", "eager"])
def test_relative_position_bias_breaks_equivariance(attn_impl, window_attention):
    attn = window_attention(BiasTable(), attn_impl=attn_impl)
    tokens = torch.randn(3, 6, 8)
    check = permutation_equivariance_check(attn, tokens, torch.tensor([2, 4, 0, 1, 5, 3]))
    # Even the small freshly initialised bias (std 0.02) moves outputs well above rounding.
    assert check.max_abs_diff > 1e-4
    assert not check.is_equivariant()
    assert "NOT equivariant" in check.summary()


def test_identity_permutation_changes_nothing_even_with_a_bias(window_attention):
    attn = window_attention(BiasTable())
    check = permutation_equivariance_check(attn, torch.randn(1, 6, 8), torch.arange(6))
    assert check.max_abs_diff == 0.0


@settings(max_examples=20, deadline=None)
@given(st.permutations(list(range(6))), st.integers(0, 2**16))
def test_equivariance_holds_for_every_permutation(window_attention, perm, seed):
    attn = window_attention()
    tokens = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(seed))
    assert permutation_equivariance_check(attn, tokens, torch.tensor(perm)).is_equivariant()


def test_check_works_for_any_token_module():
    # A token-wise map (no mixing between tokens) is equivariant too.
    check = permutation_equivariance_check(
        torch.nn.Linear(4, 4), torch.randn(2, 5, 4), torch.tensor([4, 3, 2, 1, 0])
    )
    assert check.is_equivariant()


@pytest.mark.parametrize(
    ("perm", "exc", "match"),
    [
        (torch.tensor([0, 1, 1]), ValueError, r"permutation of 0\.\.2.*got \[0, 1, 1\]"),
        (torch.tensor([0, 1]), ValueError, r"permutation of 0\.\.2"),
        (torch.tensor([0, 1, 3]), ValueError, r"permutation of 0\.\.2"),
        (torch.tensor([[0, 1, 2]]), ValueError, r"permutation of 0\.\.2"),
        (torch.tensor([0.0, 1.0, 2.0]), TypeError, "integer tensor"),
        ([0, 1, 2], TypeError, "integer tensor"),
    ],
)
def test_check_permutation_rejects_non_permutations(perm, exc, match):
    with pytest.raises(exc, match=match):
        check_permutation(perm, 3)


def test_check_rejects_tokens_without_batch_axis(window_attention):
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, N, C\)"):
        permutation_equivariance_check(window_attention(), torch.randn(6, 8), torch.arange(6))


def test_shuffled_image_gives_shuffled_patch_tokens():
    torch.manual_seed(0)
    pe = PatchEmbed(img_size=32, patch_size=8, embed_dim=4)
    image = torch.randn(2, 3, 32, 32)
    perm = torch.randperm(16)
    torch.testing.assert_close(pe(shuffle_patches(image, 8, perm)), pe(image)[:, perm])


def test_shuffle_patches_keeps_unbatched_shape_and_undoes_with_argsort():
    image = torch.randn(3, 16, 24)
    perm = torch.randperm(6)
    shuffled = shuffle_patches(image, 8, perm)
    assert shuffled.shape == image.shape
    assert torch.equal(shuffle_patches(shuffled, 8, torch.argsort(perm)), image)
    assert torch.equal(shuffle_patches(image, 8, torch.arange(6)), image)


def test_shuffle_patches_moves_whole_patches():
    image = torch.arange(4, dtype=torch.float32).repeat_interleave(4).reshape(1, 4, 4)
    # Columns 0..3 hold values 0..3; with 2x2 patches patch 0 holds {0, 1}, patch 1 {2, 3}.
    image = image.transpose(1, 2).expand(3, 4, 4)
    shuffled = shuffle_patches(image, 2, torch.tensor([1, 0, 3, 2]))
    assert shuffled[0, 0].tolist() == [2.0, 3.0, 0.0, 1.0]


def test_shuffle_patches_rejects_bad_input():
    with pytest.raises(ValueError, match="patch_size"):
        shuffle_patches(torch.randn(3, 10, 16), 8, torch.arange(2))
    with pytest.raises(ValueError, match="image must have shape"):
        shuffle_patches(torch.randn(16, 16), 8, torch.arange(4))
    with pytest.raises(ValueError, match=r"permutation of 0\.\.3"):
        shuffle_patches(torch.randn(3, 16, 16), 8, torch.arange(3))
