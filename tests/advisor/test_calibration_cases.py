"""Residual cases fall back to the nearest case with bounds: an architecture class to its
case, a case to the one with less evidence (issue 29's per-class calibration)."""

from __future__ import annotations

import pytest

from advisor.throughput._calibration import interval

QUANTILES = {"roofline": (-0.5, 0.5), "roofline@tc-bf16": (-0.3, 0.3),
             "prior": (-0.8, 0.8), "prior_unseen": (-0.9, 0.9)}


@pytest.mark.parametrize(("case", "expected"), [
    ("roofline@tc-bf16", (-0.3, 0.3)),  # the class has bounds of its own
    ("roofline@tc", (-0.5, 0.5)),  # it has none: the case's
    ("roofline_unseen@tc-bf16", (-0.9, 0.9)),  # no unseen roofline bounds: unseen prior's
    ("roofline_unseen", (-0.9, 0.9)),
])
def test_a_case_falls_back_to_the_nearest_with_bounds(case: str,
                                                     expected: tuple[float, float]) -> None:
    assert interval(QUANTILES, case, foreign_widening=2.0) == expected
