"""offset_to_index / index_to_offset: the one-to-one map between offsets and bias-table rows."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.relative import (
    bias_table_size,
    index_to_offset,
    offset_to_index,
    relative_position_index,
)

windows = st.tuples(st.integers(1, 9), st.integers(1, 9))


def all_offsets(wh: int, ww: int) -> list[tuple[int, int]]:
    return list(itertools.product(range(-(wh - 1), wh), range(-(ww - 1), ww)))


def test_seed_example_offset_0_minus_1_is_row_3_for_m2():
    # Query (0, 0) minus key (0, 1) is the offset (0, -1): entry [0, 1] of the seed's index.
    assert offset_to_index(0, -1, 2) == 3 == relative_position_index(2)[0, 1]


def test_zero_offset_is_the_centre_row():
    for window in (1, 2, 7, (2, 3), (3, 5)):
        assert offset_to_index(0, 0, window) == (bias_table_size(window) - 1) // 2


@settings(max_examples=40, deadline=None)
@given(windows)
def test_offset_to_index_agrees_with_relative_position_index_at_every_pair(window):
    wh, ww = window
    index = relative_position_index(window)
    for q, k in itertools.product(range(wh * ww), repeat=2):
        (qy, qx), (ky, kx) = divmod(q, ww), divmod(k, ww)
        assert offset_to_index(qy - ky, qx - kx, window) == index[q, k]


@settings(max_examples=40, deadline=None)
@given(windows)
def test_offsets_map_onto_every_table_row_exactly_once(window):
    rows = [offset_to_index(dy, dx, window) for dy, dx in all_offsets(*window)]
    assert sorted(rows) == list(range(bias_table_size(window)))


@settings(max_examples=40, deadline=None)
@given(windows)
def test_index_to_offset_inverts_offset_to_index_both_ways(window):
    for dy, dx in all_offsets(*window):
        assert index_to_offset(offset_to_index(dy, dx, window), window) == (dy, dx)
    for i in range(bias_table_size(window)):
        assert offset_to_index(*index_to_offset(i, window), window) == i


def test_numbering_is_row_major_over_the_offset_grid():
    # Consecutive rows of the table step dx first; after dx = Ww - 1 comes the next dy.
    assert [index_to_offset(i, (2, 3)) for i in range(6)] == [
        (-1, -2), (-1, -1), (-1, 0), (-1, 1), (-1, 2), (0, -2),
    ]  # fmt: skip


def test_non_square_window_multiplies_by_2ww_minus_1():
    assert offset_to_index(1, 0, (2, 3)) - offset_to_index(0, 0, (2, 3)) == 5


@pytest.mark.parametrize(
    ("dy", "dx", "name", "allowed"),
    [(2, 0, "dy", "[-1, 1]"), (-2, 0, "dy", "[-1, 1]"), (0, 3, "dx", "[-2, 2]")],
)
def test_offset_out_of_range_names_the_parameter_value_and_range(dy, dx, name, allowed):
    with pytest.raises(
        ValueError, match=rf"{name} must be in \{allowed}.*got {dy if name == 'dy' else dx}"
    ):
        offset_to_index(dy, dx, (2, 3))


@pytest.mark.parametrize(("dy", "dx", "name"), [(0.0, 0, "dy"), (0, True, "dx"), ("0", 0, "dy")])
def test_offset_that_is_not_an_int_is_a_type_error(dy, dx, name):
    with pytest.raises(TypeError, match=f"{name} must be an int"):
        offset_to_index(dy, dx, 2)


@pytest.mark.parametrize("index", [-1, 9, 100])
def test_index_out_of_range_names_the_table_size(index):
    with pytest.raises(ValueError, match=rf"index must be in \[0, 8\].*9 rows.*got {index}"):
        index_to_offset(index, 2)


@pytest.mark.parametrize("index", [1.0, False, "3"])
def test_index_that_is_not_an_int_is_a_type_error(index):
    with pytest.raises(TypeError, match="index must be an int"):
        index_to_offset(index, 2)


@pytest.mark.parametrize("window", [0, (2, 0), 2.5])
def test_bad_window_size_is_rejected_by_both_directions(window):
    with pytest.raises((TypeError, ValueError), match="window_size"):
        offset_to_index(0, 0, window)
    with pytest.raises((TypeError, ValueError), match="window_size"):
        index_to_offset(0, window)
