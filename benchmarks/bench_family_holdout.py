"""How a part with no reference rows should borrow its roofline correction: whole GPU families
held out of the reference table (issue 27).

The anchored roofline (``advisor.throughput.roofline.AnchoredRoofline``) is fitted on the
single-device reference samples without a held-out set of parts and predicts their samples
with the correction each rule borrows from the parts left in (its class peers: same vendor,
tensor cores, bf16). Held-out sets: whole families (Volta, Turing, ...), one part at a time,
the top of the table (Hopper; Hopper and Ada; and the A100s too: parts beyond every fitted
part's peaks) and its bottom. Cells: MAPE of samples/s (mean log error, predicted - measured).

Rules: the shipped ridge regression on the logs of tensor and fp32 peaks and bandwidth; the
same on the logs of tensor peak and bandwidth only (the size trend that
``advisor.throughput._size_trend`` carries published peer corrections by); the peers' plain
mean (what a published peer correction was before); none; and three envelope rules (a part
beyond the fitted parts' figures reaches less of its roofline): the regression at the figures
clamped to the peers' envelope, extrapolated only where that lowers the correction, and an
extra penalty per unit of log tensor peak beyond the envelope. Last, the cross-class check:
Volta/Turing parts borrowing their peers' mean carried by the Ampere-and-newer parts' trend,
as a TPU or Gaudi borrows NVIDIA's.

Run: python benchmarks/bench_family_holdout.py   (writes benchmarks/results/family_holdout.md)
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_result  # noqa: E402

from advisor.profiling import reference_op_mixes  # noqa: E402
from advisor.throughput import REFERENCE_CONV_FLOPS_FRACTION, load_reference  # noqa: E402
from advisor.throughput._size_trend import size_features  # noqa: E402
from advisor.throughput.estimate import architecture_class  # noqa: E402
from advisor.throughput.roofline import (  # noqa: E402
    AnchoredRoofline,
    RooflineSample,
    anchor_features,
    class_peers,
    reference_samples,
    ridge_at,
)
from pricing import AcceleratorSpec, load_accelerators  # noqa: E402

FAMILIES = {
    "Pascal": ("GTX-1080Ti",),
    "Volta": ("V100-16GB-SXM2", "V100-32GB-SXM2"),
    "Turing": ("RTX-2080Ti", "Titan-RTX", "Quadro-RTX-6000", "Quadro-RTX-8000"),
    "Ampere pro": ("RTX-3090", "RTX-A6000", "A40", "A10"),
    "A100": ("A100-40GB-SXM", "A100-40GB-PCIe", "A100-80GB-SXM", "A100-80GB-PCIe"),
    "Ada": ("RTX-4090", "RTX-6000-Ada"),
    "Hopper": ("H100-SXM", "H100-PCIe"),
}
HeldOut = list[tuple[str, frozenset[str]]]
Borrow = Callable[[AnchoredRoofline, AcceleratorSpec, float, str], float]


def _peers(fit: AnchoredRoofline, spec: AcceleratorSpec) -> dict[str, tuple[float, float, float]]:
    return class_peers(spec, fit.specs_)


def _values(fit: AnchoredRoofline, names: Sequence[str], conv: float, key: str) -> list[float]:
    return [fit.anchor(name, conv, key) for name in names]


def _coef(features: Sequence[Sequence[float]], values: Sequence[float], ridge: float) -> np.ndarray:
    x, y = np.array(features), np.array(values)
    centered = x - x.mean(axis=0)
    return np.linalg.solve(centered.T @ centered + ridge * np.eye(x.shape[1]),
                           centered.T @ (y - y.mean()))


def shipped(fit: AnchoredRoofline, spec: AcceleratorSpec, conv: float, key: str) -> float:
    return AnchoredRoofline._borrowed_anchor(fit, spec, conv, key)  # noqa: SLF001


def two_logs(fit: AnchoredRoofline, spec: AcceleratorSpec, conv: float, key: str) -> float:
    peers, ours = _peers(fit, spec), size_features(spec)
    if ours is None or len(peers) < 3:
        return 0.0
    return ridge_at([size_features(fit.specs_[n]) or (0.0, 0.0) for n in peers],
                    _values(fit, list(peers), conv, key), ours, fit.anchor_ridge)


def plain_mean(fit: AnchoredRoofline, spec: AcceleratorSpec, conv: float, key: str) -> float:
    peers = _peers(fit, spec)
    return statistics.fmean(_values(fit, list(peers), conv, key)) if len(peers) >= 3 else 0.0


def none(_fit: AnchoredRoofline, _spec: AcceleratorSpec, _conv: float, _key: str) -> float:
    return 0.0


def _envelope(fit: AnchoredRoofline, spec: AcceleratorSpec, conv: float, key: str, *,
              mode: str, slope: float = 0.0) -> float:
    peers, ours = _peers(fit, spec), anchor_features(spec)
    if ours is None or len(peers) < 3:
        return 0.0
    features, values = list(peers.values()), _values(fit, list(peers), conv, key)
    x, at = np.array(features), np.array(ours)
    clamped = np.clip(at, x.min(axis=0), x.max(axis=0))
    if mode == "penalty":
        return (ridge_at(features, values, ours, fit.anchor_ridge)
                + slope * max(0.0, ours[0] - float(x[:, 0].max())))
    inside = ridge_at(features, values, clamped, fit.anchor_ridge)
    if mode == "clamp":
        return inside
    beyond = _coef(features, values, fit.anchor_ridge) * (at - clamped)
    return inside + float(np.minimum(0.0, beyond).sum())


def cross_class(fit: AnchoredRoofline, spec: AcceleratorSpec, conv: float, key: str) -> float:
    """The peers' mean, each carried by the trend of the other tensor-core class's parts."""
    peers = _peers(fit, spec)
    other = (True, True) if architecture_class(spec) != (True, True) else (True, False)
    parts = {n: f for n, s in sorted(fit.specs_.items())
             if architecture_class(s) == other and (f := size_features(s)) is not None}
    ours = size_features(spec)
    if ours is None or len(peers) < 3 or len(parts) < 3:
        return 0.0
    trend = _values(fit, list(parts), conv, key)

    def at(figures: tuple[float, float]) -> float:
        return ridge_at(list(parts.values()), trend, figures, fit.anchor_ridge)

    return statistics.fmean(fit.anchor(n, conv, key) + at(ours)
                            - at(size_features(fit.specs_[n]) or ours) for n in peers)


RULES: dict[str, Borrow] = {
    "regressed on 3 logs (shipped)": shipped,
    "regressed on tensor peak and bandwidth (size trend)": two_logs,
    "peers' plain mean": plain_mean,
    "none": none,
    "clamped to the envelope": lambda f, s, c, k: _envelope(f, s, c, k, mode="clamp"),
    "extrapolated only downward": lambda f, s, c, k: _envelope(f, s, c, k, mode="down"),
    "penalty -0.1 per log tensor peak beyond": (
        lambda f, s, c, k: _envelope(f, s, c, k, mode="penalty", slope=-0.1)),
    "penalty -0.23 per log tensor peak beyond": (
        lambda f, s, c, k: _envelope(f, s, c, k, mode="penalty", slope=-0.23)),
}


class _Borrowing(AnchoredRoofline):
    """The anchored roofline with its borrowed correction replaced by a rule."""

    borrow: Borrow = staticmethod(shipped)

    def _borrowed_anchor(self, accelerator: AcceleratorSpec, conv_fraction: float,
                         precision_key: str) -> float:
        return type(self).borrow(self, accelerator, conv_fraction, precision_key)


def held_out_errors(samples: Sequence[RooflineSample], sets: HeldOut, borrow: Borrow
                    ) -> dict[str, list[float]]:
    """Per held-out set, the log errors of its parts' samples predicted without them."""
    rule = type("Rule", (_Borrowing,), {"borrow": staticmethod(borrow)})
    errors: dict[str, list[float]] = defaultdict(list)
    for label, held in sets:
        fitted = rule(conv_fractions=REFERENCE_CONV_FLOPS_FRACTION).fit(
            [s for s in samples if s.accelerator.name not in held])
        for s in samples:
            if s.accelerator.name in held:
                predicted = fitted.predict_log(s.op_mix, s.accelerator, batch_size=s.batch_size,
                                               tf32=s.tf32, precision_key=s.group.split("/")[1])
                errors[label].append(predicted - math.log(s.samples_per_second))
    return errors


