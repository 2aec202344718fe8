"""The anchor's own stack factor: what its published run got from the tuned stack, against a
typical part's.

A published ratio ``r = P / A`` was measured in one suite, both parts running that suite's
tuned stack; the model predicts the harness's plain step. The ratio carries over to the
harness only where P gets the speed-up A gets from the stack. It does not: a part's *stack
factor* ``f(X)``, its published per-chip figure over the harness prediction of the same part,
is 1.44 for a V100 and 2.1-2.4 for A100s and H100s in MLPerf ResNet-50, and an H100 running
fp8 under Transformer Engine gets more than a TPU gets from int8. So

    harness(P) = harness(A) x r x f(A) / f(P)

``f(A)`` is measured: A has reference rows, so a harness prediction. ``f(P)`` is not, and is
taken as the typical factor ``T`` of the stack: the geometric mean of ``f`` over the parts with
reference rows that published the same workload in the same stack kind (``Stack``: every
MLPerf round pooled) at the same precision group (``precision_group``). Only ratios of harness
predictions enter (``f(A) / T`` compares parts inside one stack and workload), each the model's
prediction of the user's step, as the anchoring's own ratio is. Two further rules:

- a *sibling* of the anchor (same vendor, architecture class and generation: an H200 or an
  H100-NVL beside an H100) runs the anchor's kernels: its factor is the anchor's, no
  correction;
- a *cousin* (same vendor and architecture class, another generation: an L40S, an L4 or an
  A10G beside an H100) runs kernels of the same family but gets less from a tuned stack the
  slower it runs: on the reference parts ``log f`` rises with the log harness prediction (V100
  1.51, A100 2.1, H100 2.36 on MLPerf ResNet-50; ``slope``: the pooled within-group slope over
  every workload, stack and precision group, about 0.4 on a convolutional step and 0 on a
  transformer one). Taken through the anchor, ``log f(P) = log f(A) + b (h(P) - h(A))``, and
  ``h(P)`` is on both sides: ``h(P) - h(A) = log r / (1 + b)``. Same-generation pairs do not
  follow that trend (H100-PCIe 2.37 beside H100-SXM 2.36), and a slow part starved of
  bandwidth may gain more from fused kernels than its speed says (L4), so the two rules only
  bracket the cousin: its harness prediction is its own prior kept inside
  ``[h(A) + log r, h(A) + log r / (1 + b)]`` (the sibling's and the trend's), else the nearer
  end;
  a part measured in no suite beside a reference part (a ``cross_suite`` anchor, set against
  each reference part that published the workload in the stack kind at the same arithmetic,
  TF32 apart from fp32) gets no offset either: averaged over those anchors, its factor is
  their mean factor (``harness(P) = P / T`` over its anchors: a Neuron BERT table or the 2017
  TensorFlow benchmarks taken as tuned as NVIDIA's DLE READMEs);
- where P's rows ran at another precision group than A's (a TPU's int8 AQT beside an H100's
  fp8), ``f(P)`` is the typical factor moved by each group's gain over bf16/fp16 in the stack
  kind, ``gain(gP) - gain(gA)`` in logs. A group's gain is the mean of what measures it: on a
  workload where parts with reference rows published both groups, their typical factors' log
  difference (MLPerf BERT: the H100s' fp8 against the A100's fp16); a part that published both
  groups on one workload, its own log ratio (TPU-v5p's int8 over its bf16 on GPT-3). No
  measurement: no gain.
"""

from __future__ import annotations

import statistics
import weakref
from collections.abc import Callable, Collection
from dataclasses import dataclass

from advisor.throughput._published_anchor import Figures, PublishedAnchor
from advisor.throughput.published import Stack

__all__ = ["Harness", "StackFactors", "harness_class"]

# (accelerator, precision class ``mixed`` or ``fp32``) -> the model's log samples/s of the
# user's step there, None where it cannot be put at that class
Harness = Callable[[str, str], float | None]


# harness -> (the factors it was asked of, their slope), while the harness lives
_SLOPES: weakref.WeakKeyDictionary[Harness, tuple[StackFactors, float]] = (
    weakref.WeakKeyDictionary())


def harness_class(group: str) -> str:
    """The precision class a harness step runs at for a published precision group: 8-bit
    rows stand for a half-width step, fp32 for fp32."""
    return "fp32" if group == "fp32" else "mixed"


