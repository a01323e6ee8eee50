"""The statistics the book reads its runs with: Student's t, the exact binomial interval, Fisher's
exact test and the binomial tail from ``scipy.stats``; Holm's step-down and the p-value floors are
the book's own.

A family of gaps not planned before the run is exploratory: :func:`holm_bounds` adjusts its
p-values, and a gap whose adjusted p is below 0.05 is one the family's error rate allows reading.
A split cell (some seeds solve the task, others stall) is a count, solved ``k`` of ``n``, read
with :func:`binomial_interval` and compared with another by :func:`fisher_exact`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from scipy import stats

from companion._checks import check_positive_int, to_pair


def _check_share(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")


def _check_count(k_name: str, k: int, n_name: str, n: int) -> None:
    check_positive_int(n_name, n)
    if not 0 <= k <= n:
        raise ValueError(f"{k_name} must be an integer in [0, {n_name}={n}], got {k!r}")


def t_quantile(p: float, df: int) -> float:
    """The ``t`` with ``P(T <= t) = p`` for Student's t with ``df`` degrees of freedom."""
    check_positive_int("df", df)
    _check_share("p", p)
    return float(stats.t.ppf(p, df))


def paired_interval(
    differences: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the paired t interval ``mean(d) ± t_{(1+c)/2, n-1} sd(d) / sqrt(n)``
    over the per-seed differences ``d_i = a_i - b_i`` of two cells trained with the same seeds.
    Not a percentile bootstrap over seeds: with n = 5 it resamples 126 sets and is too narrow."""
    n = len(differences)
    if n < 2:
        raise ValueError(f"differences must hold at least 2 values, got {n}")
    _check_share("confidence", confidence)
    mean = statistics.fmean(differences)
    half = t_quantile((1 + confidence) / 2, n - 1) * statistics.stdev(differences) / math.sqrt(n)
    return mean, mean - half, mean + half


def _at_floor(p: float, floor: float) -> bool:
    return floor > 0.0 and p <= floor * (1 + 1e-9)


def format_p(p: float, floor: float = 0.0, name: str = "p") -> str:
    """``"p = 0.041"``, or ``"p < 0.00025"`` when ``p`` is at ``floor`` (``1 / (B + 1)`` for ``B``
    replicates; 0 for an exact test): a p-value at its floor was not measured, only bounded."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a number in [0, 1], got {p!r}")
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must be a number in [0, 1), got {floor!r}")
    return f"{name} < {floor:.2g}" if _at_floor(p, floor) else f"{name} = {p:.2g}"


def holm_bounds(p_values: Sequence[float], floors: Sequence[float]) -> list[tuple[float, bool]]:
    """Holm's step-down adjustment: ``(adjusted, is_bound)`` for each p-value, in the given order.

    The ``i``-th smallest of ``m`` is multiplied by ``m - i + 1``, then made non-decreasing and
    capped at 1; rejecting every adjusted p below ``α`` keeps the chance of any false rejection
    in the family at most ``α``. An adjusted p is a bound (``p_Holm < 0.0015``) when the term that
    sets it comes from p-values at their ``floors`` only; a value capped at 1 is no bound."""
    if len(p_values) != len(floors):
        raise ValueError(
            f"p_values and floors must be of the same length, got {len(p_values)} and {len(floors)}"
        )
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p_values must be numbers in [0, 1], got {p!r}")
    m = len(p_values)
    adjusted = [(0.0, False)] * m
    running, bound = 0.0, False
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        term = min(1.0, (m - rank) * p_values[index])
        floored = _at_floor(p_values[index], floors[index])
        if term > running:
            running, bound = term, floored
        elif term == running and not floored:
            bound = False  # an exact term reaches the same value: the value is exact
        adjusted[index] = (running, bound and running < 1.0)
    return adjusted


def binomial_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a rate seen as ``k`` successes in ``n`` trials."""
    _check_count("k", k, "n", n)
    _check_share("confidence", confidence)
    interval = stats.binomtest(k, n).proportion_ci(confidence, method="exact")
    return float(interval.low), float(interval.high)


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Fisher's exact two-sided p that ``k1`` of ``n1`` and ``k2`` of ``n2`` share one rate."""
    _check_count("k1", k1, "n1", n1)
    _check_count("k2", k2, "n2", n2)
    return float(stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)


def ring_null(
    offsets: Sequence[Sequence[int]], window_size: Sequence[int], distances: Sequence[int]
) -> str:
    """One line setting "k of n favourite offsets lie at ``distances``" against random tables.

    An offset ``(dy, dx)`` lies ``max(|dy|, |dx|)`` tokens from the query. A random bias table's
    arg-max lies at ``distances`` with probability ``p``, the share of the ``(2Wh-1)(2Ww-1)``
    offsets there; the line gives ``p``, the count expected and ``P(>= k)`` over random tables."""
    n = len(offsets)
    check_positive_int("len(offsets)", n)
    wh, ww = to_pair("window_size", window_size)

    def at_distance(offset: Sequence[int]) -> bool:
        return max(abs(int(d)) for d in offset) in set(distances)

    k = sum(map(at_distance, offsets))
    table = [(dy, dx) for dy in range(1 - wh, wh) for dx in range(1 - ww, ww)]
    p = sum(map(at_distance, table)) / len(table)
    tail = float(stats.binom.sf(k - 1, n, p))  # P(X >= k) = P(X > k - 1)
    at = " or ".join(str(d) for d in distances)
    return (
        f"{k} of {n} at distance {at} | random tables: p = {p:.1%}, "
        f"{n * p:.1f} expected, P(>= {k}) = {tail:.2g}"
    )
