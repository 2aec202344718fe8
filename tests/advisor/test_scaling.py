"""ScalingModel: efficiency fitted from 1/N-device reference rows, by interconnect class."""

from __future__ import annotations

import pytest

from advisor.throughput.reference import ReferenceRow
from advisor.throughput.scaling import ScalingModel
from pricing import load_accelerators

SPECS = load_accelerators()


def _rows(accelerator: str, efficiency_8: float) -> list[ReferenceRow]:
    rows = []
    for model in ("a", "b", "c", "d"):
        rows.append(ReferenceRow("g", model, "mixed", accelerator, 1, 1, 100.0, "sample"))
        for n in (2, 4, 8):
            eff = efficiency_8 ** ((n.bit_length() - 1) / 3)
            rows.append(ReferenceRow("g", model, "mixed", accelerator, n, 1, 100.0 * n * eff, "sample"))
    return rows


def test_per_accelerator_slope_reproduces_the_measured_efficiency() -> None:
    model = ScalingModel().fit(_rows("A100-40GB-SXM", 0.9) + _rows("RTX-A6000", 0.6), SPECS)
    assert model.efficiency(SPECS["A100-40GB-SXM"], 8) == pytest.approx(0.9, rel=0.01)
    assert model.efficiency(SPECS["RTX-A6000"], 8) == pytest.approx(0.6, rel=0.01)
    assert model.efficiency(SPECS["A100-40GB-SXM"], 1) == 1.0


def test_unseen_accelerators_use_their_interconnect_class() -> None:
    model = ScalingModel().fit(_rows("A100-40GB-SXM", 0.9) + _rows("RTX-A6000", 0.6), SPECS)
    assert model.efficiency(SPECS["H100-SXM"], 8) == pytest.approx(0.9, rel=0.01)  # nvlink
    assert model.efficiency(SPECS["L4"], 8) == pytest.approx(0.6, rel=0.01)  # pcie
    assert model.log_spread(SPECS["L4"], 8) > model.log_spread(SPECS["RTX-A6000"], 8)