@dataclass(frozen=True, slots=True)
class StackFactors:
    """Published figures (``published_figures``) and the parts with reference rows: the stack
    factors of anchors against their stack's typical part (see the module)."""

    figures: Figures
    reference_parts: Collection[str]

    def _log_factors(self, workload: str, stack: Stack, group: str,
                     harness: Harness) -> dict[str, float]:
        """Log stack factor (up to the workload's constant) of each part with reference rows
        and a harness prediction that published ``workload`` in ``stack`` at ``group``."""
        found = {}
        for part, value in self.figures.get((workload, stack), {}).get(group, {}).items():
            base = harness(part, harness_class(group)) if part in self.reference_parts else None
            if base is not None:
                found[part] = value - base
        return found

    def relative(self, anchor: str, workload: str, stack: Stack, group: str,
                 harness: Harness) -> float:
        """log f(anchor) - log T at ``group``: how much more the anchor's run got from the
        stack than the typical part's; 0 where its factor is unknown."""
        factors = self._log_factors(workload, stack, group, harness)
        if anchor not in factors:
            return 0.0
        return factors[anchor] - statistics.fmean(factors.values())

    def gain(self, stack: Stack, group: str, harness: Harness) -> float:
        """Log speed-up of ``group`` (``fp8``, ``int8``) over bf16/fp16 in ``stack`` (see the
        module); 0 for ``mixed`` and ``fp32`` and where nothing measures it."""
        if group in ("mixed", "fp32"):
            return 0.0
        estimates = []
        for (_, kind), by_group in sorted(self.figures.items(), key=lambda i: i[0][0]):
            if kind is not stack or group not in by_group or "mixed" not in by_group:
                continue
            for part in sorted(set(by_group[group]) & set(by_group["mixed"])):
                estimates.append(by_group[group][part] - by_group["mixed"][part])
        for workload, kind in sorted(self.figures, key=lambda k: k[0]):
            if kind is stack:
                ours = self._log_factors(workload, stack, group, harness)
                half = self._log_factors(workload, stack, "mixed", harness)
                if ours and half:
                    estimates.append(statistics.fmean(ours.values())
                                     - statistics.fmean(half.values()))
        return statistics.fmean(estimates) if estimates else 0.0

    def slope(self, harness: Harness) -> float:
        """Pooled within-group least-squares slope of the reference parts' log stack factor on
        their log harness prediction, over every (workload, stack kind, precision group) with
        two parts or more; 0 where none has. Remembered per harness (each of a part's cousin
        anchors asks it again)."""
        try:
            known = _SLOPES.get(harness)
        except TypeError:  # a harness that takes no weak reference: not remembered
            return self._slope(harness)
        if known is not None and known[0] is self:
            return known[1]
        value = self._slope(harness)
        _SLOPES[harness] = (self, value)
        return value

    def _slope(self, harness: Harness) -> float:
        num = den = 0.0
        for (workload, stack), by_group in sorted(self.figures.items(),
                                                  key=lambda i: (i[0][0], i[0][1].value)):
            for group in sorted(by_group):
                factors = self._log_factors(workload, stack, group, harness)
                if len(factors) < 2:
                    continue
                speed = {part: harness(part, harness_class(group)) for part in factors}
                mean_speed = statistics.fmean(v for v in speed.values() if v is not None)
                mean_factor = statistics.fmean(factors.values())
                for part, factor in factors.items():
                    dx = speed[part] - mean_speed  # type: ignore[operator]
                    num += dx * (factor - mean_factor)
                    den += dx * dx
        return num / den if den > 0 else 0.0

    def offset(self, anchor: PublishedAnchor, harness: Harness, *, sibling: bool,
               cousin: str | None = None) -> float:
        """log f(A) - log f(P) for a published anchor, the mean over its suites: what to add to
        the published log ratio to carry it to the harness (see the module). ``cousin``: the
        part P, of the anchor's class but another generation (its prior is bracketed)."""
        groups = anchor.groups or ((anchor.precision, anchor.precision),)
        offsets = []
        for ours, theirs in groups:
            moved = (self.gain(anchor.stack, theirs, harness)
                     - self.gain(anchor.stack, ours, harness)) if ours != theirs else 0.0
            if sibling:
                own = 0.0
            elif cousin is not None:
                own = self._bracket(anchor, cousin, theirs, moved, harness)
            else:
                own = self.relative(anchor.anchor, anchor.workload, anchor.stack, theirs,
                                    harness)
            offsets.append(own + moved)
        return statistics.fmean(offsets)

    def _bracket(self, anchor: PublishedAnchor, part: str, group: str, moved: float,
                 harness: Harness) -> float:
        """A cousin's log f(A) - log f(P): its prior's gap to the sibling-carried ratio, kept
        between 0 (the sibling's) and the speed trend's ``-b (log r + moved) / (1 + b)``."""
        precision = harness_class(group)
        theirs, prior = harness(anchor.anchor, precision), harness(part, precision)
        b = self.slope(harness)
        if theirs is None or prior is None or b <= -1:
            return 0.0
        carried = anchor.log_ratio + moved
        low, high = sorted((0.0, -b * carried / (1 + b)))
        return min(max(prior - theirs - carried, low), high)
