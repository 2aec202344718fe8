"""Warm-up detection and the batch-means confidence interval."""

from __future__ import annotations

import math

import pytest

from probes.stats import (
    percentile,
    relative_drift,
    relative_halfwidth,
    t_quantile_975,
    warmup_done,
)


def test_t_quantile_approaches_normal() -> None:
    assert t_quantile_975(1) == pytest.approx(12.706)
    assert t_quantile_975(10) == pytest.approx(2.228, abs=0.01)
    assert t_quantile_975(1000) == pytest.approx(1.962, abs=0.01)


@pytest.mark.parametrize("df", range(1, 301))
def test_t_quantile_is_within_0_6_percent_of_scipy(df: int) -> None:
    # probes/ runs on instances without scipy, so it keeps its own approximation; scipy
    # (here through scikit-learn) checks it: the worst case is df = 6, 0.54% narrow
    from scipy.stats import t

    assert t_quantile_975(df) == pytest.approx(t.ppf(0.975, df), rel=0.006)


@pytest.mark.parametrize("pct", [0, 5, 33.3, 50, 90, 99, 100])
def test_percentile_matches_numpy_linear(pct: float) -> None:
    import numpy as np

    values = [0.31, 0.12, 0.5, 0.27, 0.27, 0.9, 0.05]
    assert percentile(values, pct) == pytest.approx(float(np.percentile(values, pct)))


def test_constant_steps_are_perfectly_stable() -> None:
    assert relative_halfwidth([0.1] * 30) == 0.0


def test_too_few_steps_are_not_stable() -> None:
    assert math.isinf(relative_halfwidth([0.1] * 10))


def test_noisy_steps_are_less_stable_than_quiet_ones() -> None:
    quiet = [0.1 + 0.001 * (i % 3) for i in range(100)]
    noisy = [0.1 + (0.5 if i in (3, 41, 42, 77) else 0.0) for i in range(100)]  # stalls
    assert relative_halfwidth(quiet) < 0.02 < relative_halfwidth(noisy)


@pytest.mark.parametrize(("times", "done"), [
    ([1.0, 0.8, 0.6, 0.4, 0.2, 0.1], False),        # still falling
    ([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], True),         # flat
    ([0.5, 0.5, 0.5, 0.52, 0.49, 0.5], True),       # flat within noise
    ([0.5, 0.5, 0.5], False),                       # too short to judge
])
def test_warmup_done(times: list[float], done: bool) -> None:
    assert warmup_done(times) is done


def test_percentile_interpolates() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 90) == pytest.approx(3.7)


def test_drift_sees_a_slow_down_that_the_interval_may_miss() -> None:
    steady = [0.1] * 40
    slowing = [0.1] * 20 + [0.11] * 20
    assert relative_drift(steady) == 0.0
    assert relative_drift(slowing) == pytest.approx(0.01 / 0.105)
