"""Wilson's interval and the order statistics against published values."""

from __future__ import annotations

import pytest

from realms.batch.stats import quantile, spread, wilson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # Published values (statsmodels' proportion_confint(k, n, method="wilson")).
        (81, 263, 0.255288, 0.366210),
        (8, 10, 0.490162, 0.943318),
        (2, 3, 0.207660, 0.938508),
        (0, 4, 0.0, 0.489891),
        (4, 4, 0.510109, 1.0),
        (1, 1, 0.206549, 1.0),  # 1 / (1 + z²) exactly
    ],
)
def test_wilson_matches_known_values(k: int, n: int, low: float, high: float) -> None:
    interval = wilson(k, n)
    assert interval.low == pytest.approx(low, abs=1e-6)
    assert interval.high == pytest.approx(high, abs=1e-6)


def test_wilson_is_symmetric_in_success_and_failure() -> None:
    a, b = wilson(3, 10), wilson(7, 10)
    assert a.low == pytest.approx(1 - b.high)
    assert a.high == pytest.approx(1 - b.low)


@pytest.mark.parametrize(("k", "n"), [(0, 0), (-1, 3), (4, 3)])
def test_wilson_refuses_impossible_counts(k: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson(k, n)


def test_quantiles_interpolate_between_order_statistics() -> None:
    values = [4.0, 1.0, 3.0, 2.0, 10.0]
    assert quantile(values, 0.5) == 3.0
    assert quantile(values, 0.9) == pytest.approx(7.6)  # numpy.percentile(values, 90)
    assert quantile([5.0], 0.9) == 5.0
    got = spread([2.0, 4.0])
    assert got is not None
    assert (got.median, got.max) == (3.0, 4.0)
    assert got.p90 == pytest.approx(3.8)
    assert spread([]) is None
