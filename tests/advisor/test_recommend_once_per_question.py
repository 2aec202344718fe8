"""recommend answers memory fit and throughput once per distinct (accelerator, device count,
device memory): the ranking and rejections equal the offer-by-offer path on the shipped
catalog, with and without probe evidence, and the model is asked once per question."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import date
from typing import Any

import pytest
from test_recommend import RESNET, SPEC

from advisor.ranking.offers import (
    CostAssumptions,
    CostEstimate,
    MeasuredMemory,
    Rejection,
    cost_of,
    filter_offers,
    memory_rejection,
    rank,
    samples_per_device,
)
from advisor.ranking.recommend import default_throughput_model, recommend, workload_features
from advisor.ranking.serialize import estimate_row, rejection_row
from advisor.spec import parse_workload_spec
from advisor.throughput.estimate import Measurement
from pricing import shipped_catalog

MEASURED = (Measurement("H100-SXM", 2205.0, 1),)
MEMORY = {"A10G": MeasuredMemory("A10G", fits_batch=64, fits_peak_gib=20.0, fails_batch=96,
                                 probe_id="p1")}


def _offer_by_offer(spec: Any, measurements: tuple[Measurement, ...],
                    memory: dict[str, MeasuredMemory]) -> tuple[list[CostEstimate],
                                                                list[Rejection]]:
    """The plain path: every offer asks the model and the memory rule itself."""
    catalog = shipped_catalog()
    model = default_throughput_model(catalog)
    features = workload_features(spec, RESNET, None)
    candidates, rejected = filter_offers(spec, catalog.offers, catalog.accelerators)
    assumptions = CostAssumptions()  # the defaults recommend uses
    estimates = []
    for offer in candidates:
        needed, no_fit = memory_rejection(spec, RESNET, offer, assumptions,
                                          memory.get(offer.accelerator))
        if no_fit:
            rejected.append(no_fit)
            continue
        on_offer = replace(features, batch_size_per_device=samples_per_device(spec, offer))
        throughput = model.estimate(on_offer, catalog.accelerators[offer.accelerator],
                                    count=offer.accelerator_count,
                                    measurements=measurements).step_capped(spec.batch_size)
        estimates.append(cost_of(spec, offer, throughput, assumptions, needed))
    ranked, over = rank(spec, estimates)
    return ranked, sorted(rejected + over, key=lambda r: r.offer.sort_key)


@pytest.mark.parametrize(("overrides", "evidence"), [
    ({}, False),                                              # no probe, aws and gcp
    ({"constraints": {"max_accelerators": 8}}, True),         # every cloud, a probe, a memory limit
    ({"batch_size": 2048, "constraints": {}}, False),         # big batch: memory rejections
    ({"constraints": {"deadline_hours": 40, "budget_usd": 60}}, True),  # over time and money
])
def test_the_ranking_and_rejections_equal_the_offer_by_offer_path(overrides: dict[str, Any],
                                                                  evidence: bool) -> None:
    spec = parse_workload_spec({**SPEC, **overrides})
    measurements = MEASURED if evidence else ()
    memory = MEMORY if evidence else {}
    rec = recommend(spec, catalog=shipped_catalog(), profile=RESNET, today=date(2026, 1, 1),
                    measurements=measurements, memory=memory)
    ranked, rejected = _offer_by_offer(spec, measurements, memory)
    assert list(rec.ranked) == ranked
    assert list(rec.rejected) == rejected
    assert [(r.offer.key, r.reason) for r in rec.rejected] == \
        [(r.offer.key, r.reason) for r in rejected]
    assert rec.rejected.kind_counts() == Counter(r.kind for r in rejected)
    assert len(rec.ranked) > 100 and rec.rejected  # a real catalog's worth of both
    # --json's rows come from the columns: the same keys, in the same order, and values
    from_columns = list(rec.ranked.column_rows() or ())
    assert [list(row.items()) for row in from_columns] == \
        [list(estimate_row(e).items()) for e in ranked]
    assert any(row["on_demand_price_usd_per_hour"] and row["market"] == "spot"
               for row in from_columns)  # spot rows with their on-demand twin among them
    # and so do the rejected rows, reason included, without building the offers
    rejected_rows = list(rec.rejected.column_rows() or ())
    assert [list(row.items()) for row in rejected_rows] == \
        [list(rejection_row(r).items()) for r in rejected]
    with_cells = [[*rejection_row(r).items(), ("accelerator_count", r.offer.accelerator_count),
                   ("accelerator_memory_gib", r.offer.accelerator_memory_gib),
                   ("price_observed_at", r.offer.observed_at.isoformat()),
                   ("price_source", r.offer.source)] for r in rejected]
    assert [list(row.items()) for row in rec.rejected.column_rows(offer_cells=True) or ()] == \
        with_cells
    assert [list(rejection_row(r, offer_cells=True).items()) for r in rejected] == with_cells


def test_the_model_is_asked_once_per_accelerator_and_device_count() -> None:
    catalog = shipped_catalog()
    model = default_throughput_model(catalog)
    asked: list[tuple[str, int]] = []
    estimate = model.estimate

    def counting(features: Any, spec: Any, **kw: Any) -> Any:
        asked.append((spec.name, kw["count"]))
        return estimate(features, spec, **kw)

    model.estimate = counting  # type: ignore[method-assign]
    rec = recommend(parse_workload_spec({**SPEC, "constraints": {}}), catalog=catalog,
                    profile=RESNET, model=model, today=date(2026, 1, 1))
    assert len(asked) == len(set(asked))
    assert set(asked) == {(e.offer.accelerator, e.offer.accelerator_count) for e in rec.ranked}
    assert len(asked) < len(rec.ranked) / 3  # regions and markets asked nothing new
