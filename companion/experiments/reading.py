"""Reading an ablation honestly where a mean and a t interval would mislead: counts of solved
seeds, and a null for patterns read in learned bias tables.

- **Split cells.** When some seeds solve a task and others stall, the seeds are two groups, not
  one noisy number: a t interval over them can run past the attainable 0-100 %. Such a cell is
  reported as a count, solved ``k`` of ``n`` (``companion.experiments.split_reading``), with an
  exact binomial interval on the rate (:func:`binomial_interval`, Clopper-Pearson); two such
  counts are compared with Fisher's exact test (:func:`fisher_exact`). The right zero, the
  constant answer on the same test images, is ``companion.experiments.split_reading``'s too.
- **A null for table patterns.** The arg-max of a table of exchangeable random numbers lands on
  every offset with the same probability, so "most favourites lie at distance 2 or 3" has to be
  set against the share of offsets at that distance (:func:`ring_probability`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from companion._checks import check_positive_int


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    term, total = (1.0 - p) ** n, 0.0
    for i in range(k + 1):
        total += term
        if p < 1.0:  # the next term from this one: C(n, i+1) p^(i+1) (1-p)^(n-i-1)
            term *= (n - i) / (i + 1) * p / (1.0 - p)
    return min(total, 1.0)


def _bisect(f: Any, target: float) -> float:
    """The p in [0, 1] where the decreasing function ``f`` crosses ``target``."""
    low, high = 0.0, 1.0
    for _ in range(60):  # 2^-60: far below any digit printed
        mid = (low + high) / 2
        low, high = (mid, high) if f(mid) > target else (low, mid)
    return (low + high) / 2


def binomial_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a rate observed as ``k`` successes in ``n`` trials:
    never outside [0, 1], and at least ``confidence`` coverage for every true rate."""
    check_positive_int("n", n)
    if not 0 <= k <= n:
        raise ValueError(f"k must be an integer in [0, n={n}], got {k!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    tail = (1 - confidence) / 2
    # low: the rate at which k or more successes have probability `tail`; high: k or fewer.
    low = 0.0 if k == 0 else _bisect(lambda p: _binomial_cdf(k - 1, n, p), 1 - tail)
    high = 1.0 if k == n else _bisect(lambda p: _binomial_cdf(k, n, p), tail)
    return low, high


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test for "two cells solve at the same rate", from
    ``k1`` of ``n1`` and ``k2`` of ``n2`` solved seeds: the probability, with the margins fixed,
    of tables no more likely than the one observed."""
    for name, k, n in (("k1", k1, n1), ("k2", k2, n2)):
        check_positive_int(name.replace("k", "n"), n)
        if not 0 <= k <= n:
            raise ValueError(f"{name} must be an integer in [0, {n}], got {k!r}")
    solved, total = k1 + k2, n1 + n2

    def probability(x: int) -> float:  # hypergeometric: x of cell 1's seeds among the solved
        return math.comb(n1, x) * math.comb(n2, solved - x) / math.comb(total, solved)

    observed = probability(k1)
    tables = range(max(0, solved - n2), min(n1, solved) + 1)
    return min(1.0, sum(p for x in tables if (p := probability(x)) <= observed * (1 + 1e-9)))


def chebyshev_distance(offset: Sequence[int]) -> int:
    """How many tokens apart an offset ``(dy, dx)`` is: ``max(|dy|, |dx|)`` (0 is the query)."""
    return max(abs(int(d)) for d in offset)


def ring_probability(window_size: Sequence[int], distances: Sequence[int]) -> float:
    """The chance that the arg-max of a random bias table (exchangeable entries, one per offset
    of a ``window_size`` window) lies at one of ``distances``: the share of the
    ``(2Wh-1)(2Ww-1)`` offsets at those Chebyshev distances."""
    wh, ww = window_size
    check_positive_int("window_size[0]", wh)
    check_positive_int("window_size[1]", ww)
    offsets = [(dy, dx) for dy in range(1 - wh, wh) for dx in range(1 - ww, ww)]
    hits = sum(chebyshev_distance(o) in set(distances) for o in offsets)
    return hits / len(offsets)


def ring_null(
    offsets: Sequence[Sequence[int]], window_size: Sequence[int], distances: Sequence[int]
) -> str:
    """One line setting "k of n favourite offsets lie at ``distances``" against random tables:
    the probability :func:`ring_probability` for one head, the count it leads one to expect, and
    the chance that independent random tables give ``k`` or more."""
    n = len(offsets)
    check_positive_int("len(offsets)", n)
    k = sum(chebyshev_distance(o) in set(distances) for o in offsets)
    p = ring_probability(window_size, distances)
    tail = 1.0 if k == 0 else 1.0 - _binomial_cdf(k - 1, n, p)
    at = " or ".join(str(d) for d in distances)
    return (
        f"{k} of {n} at distance {at} | random tables: p = {p:.1%}, "
        f"{n * p:.1f} expected, P(>= {k}) = {tail:.2g}"
    )
