"""companion.relative: each step, the composed index, and its properties over many windows."""

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.attention import WindowAttention
from companion.relative import (
    bias_table_size,
    flatten_coordinates,
    grid_coordinates,
    lookup_bias,
    make_bias_table,
    multiply_row_offsets,
    pairwise_offsets,
    relative_position_index,
    shift_offsets,
    sum_offsets,
)

SEED_M2_INDEX = [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]

windows = st.tuples(st.integers(1, 16), st.integers(1, 16))


def brute_force_index(wh: int, ww: int) -> torch.Tensor:
    """Written independently of the package: loop over (query, key) cells in row-major order."""
    cells = [(r, c) for r in range(wh) for c in range(ww)]
    out = torch.empty(len(cells), len(cells), dtype=torch.long)
    for qi, (qr, qc) in enumerate(cells):
        for ki, (kr, kc) in enumerate(cells):
            out[qi, ki] = (qr - kr + wh - 1) * (2 * ww - 1) + (qc - kc + ww - 1)
    return out


def test_m2_index_equals_the_seed_example():
    assert relative_position_index(2).tolist() == SEED_M2_INDEX


def test_int_and_square_pair_give_the_same_index():
    assert torch.equal(relative_position_index(3), relative_position_index((3, 3)))


def test_grid_coordinates_are_row_and_column_numbers():
    coords = grid_coordinates((2, 3))
    assert coords.shape == (2, 2, 3)
    assert coords[0].tolist() == [[0, 0, 0], [1, 1, 1]]
    assert coords[1].tolist() == [[0, 1, 2], [0, 1, 2]]


def test_flatten_is_row_major():
    flat = flatten_coordinates(grid_coordinates(2))
    assert flat.tolist() == [[0, 0, 1, 1], [0, 1, 0, 1]]


def test_pairwise_offsets_are_query_minus_key():
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(2)))
    assert offsets.shape == (4, 4, 2)
    # the seed's example: query (0,0), key (0,1) -> (0,0) - (0,1) = (0,-1)
    assert offsets[0, 1].tolist() == [0, -1]
    assert offsets[3, 0].tolist() == [1, 1]


def test_shift_makes_offsets_non_negative_and_multiply_scales_rows():
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates((2, 3))))
    shifted = shift_offsets(offsets, (2, 3))
    assert shifted[..., 0].min() == 0 and shifted[..., 0].max() == 2
    assert shifted[..., 1].min() == 0 and shifted[..., 1].max() == 4
    scaled = multiply_row_offsets(shifted, (2, 3))
    assert torch.equal(scaled[..., 0], shifted[..., 0] * 5)
    assert torch.equal(scaled[..., 1], shifted[..., 1])
    assert torch.equal(sum_offsets(scaled), relative_position_index((2, 3)))


def test_step_functions_reject_wrong_shapes():
    with pytest.raises(ValueError, match=r"coords must have shape \(2, Wh, Ww\)"):
        flatten_coordinates(torch.zeros(3, 2, 2))
    with pytest.raises(ValueError, match=r"coords_flat must have shape \(2, N\)"):
        pairwise_offsets(torch.zeros(3, 4))


@settings(max_examples=60, deadline=None)
@given(windows)
def test_index_values_cover_exactly_the_table_rows(window):
    index = relative_position_index(window)
    assert set(index.unique().tolist()) == set(range(bias_table_size(window)))


@settings(max_examples=40, deadline=None)
@given(windows)
def test_equal_index_if_and_only_if_equal_offset(window):
    index = relative_position_index(window).flatten()
    offsets = pairwise_offsets(flatten_coordinates(grid_coordinates(window))).reshape(-1, 2)
    # Map each index value to one offset; the map must be a function and injective.
    seen: dict[int, tuple[int, int]] = {}
    for value, offset in zip(index.tolist(), map(tuple, offsets.tolist()), strict=True):
        assert seen.setdefault(value, offset) == offset
    assert len(set(seen.values())) == len(seen)


