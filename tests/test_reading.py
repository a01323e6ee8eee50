"""Reading an ablation where a mean would mislead: the constant-answer level, split cells counted
with an exact interval, and the random-table null for favourite offsets."""

import random

import pytest

from companion.experiments.reading import (
    binomial_interval,
    chebyshev_distance,
    constant_answer_range,
    is_split,
    ring_null,
    ring_probability,
    solved_count,
)
from companion.experiments.results import gaps_table, seed_counts


def _row(values, dataset="grid-cell", pos="rel", variant="swin"):
    return {"dataset": dataset, "pos": pos, "variant": variant, "n": len(values),
            "mean": sum(values) / len(values), "std": None, "seeds": list(range(len(values))),
            "values": values}  # fmt: skip


def test_constant_answer_range_is_the_smallest_and_largest_class_share():
    assert constant_answer_range([0, 0, 0, 1, 2, 2]) == (1 / 6, 3 / 6)


def test_constant_answer_range_rejects_no_labels():
    with pytest.raises(ValueError, match="labels"):
        constant_answer_range([])


def test_solved_count_counts_seeds_at_or_above_the_threshold():
    assert solved_count(_row([0.803, 0.491, 0.993, 0.995, 0.997]), 0.9) == (3, 5)
    assert solved_count(_row([0.9, 0.5]), 0.9) == (1, 2)


def test_solved_count_rejects_a_threshold_that_is_not_a_fraction():
    with pytest.raises(ValueError, match="threshold"):
        solved_count(_row([0.5]), 90)


def test_is_split_only_when_seeds_fall_on_both_sides():
    assert is_split(_row([0.5, 0.99]), 0.9)
    assert not is_split(_row([0.95, 0.99]), 0.9)
    assert not is_split(_row([0.05, 0.06]), 0.9)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    # Clopper-Pearson values from the beta quantiles (R's binom.test).
    [
        (3, 5, 0.1466328, 0.9472550),
        (0, 5, 0.0, 0.5218238),
        (5, 5, 0.4781762, 1.0),
        (1, 10, 0.0025286, 0.4450161),
    ],
)
def test_binomial_interval_matches_the_exact_clopper_pearson_values(k, n, low, high):
    got = binomial_interval(k, n)
    assert got == pytest.approx((low, high), abs=1e-6)


def test_binomial_interval_names_a_count_outside_zero_to_n():
    with pytest.raises(ValueError, match="k must be an integer in"):
        binomial_interval(6, 5)


def test_ring_probability_of_distance_two_or_three_in_a_4x4_window_is_40_of_49():
    assert ring_probability((4, 4), (2, 3)) == pytest.approx(40 / 49)
    assert ring_probability((4, 4), (0,)) == pytest.approx(1 / 49)


def test_ring_probability_is_where_random_tables_put_their_arg_max():
    rng = random.Random(0)
    offsets = [(dy, dx) for dy in range(-3, 4) for dx in range(-3, 4)]
    hits = 0
    for _ in range(20000):
        values = [rng.random() for _ in offsets]
        best = offsets[values.index(max(values))]
        hits += chebyshev_distance(best) in (2, 3)
    assert hits / 20000 == pytest.approx(40 / 49, abs=0.01)


def test_ring_null_counts_the_favourites_and_states_the_expected_count():
    line = ring_null([(0, 2), (3, 3), (1, 0)], (4, 4), (2, 3))
    assert line.startswith("2 of 3 at distance 2 or 3 | random tables: p = 81.6%,")
    assert "2.4 expected" in line


def test_seed_counts_marks_a_split_cell_and_prints_every_seed():
    text = seed_counts([_row([0.803, 0.491, 0.993, 0.995, 0.997])], 0.9)
    line = text.splitlines()[1]
    assert "80.3  49.1  99.3  99.5  99.7" in line
    assert "solved 3/5 [ 15,  95] %  split" in line


def test_gaps_table_gives_no_interval_to_a_gap_with_a_split_cell():
    summary = [_row([0.803, 0.491, 0.993, 0.995, 0.997]),
               _row([0.999, 0.951, 1.0, 1.0, 1.0], pos="abs")]  # fmt: skip
    lines = gaps_table(summary, pairs=(("abs", "rel"),), solved=0.9).splitlines()
    assert lines[1].endswith("(split seeds: no interval)")
    with_interval = gaps_table(summary, pairs=(("abs", "rel"),)).splitlines()[1]
    assert "[" in with_interval


def test_gaps_table_without_chance_prints_only_the_pairs():
    summary = [_row([0.2, 0.3]), _row([0.4, 0.6], pos="abs")]
    lines = gaps_table(summary, pairs=(("abs", "rel"),)).splitlines()
    assert len(lines) == 2 and "chance" not in lines[1]
