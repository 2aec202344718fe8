"""Within each vendor family of the catalog, a newer generation is never predicted slower.

For every vendor, every pair of training parts from generations of different years where the
newer part is no weaker on its datasheet (peak FLOP/s at the step's precision and memory
bandwidth, both at least the older part's), the no-probe prediction of the newer part is at
least the older one's on the built-in ResNet-50 and BERT examples at bf16 and fp32, unless a
published measurement (``advisor/data/published_training.csv``, a ratio inside one suite or
chained) puts the older part ahead on a workload of the same kind, or measurements stand on
both sides (the older part's reference rows; the newer part's reference rows or published
anchor): the L40S's published BERT figure is below what the reference rows give an A40. A newer part that is
weaker on paper (the TPU-v6e's bandwidth against the TPU-v5p's) may be predicted slower.

The features are the examples' own (``examples/resnet50.yaml``, ``examples/bert.yaml``):
FLOPs, convolution share and traced operator mix, stored in ``tests/data/builtin_features.json``
(``python tests/advisor/test_family_order_throughput.py`` writes it again).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest
from builtin_features import FEATURES_JSON, anchored_model, builtin_features

from advisor.spec import Precision
from advisor.throughput import Basis, TransferModel
from advisor.throughput.estimate import peak_flops, precision_key
from advisor.throughput.published import PublishedRow, Stack, load_published, relative_throughput
from advisor.throughput.roofline import compute_path
from pricing import AcceleratorSpec, load_accelerators

SPECS = load_accelerators()
# published workloads by kind: the ratios that may say an older part is faster
KINDS = {"resnet50": ("resnet50",),
         "bert": ("bert_large_mlperf", "bert_large_pretrain_phase1", "bert_large_pretrain_phase2",
                  "bert_large_squad", "bert_base_pretrain_hf", "gpt3_175b_mlperf")}


FEATURES = builtin_features()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> TransferModel:
    """The default model anchored to the published rows: the same fit as the other modules'
    (``anchored_model``: once per test run)."""
    return anchored_model(tmp_path_factory)


def _generation_years() -> dict[tuple[str, str], int]:
    years: dict[tuple[str, str], int] = {}
    for spec in SPECS.values():
        key = (spec.vendor, spec.generation)
        years[key] = min(years.get(key, spec.year), spec.year)
    return years


def _families() -> dict[str, list[AcceleratorSpec]]:
    families: dict[str, list[AcceleratorSpec]] = defaultdict(list)
    for spec in sorted(SPECS.values(), key=lambda s: s.name):
        if spec.training:
            families[spec.vendor].append(spec)
    return families


def _no_weaker(newer: AcceleratorSpec, older: AcceleratorSpec, precision: Precision) -> bool:
    def peak(spec: AcceleratorSpec) -> float:
        if precision is Precision.FP32:  # strict fp32 runs on the SIMT path, without TF32
            return compute_path("float32", spec, tf32=False)[1]
        return peak_flops(spec, precision_key(precision, spec))

    return (peak(newer) >= peak(older)
            and newer.memory_bandwidth_gbs >= older.memory_bandwidth_gbs)


def _published_ahead(rows: tuple[PublishedRow, ...], older: str, newer: str, kind: str) -> bool:
    """True when some published ratio of a workload of ``kind`` puts ``older`` ahead."""
    for workload in KINDS[kind]:
        for stack in Stack:
            for anchor in ("H100-SXM", "A100-80GB-SXM", "V100-16GB-SXM2", older):
                ratios = relative_throughput(rows, workload=workload, stack=stack, anchor=anchor)
                if older in ratios and newer in ratios and (
                        ratios[older].ratio > ratios[newer].ratio):
                    return True
    return False


def _pairs() -> list[tuple[str, str]]:
    years = _generation_years()
    pairs = []
    for members in _families().values():
        for a, b in combinations(members, 2):
            year_a, year_b = years[(a.vendor, a.generation)], years[(b.vendor, b.generation)]
            if year_a != year_b:
                older, newer = (a, b) if year_a < year_b else (b, a)
                pairs.append((older.name, newer.name))
    return pairs


def test_every_family_of_the_catalog_is_walked() -> None:
    walked = {SPECS[name].vendor for pair in _pairs() for name in pair}
    assert walked == {"NVIDIA", "Google", "Habana/Intel", "AWS"}


@pytest.mark.parametrize("workload", sorted(FEATURES))
def test_a_newer_generation_is_never_predicted_slower(model: TransferModel,
                                                      workload: str) -> None:
    features = FEATURES[workload]
    assert features.precision is not None
    rows = load_published()
    kind = workload.split("/")[0]
    backwards = []
    for older, newer in _pairs():
        if not _no_weaker(SPECS[newer], SPECS[older], features.precision):
            continue
        old, new = model.estimate(features, SPECS[older]), model.estimate(features, SPECS[newer])
        if new.samples_per_second >= old.samples_per_second:
            continue
        # measured on both sides: the older part's reference rows, the newer part's reference
        # rows or published anchor (basis 'predicted', not a datasheet 'prior')
        measured = older in model.seen_ and new.basis is Basis.PREDICTED
        if not measured and not _published_ahead(rows, older, newer, kind):
            backwards.append(f"{newer} {new.samples_per_second:.0f} < {older} "
                             f"{old.samples_per_second:.0f}")
    assert backwards == [], backwards


def test_published_generations_of_one_vendor_are_ordered_as_published(
        model: TransferModel) -> None:
    # the cases: TPU-v2 > TPU-v3 and Gaudi > Gaudi2 were predicted backwards
    resnet = FEATURES["resnet50/bf16"]
    sps = {name: model.estimate(resnet, SPECS[name]).samples_per_second
           for name in ("TPU-v2", "TPU-v3", "TPU-v4", "Gaudi", "Gaudi2")}
    assert sps["TPU-v2"] < sps["TPU-v3"] < sps["TPU-v4"]
    assert sps["Gaudi"] < sps["Gaudi2"]


def test_features_are_the_examples_at_both_precisions() -> None:
    assert sorted(FEATURES) == ["bert/bf16", "bert/fp32", "resnet50/bf16", "resnet50/fp32"]
    assert FEATURES["resnet50/bf16"].conv_flops_fraction == pytest.approx(1.0, abs=0.01)
    assert FEATURES["bert/bf16"].conv_flops_fraction == 0.0
    assert not math.isnan(FEATURES["bert/fp32"].flops_per_sample or math.nan)


def _write_features() -> None:
    """Trace the examples at bf16 and fp32 and store their features (about 30 s)."""
    from advisor.profiling import op_mix_for_spec, profile_workload
    from advisor.spec import load_workload_spec

    root = Path(__file__).parent.parent.parent
    out = {}
    for name in ("resnet50", "bert"):
        base = load_workload_spec(root / "examples" / f"{name}.yaml")
        for precision in (Precision.BF16, Precision.FP32):
            spec = replace(base, precision=precision)
            profile = profile_workload(spec)
            out[f"{name}/{precision.value}"] = {
                "spec": f"examples/{name}.yaml", "precision": precision.value,
                "flops_per_sample": profile.flops_per_sample,
                "conv_flops_fraction": profile.conv_flops_fraction, "params": profile.params,
                "batch_size_per_device": spec.batch_size,
                "op_mix": op_mix_for_spec(spec).to_dict()}
    FEATURES_JSON.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    _write_features()