@settings(max_examples=60, deadline=None)
@given(windows)
def test_diagonal_holds_the_centre_of_the_table(window):
    wh, ww = window
    centre = (wh - 1) * (2 * ww - 1) + (ww - 1)
    assert centre == (bias_table_size(window) - 1) // 2
    assert (relative_position_index(window).diagonal() == centre).all()


@settings(max_examples=60, deadline=None)
@given(windows)
def test_index_equals_an_independent_double_loop(window):
    assert torch.equal(relative_position_index(window), brute_force_index(*window))


def test_index_is_antisymmetric_about_the_centre():
    # offset(q, k) = -offset(k, q), so index[q, k] + index[k, q] = 2 * centre
    for window in [(1, 1), (2, 2), (3, 5), (7, 7)]:
        index = relative_position_index(window)
        centre = (bias_table_size(window) - 1) // 2
        assert (index + index.T == 2 * centre).all()


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, ValueError),
        (-3, ValueError),
        ((0, 2), ValueError),
        (2.0, TypeError),
        ("7", TypeError),
        ((2, 3, 4), TypeError),
        (True, TypeError),
        ((2, 2.5), TypeError),
    ],
)
def test_bad_window_size_names_the_parameter(value, error):
    with pytest.raises(error, match="window_size") as info:
        relative_position_index(value)
    assert repr(value) in str(info.value)


def test_bias_table_size_matches_formula():
    for wh, ww in itertools.product(range(1, 6), repeat=2):
        assert bias_table_size((wh, ww)) == (2 * wh - 1) * (2 * ww - 1)


def test_make_bias_table_shape_and_truncated_normal_init():
    torch.manual_seed(0)
    table = make_bias_table(7, 16)
    assert table.shape == (169, 16) and table.requires_grad
    assert table.abs().max() <= 2.0  # trunc_normal_ cuts at ±2 (absolute), far beyond 0.02 std
    assert 0.015 < table.std().item() < 0.025


def test_make_bias_table_rejects_bad_heads():
    with pytest.raises(ValueError, match="num_heads"):
        make_bias_table(2, 0)


def test_lookup_bias_reads_the_table_row_of_each_offset():
    table = torch.arange(9 * 2, dtype=torch.float32).view(9, 2)
    bias = lookup_bias(table, relative_position_index(2))
    assert bias.shape == (2, 4, 4)
    index = relative_position_index(2)
    for h, q, k in itertools.product(range(2), range(4), range(4)):
        assert bias[h, q, k] == table[index[q, k], h]


def test_window_attention_keeps_the_table_and_a_recomputed_index():
    torch.manual_seed(0)
    module = WindowAttention(8, (2, 3), num_heads=4)
    assert module.code.relative_position_bias_table.shape == (15, 4)
    assert "relative_position_index" not in module.state_dict()
    assert torch.equal(module.code.relative_position_index, relative_position_index((2, 3)))
    bias = module.relative_position_bias()
    assert bias.shape == (4, 6, 6)
    # pairs with the same offset share one value: (0,0)->(0,1) and (1,1)->(1,2)
    assert torch.equal(bias[:, 0, 1], bias[:, 4, 5])


def test_relative_position_bias_gradient_reaches_only_used_rows():
    table = make_bias_table(2, num_heads=1)
    lookup_bias(table, relative_position_index(2)).sum().backward()
    # row r is used once per (q, k) pair with that offset: counts for M=2
    assert table.grad[:, 0].tolist() == [1, 2, 1, 2, 4, 2, 1, 2, 1]


def test_make_bias_table_rejects_heads_that_are_not_ints():
    with pytest.raises(TypeError, match="num_heads"):
        make_bias_table(2, num_heads=2.0)


@pytest.mark.parametrize("window_size", [10**6, (2**16, 2**16)])
def test_an_index_too_large_for_memory_is_refused_naming_window_size(window_size):
    with pytest.raises(ValueError, match=r"window_size=.* is too large: .* GiB, more than"):
        relative_position_index(window_size)
