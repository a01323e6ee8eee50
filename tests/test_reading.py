"""Reading an ablation where a mean would mislead: the constant-answer level, split cells counted
with an exact interval, and the random-table null for favourite offsets."""

import random

import pytest

from companion.experiments.stats import (
    binomial_interval,
    chebyshev_distance,
    ring_null,
    ring_probability,
)


def _row(values, dataset="grid-cell", pos="rel", variant="swin"):
    return {"dataset": dataset, "pos": pos, "variant": variant, "n": len(values),
            "mean": sum(values) / len(values), "std": None, "seeds": list(range(len(values))),
            "values": values}  # fmt: skip


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
