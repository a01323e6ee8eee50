"""Intervals that include the test set's own sampling error: a two-stage bootstrap.

Every run of a cell is tested on the *same* test images, so a t interval over seeds leaves out
how much the accuracy would move on another draw of test images. Here each bootstrap replicate
draws the seeds with replacement *and* the test images with replacement, and a paired gap uses
the same seeds and the same images on both sides. A replicate's statistic is a mean of 0/1
outcomes, so no interval can leave the attainable range ([0, 1] for an accuracy, [-1, 1] for a
gap).

Inputs are ``correct``: ``(seeds, images)`` bool arrays, rows in the same seed order in every
cell compared, and ``labels``: ``(images,)`` for the constant answer's accuracy, which is
recomputed on each replicate's images (the most frequent label's share among them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from companion._checks import check_int_in_range

#: Replicates per interval: the 2.5 % and 97.5 % quantiles then rest on 100 replicates each.
REPLICATES = 4000


@dataclass(frozen=True)
class Interval:
    """A statistic, its 95 % percentile interval and a two-sided bootstrap p-value for "the
    statistic is 0" (the share of replicates on the far side of 0, doubled, at least 1/(B+1)).

    ``floor`` is that least value, ``1 / (B + 1)`` for ``B`` replicates: a ``p`` at the floor
    means that no replicate fell on the far side of 0, so the p-value is below what ``B``
    replicates resolve, a bound (``p < floor``), not a measured number
    (:func:`companion.experiments.stats.format_p` prints it so)."""

    estimate: float
    low: float
    high: float
    p: float
    floor: float = 0.0

    def __str__(self) -> str:
        return f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"

    @property
    def at_floor(self) -> bool:
        """Whether ``p`` is the least value the replicates can give (then it is a bound)."""
        return self.floor > 0.0 and self.p <= self.floor * (1 + 1e-9)


@lru_cache(maxsize=8)
def _weights(seeds: int, images: int, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(replicates, seeds)`` and ``(replicates, images)`` resampling counts (read-only).

    Kept for the next interval of the same shape: drawing them is most of an interval's cost, and
    a chapter reads dozens of cells of one shape (the same draws, as the seed asks, every time)."""
    rng = np.random.default_rng(seed)
    on_seeds = rng.multinomial(seeds, np.full(seeds, 1 / seeds), size=replicates).astype(float)
    on_images = rng.multinomial(images, np.full(images, 1 / images), size=replicates).astype(float)
    on_seeds.flags.writeable = on_images.flags.writeable = False
    return on_seeds, on_images


def _check(correct: np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(correct)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"{name} must be a (seeds, images) array, got shape {array.shape}")
    return array.astype(float)


def _replicates(correct: np.ndarray, on_seeds: np.ndarray, on_images: np.ndarray) -> np.ndarray:
    """``(replicates,)``: the mean accuracy of each replicate's seeds on its images."""
    per_seed = correct @ on_images.T / on_images[0].sum()  # (seeds, replicates)
    return (on_seeds * per_seed.T).sum(1) / on_seeds[0].sum()


def _constant_answer(labels: np.ndarray, on_images: np.ndarray) -> np.ndarray:
    """``(replicates,)``: the most frequent label's share among each replicate's images."""
    one_hot = np.eye(int(labels.max()) + 1)[labels]
    return (on_images @ one_hot).max(1) / on_images[0].sum()


def _interval(estimate: float, values: np.ndarray) -> Interval:
    low, high = np.quantile(values, [0.025, 0.975])
    far_side = min((values <= 0).sum(), (values >= 0).sum())
    p = min(1.0, (2 * far_side + 1) / (len(values) + 1))
    return Interval(float(estimate), float(low), float(high), float(p), 1 / (len(values) + 1))


def gap_interval(
    a: np.ndarray,
    b: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    replicates: int = REPLICATES,
    seed: int = 0,
) -> Interval:
    """Mean accuracy of cell ``a`` minus cell ``b`` (paired: same seeds, same images), or minus
    the constant answer on the same images when ``b`` is None (then ``labels`` is needed).
    With ``b`` None and ``labels`` None: the mean accuracy of ``a`` itself."""
    check_int_in_range("replicates", replicates, 100, 1_000_000)
    a = _check(a, "a")
    on_seeds, on_images = _weights(a.shape[0], a.shape[1], replicates, seed)
    values = _replicates(a, on_seeds, on_images)
    estimate = a.mean()
    if b is not None:
        b = _check(b, "b")
        if b.shape != a.shape:
            raise ValueError(
                f"b must have a's shape {a.shape} (the same seeds and images), got {b.shape}"
            )
        values = values - _replicates(b, on_seeds, on_images)
        estimate -= b.mean()
    elif labels is not None:
        labels = np.asarray(labels, dtype=np.int64)
        if labels.shape != (a.shape[1],):
            raise ValueError(f"labels must have shape ({a.shape[1]},), got {labels.shape}")
        values = values - _constant_answer(labels, on_images)
        estimate -= np.bincount(labels).max() / len(labels)
    return _interval(estimate, values)


def lift_gap_interval(
    a_first: np.ndarray,
    labels_first: np.ndarray,
    a_second: np.ndarray,
    labels_second: np.ndarray,
    replicates: int = REPLICATES,
    seed: int = 0,
) -> Interval:
    """How much more a cell scores above the constant answer on a second test set than on a
    first (e.g. held-out positions against seen ones): ``(acc2 - const2) - (acc1 - const1)``.
    The seeds are resampled together (paired), the two sets' images independently."""
    check_int_in_range("replicates", replicates, 100, 1_000_000)
    first, second = _check(a_first, "a_first"), _check(a_second, "a_second")
    if first.shape[0] != second.shape[0]:
        raise ValueError(
            f"a_first and a_second must hold the same seeds, got {first.shape[0]} and "
            f"{second.shape[0]} rows"
        )
    seeds = first.shape[0]
    on_seeds, _ = _weights(seeds, first.shape[1], replicates, seed)
    lifts = []
    # The second set's images get their own draws (stream seed + 1), independent of the first's.
    for offset, (correct, labels) in enumerate(((first, labels_first), (second, labels_second))):
        labels = np.asarray(labels, dtype=np.int64)
        n = correct.shape[1]
        _, on_images = _weights(seeds, n, replicates, seed + offset)
        values = _replicates(correct, on_seeds, on_images) - _constant_answer(labels, on_images)
        lifts.append((values, correct.mean() - np.bincount(labels).max() / n))
    (v1, e1), (v2, e2) = lifts
    return _interval(e2 - e1, v2 - v1)
