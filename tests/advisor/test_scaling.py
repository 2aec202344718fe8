"""ScalingModel: efficiency fitted from 1/N-device reference rows, by interconnect class."""

from __future__ import annotations

import math

import pytest

from advisor.throughput.reference import ReferenceRow
from advisor.throughput.scaling import ScalingModel, physical_efficiency
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


def _loaded_rows(accelerator: str, params: dict[str, float], batch: int = 32,
                 per_device: float = 100.0, log_bandwidth: float = 23.0) -> list[ReferenceRow]:
    """Models whose efficiency is the all-reduce of their gradients at ``exp(log_bandwidth)``
    bytes/s after each step's compute (``physical_efficiency``)."""
    rows = []
    for model, count in params.items():
        load = ScalingModel.load(count, batch, per_device)
        assert load is not None
        rows.append(ReferenceRow("g", model, "mixed", accelerator, 1, batch, per_device, "sample"))
        for n in (2, 4, 8):
            eff = physical_efficiency(load, n, log_bandwidth)
            rows.append(ReferenceRow("g", model, "mixed", accelerator, n, batch,
                                     per_device * n * eff, "sample"))
    return rows


PARAMS = {f"m{i}": 1e6 * 2 ** (i / 2) for i in range(24)}  # 1 M to 2.9 G parameters


def test_load_is_log_gradient_bytes_per_second_of_compute() -> None:
    # 10 M parameters, batch 32 at 64 samples/s: a 0.5 s step all-reduces 40 MB
    assert ScalingModel.load(10e6, 32, 64.0) == pytest.approx(math.log(4 * 10e6 / 0.5))
    assert ScalingModel.load(None, 32, 64.0) is None  # parameters not known
    assert ScalingModel.load(10e6, None, 64.0) is None  # batch not known


def test_physical_efficiency_is_compute_over_compute_plus_ring_all_reduce() -> None:
    # a 1 s step of 1 GB of gradients on 4 devices at 1 GB/s: 2 x 3/4 GB more, 1.5 s
    assert physical_efficiency(math.log(1e9), 4, math.log(1e9)) == pytest.approx(1 / 2.5)
    assert physical_efficiency(math.log(1e9), 1, math.log(1e9)) == 1.0
    # the ring's traffic per device approaches 2x the gradients as devices grow
    assert physical_efficiency(math.log(1e9), 1024, math.log(1e9)) == pytest.approx(
        1 / 3, rel=0.01)


def test_a_heavier_communication_load_scales_worse() -> None:
    model = ScalingModel(params=PARAMS).fit(_loaded_rows("RTX-A6000", PARAMS), SPECS)
    spec = SPECS["RTX-A6000"]
    light = ScalingModel.load(PARAMS["m0"], 32, 100.0)
    heavy = ScalingModel.load(PARAMS["m23"], 32, 100.0)
    assert light is not None and heavy is not None
    assert model.efficiency(spec, 8, load=heavy) < model.efficiency(spec, 8, load=light)
    # the bandwidth is recovered (to the grid's 1%), so every model's efficiency is
    assert model.bandwidth_["RTX-A6000"] == pytest.approx(23.0, abs=0.011)
    for load in (light, heavy, heavy + 2):  # beyond the loads fitted too: the same physics
        assert model.efficiency(spec, 8, load=load) == pytest.approx(
            physical_efficiency(load, 8, 23.0), rel=0.02)
    # an unknown load: the accelerator's typical efficiency, the fitted slope
    slope, seen = model.slope(spec)
    assert seen and model.efficiency(spec, 8) == pytest.approx(math.exp(-3 * slope))


@pytest.mark.parametrize("name", [
    "m4",   # light: 4 M parameters, efficiency near 1
    "m20",  # heavy: 1 G parameters, the all-reduce takes a large share of the step
])
def test_a_probe_on_n_devices_converts_to_one_at_its_own_load(name: str) -> None:
    model = ScalingModel(params=PARAMS).fit(_loaded_rows("RTX-A6000", PARAMS), SPECS)
    spec = SPECS["RTX-A6000"]
    # 8 devices of a model measured as the fit's physics has it: 100/s per device alone
    load = ScalingModel.load(PARAMS[name], 32, 100.0)
    assert load is not None
    measured = 100.0 * 8 * physical_efficiency(load, 8, 23.0)
    single = model.one_device(measured, spec, 8, params=PARAMS[name], batch_size_per_device=32)
    assert single == pytest.approx(100.0, rel=0.02)
    # and carried back at its own load, the measurement itself
    back = model.efficiency(spec, 8, load=ScalingModel.load(PARAMS[name], 32, single))
    assert single * 8 * back == pytest.approx(measured, rel=1e-6)
    # without the load, the typical efficiency (the old conversion) is the fallback
    assert model.one_device(measured, spec, 8) == pytest.approx(
        measured / (8 * model.efficiency(spec, 8)))


