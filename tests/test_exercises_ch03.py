"""Chapter 3 exercise solutions: table-row usage, the 2-D lookup, a directional head, SoftMax(B)."""

import itertools

import pytest
import torch
from torch import nn

from companion.attention import WindowAttention
from companion.exercises.ch03 import (
    directional_bias_table,
    lookup_bias_2d,
    pairs_per_offset,
    position_only_attention,
)
from companion.relative import bias_table_size, lookup_bias, relative_position_index

WINDOWS = [1, 2, 3, 7, (2, 3), (3, 2), (1, 4)]


@pytest.mark.parametrize("window", WINDOWS)
def test_pairs_per_offset_is_the_overlap_count_and_sums_to_n_squared(window):
    wh, ww = (window, window) if isinstance(window, int) else window
    counts = pairs_per_offset(window)
    assert counts.shape == (2 * wh - 1, 2 * ww - 1)
    for i, j in itertools.product(range(2 * wh - 1), range(2 * ww - 1)):
        dy, dx = i - (wh - 1), j - (ww - 1)
        assert counts[i, j] == (wh - abs(dy)) * (ww - abs(dx))
    assert counts.sum() == (wh * ww) ** 2


def test_pairs_per_offset_m2_centre_is_read_by_the_four_diagonal_pairs():
    assert pairs_per_offset(2).tolist() == [[1, 2, 1], [2, 4, 2], [1, 2, 1]]


@pytest.mark.parametrize("window", WINDOWS)
def test_lookup_bias_2d_equals_the_flat_lookup(window):
    torch.manual_seed(0)
    table = torch.randn(bias_table_size(window), 3)
    expected = lookup_bias(table, relative_position_index(window))
    assert torch.equal(lookup_bias_2d(table, window), expected)


def test_lookup_bias_2d_rejects_a_table_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"table must have shape \(9, num_heads\).*got \(8, 2\)"):
        lookup_bias_2d(torch.zeros(8, 2), 2)


@pytest.mark.parametrize(
    ("toward", "expected"),
    [
        ("left", lambda qy, qx, ky, kx: qx - kx),
        ("right", lambda qy, qx, ky, kx: kx - qx),
        ("up", lambda qy, qx, ky, kx: qy - ky),
        ("down", lambda qy, qx, ky, kx: ky - qy),
    ],
)
def test_directional_table_rewards_keys_on_the_chosen_side(toward, expected):
    window = (3, 4)
    bias = lookup_bias(directional_bias_table(window, toward, 0.5), relative_position_index(window))
    assert bias.shape == (1, 12, 12)
    for q, k in itertools.product(range(12), repeat=2):
        (qy, qx), (ky, kx) = divmod(q, 4), divmod(k, 4)
        assert bias[0, q, k] == 0.5 * expected(qy, qx, ky, kx)


def test_directional_table_rejects_an_unknown_direction():
    with pytest.raises(ValueError, match=r"toward must be one of .*got 'north'"):
        directional_bias_table(3, "north")


def test_position_only_attention_rows_are_probabilities():
    torch.manual_seed(0)
    probs = position_only_attention(WindowAttention(16, 3, 2))
    assert probs.shape == (2, 9, 9)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 9))


def test_position_only_attention_is_attention_with_the_content_term_removed():
    # With a zero qkv projection every query and key is 0, so the logits are exactly B.
    torch.manual_seed(0)
    attn = WindowAttention(16, 3, 2, attn_impl="eager")
    with torch.no_grad():
        nn.init.zeros_(attn.qkv.weight)
        nn.init.zeros_(attn.qkv.bias)
    x = torch.randn(4, 9, 16)
    expected = position_only_attention(attn).expand(4, -1, -1, -1)
    torch.testing.assert_close(attn.attention_probs(x), expected)


def test_position_only_attention_needs_a_bias():
    with pytest.raises(ValueError, match="must add a position bias B, got position=None"):
        position_only_attention(WindowAttention(16, 3, 2, position=None))


def test_position_only_attention_rejects_other_modules():
    with pytest.raises(TypeError, match="attn must be a WindowAttention, got Linear"):
        position_only_attention(nn.Linear(2, 2))


def test_an_even_table_gives_a_symmetric_bias_and_an_odd_one_an_antisymmetric_bias():
    from companion.exercises.ch03 import transpose_gaps
    from companion.figures.bias import illustrative_distance_table

    symmetric, _ = transpose_gaps(illustrative_distance_table(7, [0.0, 0.5, 1.0, 2.0]), 7)
    _, antisymmetric = transpose_gaps(directional_bias_table(7, "left", strength=0.5), 7)
    assert symmetric == 0.0 and antisymmetric == 0.0
    random_gaps = transpose_gaps(torch.randn(169, 2, generator=torch.Generator().manual_seed(0)), 7)
    assert min(random_gaps) > 0.1
