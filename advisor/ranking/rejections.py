"""Why an offer was left out: a kind, the figures it compared, and one text per kind.

Readers group and count rejections by ``kind`` and show ``reason``; nothing parses the text
back. Each kind also says, in the plural, what such offers have in common and what to change
in model.yaml to rank them (None: nothing there changes it).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pricing import InstanceOffer

__all__ = ["KIND_TEXT", "KindText", "Rejection", "RejectionKind", "reason_text", "render_reason"]

Figure = float | int | str


class RejectionKind(enum.StrEnum):
    """The rule an offer failed."""

    CLOUD = "cloud"
    REGION = "region"
    ACCELERATOR_NOT_INCLUDED = "accelerator-not-included"
    ACCELERATOR_EXCLUDED = "accelerator-excluded"
    SPOT_NOT_ALLOWED = "spot-not-allowed"
    ON_DEMAND_LEFT_OUT = "on-demand-left-out"
    INFERENCE_ONLY = "inference-only"
    TOO_MANY_ACCELERATORS = "too-many-accelerators"
    BATCH_TOO_SMALL = "batch-too-small"
    PRICE_FLAGGED = "price-flagged"
    MEMORY = "memory"
    MEMORY_PROBE_OOM = "memory-probe-oom"
    DEADLINE = "deadline"
    BUDGET = "budget"
    PORTABILITY = "portability"


@dataclass(frozen=True, slots=True)
class KindText:
    """How one kind reads: the reason template (``str.format`` over the figures and the offer's
    ``accelerator``/``cloud``/``region``/``count``), what the offers have in common (plural),
    and the model.yaml change that would rank them."""

    template: str
    what: str
    fix: str | None


_M = RejectionKind
KIND_TEXT: Mapping[RejectionKind, KindText] = MappingProxyType({
    _M.CLOUD: KindText("cloud {cloud} not in constraints.clouds",
                       "are on clouds constraints.clouds leaves out",
                       "allow more clouds in constraints.clouds"),
    _M.REGION: KindText("region {region} not in constraints.regions",
                        "are in regions constraints.regions leaves out",
                        "allow more regions in constraints.regions"),
    _M.ACCELERATOR_NOT_INCLUDED: KindText(
        "{accelerator} not in constraints.accelerators.include",
        "have accelerators constraints.accelerators leaves out", "widen constraints.accelerators"),
    _M.ACCELERATOR_EXCLUDED: KindText(
        "{accelerator} in constraints.accelerators.exclude",
        "have accelerators constraints.accelerators leaves out", "widen constraints.accelerators"),
    _M.SPOT_NOT_ALLOWED: KindText("spot not allowed (constraints.spot: never)",
                                  "are in the market constraints.spot leaves out",
                                  "set constraints.spot: allowed"),
    _M.ON_DEMAND_LEFT_OUT: KindText("on-demand left out (constraints.spot: only)",
                                    "are in the market constraints.spot leaves out",
                                    "set constraints.spot: allowed"),
    _M.INFERENCE_ONLY: KindText("{accelerator} is an inference accelerator, not for training",
                                "are inference-only accelerators", None),
    _M.TOO_MANY_ACCELERATORS: KindText(
        "{count} accelerators > constraints.max_accelerators {max_accelerators}",
        "have more devices than constraints.max_accelerators",
        "raise constraints.max_accelerators"),
    _M.BATCH_TOO_SMALL: KindText(
        "batch_size {batch_size} < {count} accelerators (data parallel needs a sample per device)",
        "have more devices than batch_size has samples",
        "raise batch_size to at least the device count"),
    _M.PRICE_FLAGGED: KindText("price flagged: {flag} (--include-flagged ranks it)",
                               "have a price a consistency check doubts",
                               "check those prices, then pass --include-flagged"),
    _M.MEMORY: KindText(
        "needs {needed_gib:,.1f} GiB per device at batch {batch:,} ({basis} {step_gib:,.1f} GiB "
        "+ {overhead_gib:,.1f} GiB {runtime}), {accelerator} has {memory_gib:,.1f} GiB: "
        "{short_gib:,.1f} GiB short", "lack device memory", None),
    _M.MEMORY_PROBE_OOM: KindText(
        "needs more than {memory_gib:,.1f} GiB per device at batch {batch:,}: probe {probe_id} "
        "ran out of memory at batch {failed_batch:,} on {accelerator}", "lack device memory",
        None),
    _M.DEADLINE: KindText("run takes {run_hours:,.1f} h{spot} > constraints.deadline_hours "
                          "{deadline_hours:g}", "run past constraints.deadline_hours",
                          "raise constraints.deadline_hours"),
    _M.BUDGET: KindText("run costs ${run_cost_usd:,.2f}{spot} > constraints.budget_usd "
                        "{budget_usd:,g}", "cost more than constraints.budget_usd",
                        "raise constraints.budget_usd"),
    _M.PORTABILITY: KindText(
        "{accelerator} runs PyTorch through {runtime_package} ({backend}), which has no "
        "lowering for the step's {operators} (constraints.portability: strict)",
        "need a runtime (torch_xla, torch-neuronx, Gaudi's) that lacks some of the step's "
        "operators", "set constraints.portability: warn, or replace those operators"),
})


def render_reason(kind: RejectionKind, offer: InstanceOffer, figures: Mapping[str, Figure]) -> str:
    """The one text of ``kind`` for ``offer`` and the figures it compared."""
    return reason_text(kind, cloud=offer.cloud.value, region=offer.region,
                       accelerator=offer.accelerator, count=offer.accelerator_count,
                       figures=figures)


def reason_text(kind: RejectionKind, *, cloud: str, region: str, accelerator: str, count: int,
                figures: Mapping[str, Figure]) -> str:
    """``render_reason`` from the offer's cells (a ranking's columns hold them)."""
    return KIND_TEXT[kind].template.format(
        cloud=cloud, region=region, accelerator=accelerator, count=count, **figures)


@dataclass(frozen=True, slots=True)
class Rejection:
    """An offer left out: the rule it failed (``kind``) and the ``figures`` it compared
    (``run_hours`` and ``deadline_hours``, ``needed_gib`` and ``memory_gib``, ...)."""

    offer: InstanceOffer
    kind: RejectionKind
    figures: Mapping[str, Figure] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """Why, in one line (``render_reason``)."""
        return render_reason(self.kind, self.offer, self.figures)
