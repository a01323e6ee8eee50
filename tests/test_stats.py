"""The paired t interval behind every gap the book reads, the t quantile it rests on (SciPy's,
checked against printed tables), the paired t test and Holm's adjustment; split cells counted
with an exact interval, and the random-table null for favourite offsets."""

import math
import random

import pytest
from scipy import stats

from companion.experiments.stats import (
    binomial_interval,
    format_p,
    holm_bounds,
    paired_interval,
    ring_null,
    t_quantile,
)


def holm(p_values):
    """The adjusted p-values alone, none of them at a floor."""
    return [adjusted for adjusted, _ in holm_bounds(p_values, [0.0] * len(p_values))]


#: t_{0.975, df} for df = 1..30, as printed in every statistics table (3 decimals).
T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


@pytest.mark.parametrize("df", range(1, 31))
def test_t_quantile_matches_the_printed_table_for_df_1_to_30(df):
    assert t_quantile(0.975, df) == pytest.approx(T975[df - 1], abs=5e-4)


def test_t_quantile_other_levels_and_symmetry():
    assert t_quantile(0.95, 10) == pytest.approx(1.812, abs=5e-4)
    assert t_quantile(0.995, 4) == pytest.approx(4.604, abs=5e-4)
    assert t_quantile(0.025, 4) == pytest.approx(-2.776, abs=5e-4)
    assert t_quantile(0.5, 3) == pytest.approx(0.0, abs=1e-9)


def test_t_quantile_rejects_bad_arguments_naming_them():
    with pytest.raises(ValueError, match="df must be an int >= 1"):
        t_quantile(0.975, 0)
    with pytest.raises(ValueError, match=r"p must be a number in \(0, 1\)"):
        t_quantile(1.0, 4)


def test_paired_interval_is_mean_plus_minus_t_times_standard_error():
    mean, low, high = paired_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)
    assert (mean, low, high) == pytest.approx((3.0, 3.0 - half, 3.0 + half), abs=1e-6)
    with pytest.raises(ValueError, match="at least 2"):
        paired_interval([1.0])


def test_paired_interval_is_scipys_paired_t_test_interval():
    a, b = [0.91, 0.85, 0.97, 0.78, 0.88], [0.80, 0.86, 0.83, 0.70, 0.79]
    differences = [x - y for x, y in zip(a, b, strict=True)]
    for confidence in (0.9, 0.95, 0.99):
        by_scipy = stats.ttest_rel(a, b).confidence_interval(confidence)
        _, low, high = paired_interval(differences, confidence)
        assert (low, high) == pytest.approx((by_scipy.low, by_scipy.high), abs=1e-12)


def test_holm_multiplies_by_rank_keeps_order_and_caps_at_one():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.3]) == [0.3]
    assert holm([]) == []
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_holm_is_between_the_raw_p_and_bonferroni():
    p = [0.001, 0.2, 0.013, 0.04, 0.0004, 0.7]
    for raw, adjusted in zip(p, holm(p), strict=True):
        assert raw <= adjusted <= min(1.0, len(p) * raw)


def test_holm_rejects_a_p_value_outside_0_1():
    with pytest.raises(ValueError, match=r"p_values must be numbers in \[0, 1\], got 1.5"):
        holm([0.1, 1.5])


def test_a_p_value_at_its_floor_prints_as_a_bound_never_as_a_number():
    floor = 1 / 4001  # a bootstrap of 4,000 replicates
    assert format_p(floor, floor) == "p < 0.00025"
    assert format_p(0.93, floor) == "p = 0.93"
    assert format_p(3 / 4001, floor) == "p = 0.00075"  # one replicate past 0: measured
    assert format_p(0.00012) == "p = 0.00012"  # an exact test has no floor
    assert format_p(6 * floor, 6 * floor, "p_Holm") == "p_Holm < 0.0015"
    with pytest.raises(ValueError, match=r"p must be a number in \[0, 1\], got 1.2"):
        format_p(1.2)
    with pytest.raises(ValueError, match=r"floor must be a number in \[0, 1\), got 1.0"):
        format_p(0.5, 1.0)


def test_holm_bounds_mark_adjusted_p_values_that_rest_on_floored_ones():
    floor = 1 / 4001
    p = [floor, 0.2, floor, 0.01]
    got = holm_bounds(p, [floor] * 4)
    assert [v for v, _ in got] == pytest.approx(holm(p))
    # The two floored p-values set their own adjusted values (4 and 3 times the floor, raised
    # to the running maximum): bounds. 0.01 * 2 and 0.2 * 1 are measured: numbers.
    assert [b for _, b in got] == [True, False, True, False]
    assert got[0][0] == pytest.approx(4 * floor) and got[2][0] == pytest.approx(4 * floor)


def test_holm_bounds_a_measured_term_that_sets_the_maximum_is_a_number():
    floor = 1 / 4001
    # 0.0004 * 3 = 0.0012 exceeds the floored term 4 * floor = 0.001: it sets the next value.
    got = holm_bounds([floor, 0.0004, 0.5, 0.5], [floor] * 4)
    assert got[0] == (pytest.approx(4 * floor), True)
    assert got[1] == (pytest.approx(0.0012), False)
    assert holm_bounds([0.5], [0.0]) == [(0.5, False)]  # no floor: never a bound
    with pytest.raises(ValueError, match="same length"):
        holm_bounds([0.1, 0.2], [0.0])


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


def test_ring_null_chance_of_distance_two_or_three_in_a_4x4_window_is_40_of_49():
    assert "random tables: p = 81.6%, 0.8 expected" in ring_null([(2, 0)], (4, 4), (2, 3))
    assert "random tables: p = 2.0%, 0.0 expected" in ring_null([(0, 0)], (4, 4), (0,))


def test_ring_null_chance_is_where_random_tables_put_their_arg_max():
    rng = random.Random(0)
    offsets = [(dy, dx) for dy in range(-3, 4) for dx in range(-3, 4)]
    hits = 0
    for _ in range(20000):
        values = [rng.random() for _ in offsets]
        dy, dx = offsets[values.index(max(values))]
        hits += max(abs(dy), abs(dx)) in (2, 3)
    assert hits / 20000 == pytest.approx(40 / 49, abs=0.01)
    assert "p = 81.6%" in ring_null([(0, 0)], (4, 4), (2, 3))  # 40 / 49


def test_ring_null_counts_the_favourites_and_states_the_expected_count():
    line = ring_null([(0, 2), (3, 3), (1, 0)], (4, 4), (2, 3))
    assert line.startswith("2 of 3 at distance 2 or 3 | random tables: p = 81.6%,")
    assert "2.4 expected" in line
