"""A peer's published correction is carried to a part of another size by the reference parts'
size trend, where the part's own prior has none (``advisor.throughput._size_trend``)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from builtin_features import BERT, RESNET, anchored_model

from advisor.profiling import OpClass
from advisor.throughput import TransferModel, WorkloadFeatures
from advisor.throughput._size_trend import size_features, size_shift
from advisor.throughput.published import load_published
from advisor.throughput.roofline import AnchoredRoofline
from pricing import load_accelerators

SPECS = load_accelerators()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> TransferModel:
    return anchored_model(tmp_path_factory)


@pytest.fixture(scope="module")
def roofline(model: TransferModel) -> AnchoredRoofline:
    fitted = model.roofline()
    assert fitted is not None
    return fitted


def _conv(workload: WorkloadFeatures) -> float:
    assert workload.op_mix is not None
    return workload.op_mix.flops_fraction(OpClass.CONVOLUTION) or 0.0


@pytest.mark.parametrize("workload", [RESNET, BERT])
def test_a_part_smaller_than_its_peer_is_carried_up(roofline: AnchoredRoofline,
                                                    workload: WorkloadFeatures) -> None:
    # TPU-v2 has a sixth of TPU-v4's tensor peak: the reference parts' trend says it reaches
    # more of its roofline, so TPU-v4's correction is carried up to it
    shift = size_shift(roofline, SPECS["TPU-v2"], SPECS["TPU-v4"], _conv(workload), "mixed")
    assert shift > 0


def test_the_shift_is_antisymmetric(roofline: AnchoredRoofline) -> None:
    conv = _conv(RESNET)
    there = size_shift(roofline, SPECS["Gaudi"], SPECS["Gaudi2"], conv, "mixed")
    back = size_shift(roofline, SPECS["Gaudi2"], SPECS["Gaudi"], conv, "mixed")
    assert there == pytest.approx(-back)


@pytest.mark.parametrize("name", ["B200", "H200", "A10G"])
def test_a_part_whose_prior_regresses_on_its_figures_is_not_shifted(
        roofline: AnchoredRoofline, name: str) -> None:
    # NVIDIA parts: the roofline's own correction already follows the trend (its peers
    # with reference rows), and their peers' published corrections were measured on it
    assert size_shift(roofline, SPECS[name], SPECS["L40S"], _conv(RESNET), "mixed") == 0.0


def test_a_part_without_a_bandwidth_figure_is_not_shifted(roofline: AnchoredRoofline) -> None:
    bare = replace(SPECS["TPU-v2"], memory_bandwidth_gbs=0.0)
    assert size_features(bare) is None
    assert size_shift(roofline, bare, SPECS["TPU-v4"], _conv(RESNET), "mixed") == 0.0


def test_a_held_out_part_below_its_peers_gets_more_than_their_plain_mean(
        model: TransferModel) -> None:
    held = copy.copy(model).anchor_to([r for r in load_published()
                                       if r.accelerator != "TPU-v2"])
    plain = copy.copy(held)
    plain._size_shift = lambda *_: 0.0  # type: ignore[method-assign]
    carried = held.estimate(RESNET, SPECS["TPU-v2"]).samples_per_second
    assert carried > plain.estimate(RESNET, SPECS["TPU-v2"]).samples_per_second
