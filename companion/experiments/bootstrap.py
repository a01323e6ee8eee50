"""Intervals that include the test set's own sampling error: a two-stage bootstrap.

Every run of a cell is tested on the *same* test images, so a t interval over seeds leaves out
how much the accuracy would move on another draw of them. Each replicate draws the seeds *and*
the test images with replacement, the same ones on both sides of a paired gap; its statistic is
a mean of 0/1 outcomes, so no interval leaves [0, 1] (an accuracy) or [-1, 1] (a gap).

``correct``: ``(seeds, images)`` bools, rows in one seed order in every cell compared;
``labels``: ``(images,)``, for the constant answer (the most frequent label's share among each
replicate's images).
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
    """A statistic, its 95 % percentile interval and the two-sided bootstrap p for "it is 0": the
    share of replicates on the far side of 0, doubled, at least ``floor = 1 / (B + 1)``; a ``p`` at
    the floor (no replicate on the far side) is a bound, ``p < floor``."""

    estimate: float
    low: float
    high: float
    p: float
    floor: float = 0.0

    def __str__(self) -> str:
        return f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


# Cached: drawing the counts is most of an interval's cost, and a chapter reads dozens of cells of
# one shape (the same draws, as the seed asks, every time).
@lru_cache(maxsize=8)
def _weights(seeds: int, images: int, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
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
    per_seed = correct @ on_images.T / on_images[0].sum()  # (seeds, replicates)
    return (on_seeds * per_seed.T).sum(1) / on_seeds[0].sum()


def _above_constant(
    correct: np.ndarray, labels: np.ndarray, name: str, on_seeds: np.ndarray, on_images: np.ndarray
) -> tuple[np.ndarray, float]:
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (correct.shape[1],):
        raise ValueError(f"{name} must have shape ({correct.shape[1]},), got {labels.shape}")
    constant = (on_images @ np.eye(int(labels.max()) + 1)[labels]).max(1) / on_images[0].sum()
    values = _replicates(correct, on_seeds, on_images) - constant
    return values, correct.mean() - np.bincount(labels).max() / len(labels)


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
    """Mean accuracy of ``a`` minus ``b`` (same seeds, same images), minus the constant answer
    of ``labels`` (``b`` None), or of ``a`` itself (both None)."""
    check_int_in_range("replicates", replicates, 100, 1_000_000)
    a = _check(a, "a")
    on_seeds, on_images = _weights(a.shape[0], a.shape[1], replicates, seed)
    if b is None and labels is not None:
        values, estimate = _above_constant(a, labels, "labels", on_seeds, on_images)
        return _interval(estimate, values)
    values, estimate = _replicates(a, on_seeds, on_images), a.mean()
    if b is not None:
        b = _check(b, "b")
        if b.shape != a.shape:
            raise ValueError(f"b must have a's shape {a.shape} (same seeds, images), got {b.shape}")
        values, estimate = values - _replicates(b, on_seeds, on_images), estimate - b.mean()
    return _interval(estimate, values)


def lift_gap_interval(
    a_first: np.ndarray,
    labels_first: np.ndarray,
    a_second: np.ndarray,
    labels_second: np.ndarray,
    replicates: int = REPLICATES,
    seed: int = 0,
) -> Interval:
    """``(acc2 - const2) - (acc1 - const1)``: how much more a cell scores above the constant
    answer on a second test set than on a first, seeds paired, the sets' images independent."""
    check_int_in_range("replicates", replicates, 100, 1_000_000)
    first, second = _check(a_first, "a_first"), _check(a_second, "a_second")
    if first.shape[0] != second.shape[0]:
        rows = f"{first.shape[0]} and {second.shape[0]} rows"
        raise ValueError(f"a_first and a_second must hold the same seeds, got {rows}")
    on_seeds, on_first = _weights(first.shape[0], first.shape[1], replicates, seed)
    # The second set's images get their own draws (stream seed + 1), independent of the first's.
    _, on_second = _weights(first.shape[0], second.shape[1], replicates, seed + 1)
    v1, e1 = _above_constant(first, labels_first, "labels_first", on_seeds, on_first)
    v2, e2 = _above_constant(second, labels_second, "labels_second", on_seeds, on_second)
    return _interval(e2 - e1, v2 - v1)
