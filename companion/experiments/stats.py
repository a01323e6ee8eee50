"""The statistics the book reads its runs with. What SciPy (preinstalled on Colab) has comes from
``scipy.stats``: Student's t, the exact binomial interval, Fisher's exact test, the binomial tail;
what is the book's own is small and named for what it does.

A family of gaps not planned before the run is exploratory: :func:`holm_bounds` adjusts its
p-values, and a gap whose adjusted p is below 0.05 is one the family's error rate allows reading.
A split cell (some seeds solve the task, others stall) is a count, solved ``k`` of ``n``
(``companion.experiments.split_reading``), read with :func:`binomial_interval` and compared with
another by :func:`fisher_exact`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from scipy import stats

from companion._checks import check_positive_int


def t_quantile(p: float, df: int) -> float:
    """The ``t`` with ``P(T <= t) = p`` for Student's t with ``df`` degrees of freedom
    (``t_quantile(0.975, 4)`` is 2.776): ``scipy.stats.t.ppf``, with the arguments checked."""
    check_positive_int("df", df)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be a number in (0, 1), got {p!r}")
    return float(stats.t.ppf(p, df))


def paired_interval(
    differences: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)`` of at least 2 ``differences``: the paired t interval.

    A gap between two cells trained with the same seeds (each seed's data order and initial draw
    shared) is read over the per-seed differences ``d_i = a_i - b_i``: their mean with
    ``mean(d) ± t_{(1+c)/2, n-1} * sd(d) / sqrt(n)`` (``sd`` with ``n - 1``). Not a percentile
    bootstrap over seeds: with n = 5 it resamples 126 distinct sets and its interval is too
    narrow; the t interval is the standard choice for small paired samples."""
    n = len(differences)
    if n < 2:
        raise ValueError(f"differences must hold at least 2 values, got {n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    mean = statistics.fmean(differences)
    half = t_quantile((1 + confidence) / 2, n - 1) * statistics.stdev(differences) / math.sqrt(n)
    return mean, mean - half, mean + half


def _at_floor(p: float, floor: float) -> bool:
    return floor > 0.0 and p <= floor * (1 + 1e-9)


def format_p(p: float, floor: float = 0.0, name: str = "p") -> str:
    """A p-value as the book prints it: ``"p = 0.041"`` (two significant digits), or, when ``p``
    is at ``floor`` (the least value its method can give, ``1 / (B + 1)`` for a bootstrap of
    ``B`` replicates), the bound ``"p < 0.00025"``: a p-value at its floor was not measured,
    only bounded. ``floor`` 0 means that the method has no floor (an exact test)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a number in [0, 1], got {p!r}")
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must be a number in [0, 1), got {floor!r}")
    return f"{name} < {floor:.2g}" if _at_floor(p, floor) else f"{name} = {p:.2g}"


def holm_bounds(p_values: Sequence[float], floors: Sequence[float]) -> list[tuple[float, bool]]:
    """Holm's step-down adjustment of a family of ``m`` p-values: ``(adjusted, is_bound)`` for
    each, in the given order.

    Sorted ascending, the ``i``-th smallest (``i`` from 1) is multiplied by ``m - i + 1`` and the
    results made non-decreasing (each at least the one before) and capped at 1. Rejecting every
    hypothesis whose adjusted p is below ``α`` keeps the chance of *any* false rejection in the
    family at most ``α``, whatever the dependence between the tests.

    ``floors[i]`` is p's floor (see :func:`format_p`; 0 for none). An adjusted p is a bound when
    the term that sets it (``(m - i + 1)`` times the ``i``-th smallest p, or an earlier, larger
    term) comes from p-values at their floor only: Holm's adjustment grows with every raw p, so a
    raw p known only to lie below its floor gives an adjusted p known only to lie below the value
    computed (``p_Holm < 0.0015``). A value capped at 1 is no bound."""
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


# --------------------------------------------------------------------------- split cells, nulls
def binomial_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for a rate observed as ``k`` successes in ``n`` trials:
    never outside [0, 1], and at least ``confidence`` coverage for every true rate."""
    check_positive_int("n", n)
    if not 0 <= k <= n:
        raise ValueError(f"k must be an integer in [0, n={n}], got {k!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    interval = stats.binomtest(k, n).proportion_ci(confidence, method="exact")
    return float(interval.low), float(interval.high)


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test for "two cells solve at the same rate", from
    ``k1`` of ``n1`` and ``k2`` of ``n2`` solved seeds: the probability, with the margins fixed,
    of tables no more likely than the one observed."""
    for name, k, n in (("k1", k1, n1), ("k2", k2, n2)):
        check_positive_int(name.replace("k", "n"), n)
        if not 0 <= k <= n:
            raise ValueError(f"{name} must be an integer in [0, {n}], got {k!r}")
    table = [[k1, n1 - k1], [k2, n2 - k2]]
    return float(stats.fisher_exact(table, alternative="two-sided").pvalue)


def ring_null(
    offsets: Sequence[Sequence[int]], window_size: Sequence[int], distances: Sequence[int]
) -> str:
    """One line setting "k of n favourite offsets lie at ``distances``" against random tables.

    An offset ``(dy, dx)`` lies ``max(|dy|, |dx|)`` tokens from the query. The arg-max of a
    random bias table (exchangeable entries, one per offset of a ``window_size`` window) lies at
    one of ``distances`` with probability ``p``, the share of the ``(2Wh-1)(2Ww-1)`` offsets
    there; the line gives ``p``, the count it leads one to expect, and the chance that
    independent random tables give ``k`` or more."""
    n = len(offsets)
    check_positive_int("len(offsets)", n)
    wh, ww = window_size
    check_positive_int("window_size[0]", wh)
    check_positive_int("window_size[1]", ww)

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
