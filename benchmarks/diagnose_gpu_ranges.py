"""Take the no-probe figures of ``bench_gpu_ranges.py`` apart, and check them on public rows.

Issue 28: the built-in examples miss a real H100 by +33% (ResNet-50), -7% (GPT-2) and -29%
(BERT-base MLM). Part 1 prints, per example, the terms of the H100-SXM no-probe prediction as
the shipped model forms it (``predict_log`` -> the anchored operator roofline): the bare
roofline of the example's traced mix, the bare roofline of the reference mix that anchors it
at the reference row's batch, the H100 anchor (the weighted mean of the roofline's residuals
on the H100 reference rows; weights as ``AnchoredRoofline`` gives them) and the H200/H100
ratio. Part 2 predicts, with no probe, steps that public tables measured outside the
reference rows (the judged H100/H200 figures are not used):

- the built-in ResNet-50 at fp16, batch 512, on the RTX-3090, against timm's plain eager
  training benchmark (PyTorch 1.12, AMP, NCHW and channels-last; figures below, with their
  source) and Lambda's reference rows on that part;
- the built-in BERT with BERT-large options (MLM) at NVIDIA DeepLearningExamples' pre-training
  phase 1 (sequence 128) and phase 2 (sequence 512) and at SQuAD's sequence 384, on the
  A100-80GB and V100-32GB, against the DLE rows in ``advisor/data/published_training.csv``;
- the BERT-base example at sequence 512 on eight A100-80GBs against the Hugging Face Trainer
  rows (stack ``pytorch_eager``) of the same file.

The write-up is ``gpu_ranges_diagnosis.md`` (kept below ``bench_gpu_ranges.py``'s table).

Run: python benchmarks/diagnose_gpu_ranges.py   (prints; seconds where the profiles are cached)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

from bench_gpu_ranges import MEASURED, example_features

from advisor.profiling import OpClass, reference_op_mixes
from advisor.ranking.recommend import default_throughput_model
from advisor.spec import Precision, load_workload_spec
from advisor.throughput import ThroughputModel
from advisor.throughput.reference import load_reference
from pricing import Catalog, shipped_catalog

ROOT = Path(__file__).resolve().parent.parent
# example: the reference model/precision that anchors it on the H100
ANCHORED_BY = {"resnet50": "resnet50/mixed", "bert": "bert_base_squad/mixed",
               "gpt2": "bert_base_squad/mixed"}
# timm results/benchmark-train-amp-{nchw,nhwc}-pt112-cu113-rtx3090.csv (huggingface/
# pytorch-image-models @ c865028c34fc05cc7deea8e753b30d8cd1952591, 2022-07-27), resnet50 rows:
# train_samples_per_sec at train_batch_size 512, PyTorch 1.12 + CUDA 11.3, AMP (fp16)
TIMM_RTX3090_RESNET50 = {"NCHW": 826.06, "channels-last": 1218.01}
# (name, accelerator, devices, options, batch, published workload and precision in
# published_training.csv, its suite)
_LARGE = {"hidden": 1024, "layers": 24, "heads": 16}  # BERT-large
PUBLIC_BERT = [
    ("BERT-large MLM seq 128 (DLE phase 1)", "A100-80GB-SXM", 1,
     {**_LARGE, "seq_len": 128}, 256,
     "bert_large_pretrain_phase1", "fp16", "nvidia_dle_pytorch_bert"),
    ("BERT-large MLM seq 512 (DLE phase 2)", "A100-80GB-SXM", 1,
     {**_LARGE, "seq_len": 512}, 32,
     "bert_large_pretrain_phase2", "fp16", "nvidia_dle_pytorch_bert"),
    ("BERT-large MLM seq 384 (DLE SQuAD)", "A100-80GB-SXM", 1,
     {**_LARGE, "seq_len": 384}, 32,
     "bert_large_squad", "fp16", "nvidia_dle_pytorch_bert"),
    ("BERT-large MLM seq 128 (DLE phase 1, b64 assumed)", "V100-32GB-SXM2", 1,
     {**_LARGE, "seq_len": 128}, 64,
     "bert_large_pretrain_phase1", "fp16", "nvidia_dle_pytorch_bert"),
    ("BERT-large MLM seq 512 (DLE phase 2, b8 assumed)", "V100-32GB-SXM2", 1,
     {**_LARGE, "seq_len": 512}, 8,
     "bert_large_pretrain_phase2", "fp16", "nvidia_dle_pytorch_bert"),
    ("BERT-large MLM seq 384 (DLE SQuAD)", "V100-32GB-SXM2", 1,
     {**_LARGE, "seq_len": 384}, 16,
     "bert_large_squad", "fp16", "nvidia_dle_pytorch_bert"),
    ("BERT-base MLM seq 512 (HF Trainer), b32", "A100-80GB-SXM", 8,
     {"seq_len": 512}, 32, "bert_base_pretrain_hf", "fp16", "hf_blog_gaudi2_vs_a100_bert_base_2022"),
    ("BERT-base MLM seq 512 (HF Trainer), b64", "A100-80GB-SXM", 8,
     {"seq_len": 512}, 64, "bert_base_pretrain_hf", "fp16", "hf_blog_gaudi2_vs_a100_bert_base_2022"),
]


def _reference_median(model: str, precision: str, accelerator: str) -> tuple[float, int]:
    """Median single-device samples/s of the shipped reference rows (the newest generation
    that has any) and their batch."""
    rows = [r for r in load_reference() if r.model == model and r.precision == precision
            and r.accelerator == accelerator and r.accelerator_count == 1]
    newest = max(r.generation for r in rows)
    rows = [r for r in rows if r.generation == newest]
    return statistics.median(r.samples_per_second for r in rows), rows[0].batch_size_per_accelerator


def decompose(catalog: Catalog, model: ThroughputModel) -> None:
    """Part 1: the H100 terms of each example's no-probe figure."""
    anchored = model.roofline()  # type: ignore[attr-defined]
    roofline, mixes = anchored.roofline_, reference_op_mixes()
    h100, h200 = catalog.accelerators["H100-SXM"], catalog.accelerators["H200"]
    for example, group in ANCHORED_BY.items():
        measured = MEASURED[example][0]  # the H100's
        features = example_features(load_workload_spec(ROOT / "examples" / f"{example}.yaml"))
        mix, batch = features.op_mix, features.batch_size_per_device
        assert mix is not None and batch is not None
        bare = roofline.samples_per_second(mix, h100, batch_size=batch, tf32=False)
        conv = mix.flops_fraction(OpClass.CONVOLUTION) or 0.0
        terms = anchored.anchor_terms("H100-SXM", conv, "mixed")  # a bf16 step: mixed rows
        anchor = anchored.anchor("H100-SXM", conv, "mixed")
        own = dict((g, r) for g, r, _ in terms)[group]
        predicted = model.estimate(features, h100).samples_per_second
        h200_ratio = model.estimate(features, h200).samples_per_second / predicted
        name, _, precision = group.partition("/")
        row, row_batch = _reference_median(name, precision, "H100-SXM")
        reference_bare = roofline.samples_per_second(mixes[group], h100, batch_size=row_batch,
                                                     tf32=True)
        print(f"\n{example}: {mix.flops_per_sample / 1e9:.1f} GFLOP/sample, batch {batch}, "
              f"H100 predicted {predicted:,.0f}, measured {measured:,.0f} "
              f"({predicted / measured - 1:+.0%}); H200/H100 predicted {h200_ratio:.3f}")
        print(f"  reference {group} on H100 (batch {row_batch}): median {row:,.1f}; bare "
              f"roofline {reference_bare:,.0f}; its residual {own:+.3f}")
        print(f"  example's bare roofline {bare:,.0f} = x{bare / reference_bare:.3f} the "
              f"reference's; H100 anchor {anchor:+.3f} (x{math.exp(anchor - own):.3f} over the "
              f"reference's own residual) -> {bare * math.exp(anchor):,.0f}")
        print("  anchor terms (weight > 0.01): " + ", ".join(
            f"{g} {r:+.3f} w{w:.2f}" for g, r, w in terms if w > 0.01))
        print(f"  measured over the reference row x{measured / row:.3f}, the model's "
              f"x{predicted / row:.3f}")


