"""The two-stage bootstrap (seeds and test images) and Fisher's exact test on solve counts."""

import numpy as np
import pytest

from companion.experiments.bootstrap import gap_interval, lift_gap_interval
from companion.experiments.stats import fisher_exact, format_p


def coin(seeds, images, p, seed=0):
    return np.random.default_rng(seed).random((seeds, images)) < p


def test_an_interval_never_leaves_the_attainable_range_even_when_seeds_split():
    split = np.zeros((10, 500), dtype=bool)
    split[:7] = True  # seven seeds solved every image, three none
    got = gap_interval(split)
    assert got.estimate == pytest.approx(0.7)
    assert 0.0 <= got.low <= got.high <= 1.0 and got.high > 0.9 and got.low < 0.5


def test_one_seed_still_gets_the_test_images_sampling_error():
    got = gap_interval(coin(1, 1000, 0.5))
    half = (got.high - got.low) / 2
    assert 0.025 < half < 0.038  # binomial: 1.96 * sqrt(0.25 / 1000) = 0.031


def test_a_gap_uses_the_same_seeds_and_images_on_both_sides():
    a = coin(10, 1000, 0.8)
    b = a.copy()
    b[:, :20] = ~b[:, :20]  # the two cells differ on 20 images only
    got = gap_interval(a, b)
    assert got.estimate == pytest.approx(a.mean() - b.mean())
    assert got.high - got.low < 0.02
    same = gap_interval(a, a)
    assert (same.estimate, same.low, same.high, same.p) == (0.0, 0.0, 0.0, 1.0)


def test_a_constant_answer_scores_zero_against_the_constant_answer_on_the_same_images():
    labels = np.random.default_rng(1).choice(4, 800, p=[0.4, 0.2, 0.2, 0.2])
    mode = np.bincount(labels).argmax()
    constant = np.tile(labels == mode, (5, 1))
    got = gap_interval(constant, labels=labels)
    assert got.estimate == pytest.approx(0.0) and got.high <= 1e-12 < -got.low + 1e-12


def test_a_lift_gap_compares_two_test_sets_each_against_its_own_constant_answer():
    rng = np.random.default_rng(2)
    seen, unseen = rng.choice(4, 600), rng.choice(4, 600, p=[0.4, 0.4, 0.1, 0.1])
    # a model that keeps 30 points above the constant answer on both sets
    a_seen = coin(10, 600, np.bincount(seen).max() / 600 + 0.3, seed=3)
    a_unseen = coin(10, 600, np.bincount(unseen).max() / 600 + 0.3, seed=4)
    got = lift_gap_interval(a_seen, seen, a_unseen, unseen)
    assert got.low < 0 < got.high and abs(got.estimate) < 0.03
    drop = lift_gap_interval(a_seen, seen, coin(10, 600, 0.2, seed=5), unseen)
    assert drop.high < -0.3 and drop.p < 0.01


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: gap_interval(np.ones(5)), "a must be a .seeds, images. array"),
        (lambda: gap_interval(np.ones((2, 5)), np.ones((3, 5))), "b must have a's shape"),
        (lambda: gap_interval(np.ones((2, 5)), labels=np.ones(4)), "labels must have shape"),
        (lambda: gap_interval(np.ones((2, 5)), replicates=5), "replicates must be"),
        (
            lambda: lift_gap_interval(
                np.ones((2, 5)), np.ones(5, int), np.ones((3, 5)), np.ones(5, int)
            ),
            "the same seeds",
        ),
    ],
)
def test_bad_input_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_fisher_exact_matches_textbook_values():
    assert fisher_exact(9, 10, 4, 10) == pytest.approx(0.057276, abs=1e-6)
    assert fisher_exact(3, 5, 1, 5) == pytest.approx(0.52381, abs=1e-5)
    assert fisher_exact(10, 10, 0, 10) == pytest.approx(1.0825e-5, rel=1e-3)
    assert fisher_exact(0, 10, 0, 10) == 1.0
    with pytest.raises(ValueError, match="k1 must be an integer in"):
        fisher_exact(11, 10, 0, 10)


def test_an_interval_is_the_same_when_its_resampling_draws_are_reused():
    rng = np.random.default_rng(3)
    a, b = rng.random((4, 50)) < 0.8, rng.random((4, 50)) < 0.6
    first = gap_interval(a, b, replicates=200)
    gap_interval(b, replicates=200)  # another interval of the same shape in between
    assert gap_interval(a, b, replicates=200) == first


def test_an_interval_knows_its_p_value_floor_and_when_it_sits_on_it():
    far = gap_interval(coin(10, 500, 0.9), coin(10, 500, 0.2, seed=1), replicates=999)
    assert far.floor == pytest.approx(1 / 1000) and far.p == pytest.approx(far.floor)
    # no replicate on the far side of 0: the p-value is a bound, printed as one
    assert format_p(far.p, far.floor) == "p < 0.001"
    near = gap_interval(coin(10, 500, 0.5), coin(10, 500, 0.5, seed=1))
    assert near.floor == pytest.approx(1 / 4001) and format_p(near.p, near.floor).startswith("p = ")
