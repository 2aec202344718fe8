"""Ranking and recommendation: offers filtered by the constraints and memory fit, costed
(``offers``), ordered, explained (``decision``, ``rejections``, ``spot_risk``), with the
probes worth running next (``planner``, ``probe_plan``); ``service`` runs the whole flow from
a model.yaml and ``serialize`` turns it into ``--json`` rows; ``policy`` holds the two enums
a caller asks for a ranking with (``RankBy``, ``TunedPolicy``).

The names below are imported on first use (``import advisor.ranking`` never imports torch or
scikit-learn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor._lazy import lazy_exports

if TYPE_CHECKING:
    from advisor.ranking.decision import (
        BASIS_LABEL,
        BASIS_MEANING,
        OfferGroup,
        could_be_better,
        describe_opportunity,
        group_regions,
        headline,
        headline_note,
    )
    from advisor.ranking.evidence import ProbeEvidence, evidence_from_probes
    from advisor.ranking.offers import CostEstimate, Opportunity, Recommendation
    from advisor.ranking.planner import Candidate, plan, plan_probes
    from advisor.ranking.policy import RankBy, TunedPolicy
    from advisor.ranking.portability import Portability, portability_of
    from advisor.ranking.probe_plan import (
        ProbeOptions,
        offer_price,
        prepare_probes,
        probe_target,
    )
    from advisor.ranking.recommend import workload_features
    from advisor.ranking.rejections import Rejection, RejectionKind
    from advisor.ranking.serialize import (
        estimate_row,
        estimate_rows,
        recommendation_to_dict,
        rejection_row,
        rejection_rows,
    )
    from advisor.ranking.service import current_catalog, recommend_for_file, stored_probe_evidence
    from advisor.ranking.spot_risk import SpotRiskBasis, spot_legend

__all__ = [
    "BASIS_LABEL",
    "BASIS_MEANING",
    "Candidate",
    "CostEstimate",
    "OfferGroup",
    "Opportunity",
    "Portability",
    "ProbeEvidence",
    "ProbeOptions",
    "RankBy",
    "Recommendation",
    "Rejection",
    "RejectionKind",
    "SpotRiskBasis",
    "TunedPolicy",
    "could_be_better",
    "current_catalog",
    "describe_opportunity",
    "estimate_row",
    "estimate_rows",
    "evidence_from_probes",
    "group_regions",
    "headline",
    "headline_note",
    "offer_price",
    "plan",
    "plan_probes",
    "portability_of",
    "prepare_probes",
    "probe_target",
    "recommend_for_file",
    "recommendation_to_dict",
    "rejection_row",
    "rejection_rows",
    "spot_legend",
    "stored_probe_evidence",
    "workload_features",
]

_HOME = {
    "BASIS_LABEL": "decision",
    "BASIS_MEANING": "decision",
    "Candidate": "planner",
    "CostEstimate": "offers",
    "OfferGroup": "decision",
    "Opportunity": "offers",
    "Portability": "portability",
    "ProbeEvidence": "evidence",
    "ProbeOptions": "probe_plan",
    "RankBy": "policy",
    "Recommendation": "offers",
    "Rejection": "rejections",
    "RejectionKind": "rejections",
    "SpotRiskBasis": "spot_risk",
    "spot_legend": "spot_risk",
    "TunedPolicy": "policy",
    "could_be_better": "decision",
    "current_catalog": "service",
    "describe_opportunity": "decision",
    "estimate_row": "serialize",
    "estimate_rows": "serialize",
    "evidence_from_probes": "evidence",
    "group_regions": "decision",
    "headline": "decision",
    "headline_note": "decision",
    "offer_price": "probe_plan",
    "plan": "planner",
    "plan_probes": "planner",
    "portability_of": "portability",
    "prepare_probes": "probe_plan",
    "probe_target": "probe_plan",
    "recommend_for_file": "service",
    "workload_features": "recommend",
    "recommendation_to_dict": "serialize",
    "rejection_row": "serialize",
    "rejection_rows": "serialize",
    "stored_probe_evidence": "service",
}

__getattr__, __dir__ = lazy_exports("advisor.ranking", _HOME, globals(), __all__)