def test_an_unseen_accelerator_takes_its_class_bandwidth() -> None:
    rows = (_loaded_rows("A100-40GB-SXM", PARAMS, log_bandwidth=25.0)
            + _loaded_rows("RTX-A6000", PARAMS, log_bandwidth=21.0))
    model = ScalingModel(params=PARAMS).fit_point(rows, SPECS)
    load = ScalingModel.load(PARAMS["m12"], 32, 100.0)
    assert load is not None
    assert model.efficiency(SPECS["H100-SXM"], 8, load=load) == pytest.approx(
        physical_efficiency(load, 8, 25.0), rel=0.02)  # nvlink, as the A100 SXM
    assert model.efficiency(SPECS["L4"], 8, load=load) == pytest.approx(
        physical_efficiency(load, 8, 21.0), rel=0.02)  # pcie, as the A6000


def test_an_unseen_accelerator_takes_its_generations_fabric_first() -> None:
    # three NVLink parts of three generations: the H200 (hopper, unseen) scales as the
    # H100 SXM, not as the class's median part (the A100)
    rows = (_loaded_rows("V100-16GB-SXM2", PARAMS, log_bandwidth=21.0)
            + _loaded_rows("A100-40GB-SXM", PARAMS, log_bandwidth=23.0)
            + _loaded_rows("H100-SXM", PARAMS, log_bandwidth=25.0))
    model = ScalingModel(params=PARAMS).fit_point(rows, SPECS)
    load = ScalingModel.load(PARAMS["m12"], 32, 100.0)
    assert load is not None
    assert model.efficiency(SPECS["H200"], 8, load=load) == pytest.approx(
        physical_efficiency(load, 8, 25.0), rel=0.02)
    # a pcie part borrows no fabric's bandwidth: with no pcie rows, its class's slope
    slope, seen = model.slope(SPECS["RTX-A6000"])
    assert not seen and model.efficiency(SPECS["RTX-A6000"], 8, load=load) == pytest.approx(
        math.exp(-3 * slope))


def test_a_known_load_narrows_the_efficiency_bounds_it_explains() -> None:
    model = ScalingModel(params=PARAMS).fit(_loaded_rows("RTX-A6000", PARAMS), SPECS)
    spec = SPECS["RTX-A6000"]
    load = ScalingModel.load(PARAMS["m12"], 32, 100.0)
    low, high = model.efficiency_interval(spec, 8, load=load)
    any_low, any_high = model.efficiency_interval(spec, 8)
    # the load explains every model's efficiency; without it, the models' whole spread remains
    assert high / low < 1.05 < 1.5 < any_high / any_low


def _renamed(rows: list[ReferenceRow], model: str) -> list[ReferenceRow]:
    return [ReferenceRow(r.generation, model, r.precision, r.accelerator, r.accelerator_count,
                         r.batch_size_per_accelerator, r.samples_per_second, r.sample_unit)
            for r in rows]


def test_bounds_are_held_out_by_model() -> None:
    # RTX-A6000 keeps 60% on 8 devices in its four models, RTX-3090 (pcie too) 90% in twenty.
    # In sample each part's own slope fits its rows exactly; held out, an A6000 model leaves
    # nine ratios (fewer than min_points), so it is predicted by the class slope and misses.
    rows = _rows("RTX-A6000", 0.6)
    for i in range(20):
        rows += _renamed([r for r in _rows("RTX-3090", 0.9) if r.model == "a"], f"m{i}")
    model = ScalingModel(min_points=12, params={}).fit(rows, SPECS)
    assert model.efficiency(SPECS["RTX-A6000"], 8) == pytest.approx(0.6, rel=0.01)
    low, high = model.efficiency_interval(SPECS["RTX-3090"], 8)
    assert low < 0.9 * 0.75  # the held-out A6000 rows' miss (0.6 / 0.9) widens the class's
    # one score for both sides: the fit's rows miss neither way in sample, so the high side
    # widens alike, up to N times one device and no further
    assert high == 1.0


def test_the_side_the_fit_misses_more_gets_the_wider_bound() -> None:
    # twenty pcie models on two parts at 2 devices, keeping 90% of linear times exp(-0.2),
    # exp(-0.1), 1, exp(0.01) or exp(0.02): in sample the fit misses ten times further below
    # than above, so one held-out score's quantile moves the low end ten times further
    rows = []
    for i in range(20):
        kept = 0.9 * math.exp((-0.2, -0.1, 0.0, 0.01, 0.02)[i % 5])
        part = "RTX-3090" if i % 2 else "RTX-A6000"
        rows += [ReferenceRow("g", f"m{i}", "mixed", part, 1, 1, 100.0, "sample"),
                 ReferenceRow("g", f"m{i}", "mixed", part, 2, 1, 200.0 * kept, "sample")]
    model = ScalingModel(min_points=4, params={}).fit(rows, SPECS)
    low_spread, high_spread = model.spread_[("pcie", 2)]
    assert low_spread == pytest.approx(10 * high_spread)
    point = model.efficiency(SPECS["L4"], 2)
    low, high = model.efficiency_interval(SPECS["L4"], 2)
    assert math.log(point / low) == pytest.approx(0.2, abs=0.01)  # the worst model held out
    assert math.log(high / point) == pytest.approx(0.02, abs=0.001)
