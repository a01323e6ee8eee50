"""Reading a gap between two ablation cells: a paired t interval over seeds.

Two cells trained with the same seeds share each seed's data order and initial draw, so the
per-seed differences ``d_i = a_i - b_i`` are the honest unit: their mean, with the interval

    mean(d) ± t_{(1+c)/2, n-1} * sd(d) / sqrt(n),

(``sd`` the sample standard deviation, ``n - 1`` in the denominator). Why a t interval and not
a bootstrap: with n = 5 seeds a percentile bootstrap can only resample 5 numbers (126 distinct
resamples) and its interval is systematically too narrow; the t interval is the standard choice
for small paired samples, and exact when the differences are roughly normal.

The t distribution is computed here, without SciPy (not installed on every reader's runtime):
its CDF in closed form for whole degrees of freedom (Abramowitz & Stegun 26.7.3 and 26.7.4, a
finite sum in ``cos θ`` with ``θ = atan(t / sqrt(df))``), the quantile by bisection on it; the
tests pin both to printed table values and to the exact CDFs of df 1 and 2.

The book prints many such intervals. When a family of gaps was not planned before the run, each
interval is exploratory, and :func:`holm` adjusts the paired t tests' p-values
(:func:`paired_t_test`) for the size of the family: a gap whose Holm-adjusted p is below 0.05 is
one the whole family's error rate allows reading.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def t_cdf(t: float, df: int) -> float:
    """``P(T <= t)`` for Student's t with ``df`` degrees of freedom, exact (A&S 26.7.3/26.7.4):
    with ``θ = atan(t / sqrt(df))`` and ``c = cos²θ``, ``P(|T| <= t)`` is
    ``(2/π)(θ + sin θ cos θ (1 + 2/3 c + 2·4/(3·5) c² + ...))`` for odd ``df`` and
    ``sin θ (1 + 1/2 c + 1·3/(2·4) c² + ...)`` for even ``df``, each up to ``cos^(df-2) θ``."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be an int >= 1, got {df!r}")
    theta = math.atan2(t, math.sqrt(df))  # signed, so the sums below are odd in t
    c = math.cos(theta) ** 2
    series, term = 0.0, 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2 + 1):
            series, term = series + term, term * c * (2 * k) / (2 * k + 1)
        central = 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * series)
    else:
        for k in range(1, df // 2 + 1):
            series, term = series + term, term * c * (2 * k - 1) / (2 * k)
        central = math.sin(theta) * series
    return 0.5 + central / 2


def t_quantile(p: float, df: int) -> float:
    """The ``t`` with ``P(T <= t) = p`` for ``df`` degrees of freedom (``t_quantile(0.975, 4)``
    is 2.776), by bisection on :func:`t_cdf`."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be an int >= 1, got {df!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be a number in (0, 1), got {p!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:  # df = 1 at p = 0.999 needs t ~ 318
        low, high = high, 2 * high
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


def paired_interval(
    differences: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``differences`` and its paired t interval (see the
    module docstring). Needs at least 2 differences."""
    n = len(differences)
    if n < 2:
        raise ValueError(f"differences must hold at least 2 values, got {n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    mean = statistics.fmean(differences)
    half = t_quantile((1 + confidence) / 2, n - 1) * statistics.stdev(differences) / math.sqrt(n)
    return mean, mean - half, mean + half


def paired_t_test(differences: Sequence[float]) -> tuple[float, float]:
    """``(t, p)``: the paired t statistic ``mean(d) / (sd(d) / sqrt(n))`` of ``differences`` and
    its two-sided p-value ``P(|T| >= |t|)`` with ``n - 1`` degrees of freedom (the test that
    :func:`paired_interval` inverts: the 95 % interval excludes 0 exactly when ``p < 0.05``).
    Differences that are all equal give ``t = ±inf, p = 0`` (or ``t = 0, p = 1`` when all 0)."""
    n = len(differences)
    if n < 2:
        raise ValueError(f"differences must hold at least 2 values, got {n}")
    mean, sd = statistics.fmean(differences), statistics.stdev(differences)
    if sd == 0.0:
        return (0.0, 1.0) if mean == 0.0 else (math.copysign(math.inf, mean), 0.0)
    t = mean / (sd / math.sqrt(n))
    return t, min(1.0, 2.0 * (1.0 - t_cdf(abs(t), n - 1)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of ``m`` p-values, in their given order.

    Sorted ascending, the ``i``-th smallest (``i`` from 1) is multiplied by ``m - i + 1`` and the
    results made non-decreasing (each at least the one before) and capped at 1. Rejecting every
    hypothesis whose adjusted p is below ``α`` keeps the chance of *any* false rejection in the
    family at most ``α``, whatever the dependence between the tests.
    """
    m = len(p_values)
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p_values must be numbers in [0, 1], got {p!r}")
    adjusted, running = [0.0] * m, 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