def _cell(values: Sequence[float]) -> str:
    mape = statistics.fmean(abs(math.exp(e) - 1) for e in values)
    return f"{100 * mape:.1f}% ({statistics.fmean(values):+.2f})"


def main() -> None:
    """Write ``benchmarks/results/family_holdout.md``."""
    specs = load_accelerators()
    samples = reference_samples(load_reference(), specs, reference_op_mixes())
    present = {s.accelerator.name for s in samples}
    families = {f: frozenset(n for n in names if n in present) for f, names in FAMILIES.items()}
    layouts: dict[str, HeldOut] = {
        "families": list(families.items()),
        "one part": [(n, frozenset({n})) for n in sorted(present)],
        "top": [("Hopper", families["Hopper"]),
                ("Hopper+Ada", families["Hopper"] | families["Ada"]),
                ("Hopper+Ada+A100", families["Hopper"] | families["Ada"] | families["A100"])],
        "bottom": [("RTX-3090+A10", frozenset({"RTX-3090", "A10"})),
                   ("RTX-2080Ti", frozenset({"RTX-2080Ti"}))]}
    lines = ["# Borrowing a roofline correction: GPU families held out of the reference table",
             "", "Command: `python benchmarks/bench_family_holdout.py`", "",
             f"{len(samples)} single-device reference samples. Cell: MAPE (mean log error, "
             "predicted - measured) of the held-out parts' samples.", "",
             "| rule | families | one part | top | bottom | "
             + " | ".join(families) + " | top: " + " | top: ".join(t for t, _ in layouts["top"])
             + " |", "|---" * (5 + len(families) + len(layouts["top"])) + "|"]
    for label, borrow in RULES.items():
        found = {name: held_out_errors(samples, sets, borrow) for name, sets in layouts.items()}
        pooled = [_cell([e for v in found[name].values() for e in v]) for name in layouts]
        lines.append(f"| {label} | " + " | ".join(pooled) + " | "
                     + " | ".join(_cell(found["families"][f]) for f in families) + " | "
                     + " | ".join(_cell(found["top"][t]) for t, _ in layouts["top"]) + " |")
    turing = [(f, families[f]) for f in ("Volta", "Turing")]
    lines += ["", "Cross-class: Volta and Turing held out by family, borrowing from their "
              "class peers (pooled):", "", "| rule | Volta/Turing |", "|---|---|"]
    for label, borrow in (("peers' plain mean", plain_mean),
                          ("peers' mean carried by the Ampere-and-newer trend", cross_class),
                          ("regressed on tensor peak and bandwidth (own class)", two_logs)):
        found = held_out_errors(samples, turing, borrow)
        lines.append(f"| {label} | {_cell([e for v in found.values() for e in v])} |")
    write_result("family_holdout", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