def public_checks(catalog: Catalog, model: ThroughputModel) -> None:
    """Part 2: no-probe figures against public rows outside the reference table."""
    base = load_workload_spec(ROOT / "examples" / "resnet50.yaml")
    rtx = catalog.accelerators["RTX-3090"]
    print("\nResNet-50 on the RTX-3090, batch 512 (no probe):")
    for half in (Precision.FP16, Precision.BF16):
        spec = replace(base, precision=half, batch_size=512)
        value = model.estimate(example_features(spec), rtx).samples_per_second
        print(f"  model {half.value}: {value:,.0f}")
    for layout, value in TIMM_RTX3090_RESNET50.items():
        print(f"  timm plain eager AMP {layout}: {value:,.0f}")
    for generation in ("lambda_v0", "lambda_v1"):
        rows = [r.samples_per_second for r in load_reference() if r.generation == generation
                and r.model == "resnet50" and r.precision == "mixed"
                and r.accelerator == "RTX-3090" and r.accelerator_count == 1]
        print(f"  Lambda {generation} resnet50 fp16 (reference stack): {statistics.median(rows):,.0f}")
    from advisor.throughput.published import load_published

    published = load_published()
    bert = load_workload_spec(ROOT / "examples" / "bert.yaml")
    print("\nBERT steps against public tables (no probe; per device):")
    for name, part, devices, options, batch, workload, precision, suite in PUBLIC_BERT:
        spec = replace(bert, model=replace(bert.model, options={**bert.model.options, **options}),
                       batch_size=batch, precision=Precision.FP16)
        value = model.estimate(example_features(spec), catalog.accelerators[part],
                               count=devices).samples_per_second / devices
        figure = next(p.samples_per_second_per_chip for p in published
                      if p.accelerator == part and p.workload == workload and p.chips == devices
                      and p.precision == precision and p.suite == suite
                      and (p.batch_per_chip in (None, batch) or devices == 1))
        print(f"  {name} on {devices}x {part}: model {value:,.1f}, published {figure:,.1f} "
              f"(model {value / figure - 1:+.0%})")


def main() -> None:
    catalog = shipped_catalog()
    model = default_throughput_model(catalog)
    decompose(catalog, model)
    public_checks(catalog, model)


if __name__ == "__main__":
    main()
