"""The statistics of a batch: a proportion's Wilson interval and order statistics.

Pure functions, no Django: a batch of a few runs is exactly where the normal
approximation to a proportion fails (k = 0 or k = N gives a zero-width interval), and
Wilson's score interval stays inside [0, 1] and honest there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The two-sided 95 % quantile of the standard normal distribution.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(k: int, n: int, z: float = Z95) -> Interval:
    """Wilson's score interval for ``k`` successes in ``n`` trials."""
    if n <= 0:
        raise ValueError("a proportion needs at least one trial")
    if not 0 <= k <= n:
        raise ValueError(f"k must be within 0..{n}; got {k}")
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # At k = 0 or k = n one bound is exact; rounding must not push it past 0 or 1.
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Interval(low, high)


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile with linear interpolation between order statistics (the
    "linear" method of numpy and R's type 7)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lower = math.floor(pos)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (pos - lower)


@dataclass(frozen=True)
class Spread:
    median: float
    p90: float
    max: float


def spread(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    return Spread(quantile(values, 0.5), quantile(values, 0.9), max(values))
