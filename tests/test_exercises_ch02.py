"""Chapter 2 exercise solutions: the index by hand, and what each step of the recipe prevents."""

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion._checks import to_pair
from companion.exercises.ch02 import (
    column_major_index,
    count_distinct_offsets,
    index_by_hand,
    index_with_row_multiplier,
    index_without_shift,
    offset_collisions,
    offset_numbers,
    shifted_offsets,
    smallest_collision_free_multiplier,
)
from companion.relative import bias_table_size, relative_position_index

WINDOWS = [1, 2, 3, (2, 3), (3, 2), (1, 4), (4, 1)]
windows = st.tuples(st.integers(1, 7), st.integers(1, 7))


@pytest.mark.parametrize("window", WINDOWS)
def test_index_by_hand_matches_relative_position_index_at_every_pair(window):
    index = relative_position_index(window)
    n = index.shape[0]
    for q, k in itertools.product(range(n), repeat=2):
        assert index_by_hand(q, k, window) == index[q, k]


def test_index_by_hand_worked_example_for_m3():
    # Query 1 = (0, 1), key 5 = (1, 2): offset (-1, -1), shifted (1, 1), 1 * 5 + 1 = 6.
    assert index_by_hand(1, 5, 3) == 6


@pytest.mark.parametrize(("query", "key", "name"), [(4, 0, "query"), (0, -1, "key")])
def test_index_by_hand_rejects_tokens_outside_the_window(query, key, name):
    with pytest.raises(ValueError, match=rf"{name} must be a token number in \[0, 3\]"):
        index_by_hand(query, key, 2)


def test_index_by_hand_rejects_non_int_tokens():
    with pytest.raises(TypeError, match="query must be an int"):
        index_by_hand(1.0, 0, 2)


@pytest.mark.parametrize("window", WINDOWS)
def test_multiplier_2ww_minus_1_reproduces_the_index(window):
    _, ww = to_pair("window_size", window)
    index = index_with_row_multiplier(window, 2 * ww - 1)
    assert torch.equal(index, relative_position_index(window))


def test_without_the_multiply_m2_offsets_on_an_anti_diagonal_collide():
    collisions = offset_collisions(2, 1)
    assert collisions[2] == [(-1, 1), (0, 0), (1, -1)]
    assert collisions[1] == [(-1, 0), (0, -1)]
    # Only 5 different numbers for 9 offsets, so the M=2 index reads 5 table rows.
    assert index_with_row_multiplier(2, 1).unique().tolist() == [0, 1, 2, 3, 4]


def test_multiplying_by_m_instead_of_2m_minus_1_collides_shifted_0_2_and_1_0():
    # Shifted (0, 2) is offset (-1, 1); shifted (1, 0) is offset (0, -1). Both get 0*2+2 = 1*2+0.
    assert offset_collisions(2, 2)[2] == [(-1, 1), (0, -1)]


@settings(max_examples=30, deadline=None)
@given(windows)
def test_offset_numbers_are_what_the_index_puts_at_each_pair(window):
    for multiplier in (1, 2, 5):
        index = index_with_row_multiplier(window, multiplier)
        shifted = shifted_offsets(window)
        grid = offset_numbers(window, multiplier)
        assert torch.equal(grid[shifted[..., 0], shifted[..., 1]], index)


@settings(max_examples=30, deadline=None)
@given(windows)
def test_multipliers_below_2ww_minus_1_collide_and_2ww_minus_1_does_not(window):
    wh, ww = window
    assert offset_collisions(window, 2 * ww - 1) == {}
    for multiplier in range(1, 2 * ww - 1):
        assert bool(offset_collisions(window, multiplier)) == (wh > 1)


@pytest.mark.parametrize(
    ("window", "expected"), [(1, 1), (2, 3), (3, 5), (7, 13), ((2, 3), 5), ((3, 2), 3), ((1, 5), 1)]
)
def test_smallest_collision_free_multiplier_is_2ww_minus_1(window, expected):
    assert smallest_collision_free_multiplier(window) == expected


@settings(max_examples=30, deadline=None)
@given(windows)
def test_distinct_offsets_are_exactly_the_table_size(window):
    assert count_distinct_offsets(window) == bias_table_size(window)


@pytest.mark.parametrize("window", WINDOWS)
def test_column_major_numbering_is_another_bijection_of_the_same_offsets(window):
    row_major, col_major = relative_position_index(window), column_major_index(window)
    assert col_major.unique().numel() == bias_table_size(window) == row_major.unique().numel()
    # Same offset -> same number in both numberings: a permutation of the table rows.
    pairs = set(zip(row_major.flatten().tolist(), col_major.flatten().tolist(), strict=True))
    assert len(pairs) == bias_table_size(window)


@pytest.mark.parametrize("window", WINDOWS)
def test_index_without_shift_is_the_index_minus_the_centre_row(window):
    raw = index_without_shift(window)
    centre = (bias_table_size(window) - 1) // 2
    assert torch.equal(raw + centre, relative_position_index(window))
    assert torch.equal(raw, -raw.T)  # swapping query and key negates the offset
    if bias_table_size(window) > 1:
        assert raw.min() == -centre < 0


@pytest.mark.parametrize(("multiplier", "error"), [(0, ValueError), (1.5, TypeError)])
def test_bad_multiplier_names_the_parameter(multiplier, error):
    with pytest.raises(error, match="multiplier must be an int >= 1"):
        index_with_row_multiplier(2, multiplier)
    with pytest.raises(error, match="multiplier"):
        offset_collisions(2, multiplier)


def test_only_the_opposite_corners_read_the_first_and_last_rows():
    from companion.exercises.ch02 import pairs_reading_row

    assert pairs_reading_row(7, 168) == [(48, 0)]
    assert pairs_reading_row(7, 0) == [(0, 48)]
    assert pairs_reading_row((2, 3), 14) == [(5, 0)]
    assert pairs_reading_row(2, 4) == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_pairs_reading_row_rejects_a_row_outside_the_table():
    from companion.exercises.ch02 import pairs_reading_row

    with pytest.raises(ValueError, match=r"row must be an int in \[0, 8\]"):
        pairs_reading_row(2, 9)
