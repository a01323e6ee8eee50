import pytest
import torch

from companion.absolute import sincos_2d_position_embedding
from companion.learned_embedding import (
    grid_table,
    neighbour_similarity_gap,
    permutation_p_value,
    shuffled_null,
)


def test_smooth_embedding_has_positive_neighbour_gap_far_outside_the_null():
    table = sincos_2d_position_embedding(8, 32)  # (64, 32): neighbours alike by construction
    observed = neighbour_similarity_gap(table, 8)
    null = shuffled_null(table, 8, draws=200)
    assert observed > 0.1
    assert observed > null.max()
    assert permutation_p_value(observed, null) == pytest.approx(1 / 201)


def test_random_embedding_sits_inside_its_null():
    table = torch.randn(64, 32, generator=torch.Generator().manual_seed(0))
    null = shuffled_null(table, 8, draws=200)
    assert abs(float(null.mean())) < 0.01
    assert permutation_p_value(neighbour_similarity_gap(table, 8), null) > 0.05


def test_shuffled_null_is_deterministic_for_a_seed():
    table = torch.randn(16, 8)
    assert torch.equal(shuffled_null(table, 4, 20, seed=3), shuffled_null(table, 4, 20, seed=3))


def test_grid_table_flattens_swin_layout_row_major():
    embed = torch.arange(2 * 3 * 4.0).reshape(1, 2, 3, 4)
    table, grid = grid_table(embed)
    assert grid == (2, 3)
    assert torch.equal(table[4], embed[0, 1, 1])


def test_grid_table_rejects_other_shapes_naming_the_parameter():
    with pytest.raises(ValueError, match="pos_embed must be a \\(1, h, w, D\\)"):
        grid_table(torch.zeros(64, 32))
