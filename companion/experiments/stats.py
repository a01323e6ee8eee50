"""Reading a gap between two ablation cells: a paired t interval over seeds.

Two cells trained with the same seeds share each seed's data order and initial draw, so the
per-seed differences ``d_i = a_i - b_i`` are the honest unit: their mean, with the interval

    mean(d) ± t_{(1+c)/2, n-1} * sd(d) / sqrt(n),

(``sd`` the sample standard deviation, ``n - 1`` in the denominator). Why a t interval and not
a bootstrap: with n = 5 seeds a percentile bootstrap can only resample 5 numbers (126 distinct
resamples) and its interval is systematically too narrow; the t interval is the standard choice
for small paired samples, and exact when the differences are roughly normal.

The t quantile is computed here, without SciPy (not installed on every reader's runtime): the
Student t density is integrated with Simpson's rule and the CDF inverted by bisection; the tests
pin it to the printed table values for df 1 to 30.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def t_pdf(t: float, df: int) -> float:
    """The density of Student's t distribution with ``df`` degrees of freedom at ``t``."""
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def t_cdf(t: float, df: int, steps: int = 2000) -> float:
    """``P(T <= t)``: one half plus the density integrated from 0 to ``t`` (Simpson's rule,
    ``steps`` even; the density is smooth, so 2000 steps give about 10 correct digits)."""
    h = abs(t) / steps
    inner = sum((4 if i % 2 else 2) * t_pdf(i * h, df) for i in range(1, steps))
    area = h / 3 * (t_pdf(0.0, df) + inner + t_pdf(abs(t), df))
    return 0.5 + math.copysign(area, t)


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
