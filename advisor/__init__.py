"""Workload spec, profile, throughput model, ranking and sweeps: the Python API.

    from advisor import headline, recommend_for_file
    rec = recommend_for_file("examples/resnet50.yaml")
    print(headline(rec))

The names below are imported on first use, so that ``import advisor`` (and ``advisor --help``)
stays fast and never imports torch; sweeps live in ``advisor.sweep``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor._lazy import lazy_exports
from advisor.errors import AdvisorError, NoFeasibleOffer, SpecError

if TYPE_CHECKING:
    from advisor.profiling.profile import WorkloadProfile, profile_workload
    from advisor.ranking.decision import BASIS_MEANING, could_be_better, group_regions, headline
    from advisor.ranking.evidence import ProbeEvidence, evidence_from_probes
    from advisor.ranking.offers import CostEstimate, Opportunity, RankBy, Recommendation
    from advisor.ranking.recommend import recommend
    from advisor.ranking.rejections import Rejection, RejectionKind
    from advisor.ranking.serialize import recommendation_to_dict
    from advisor.ranking.service import current_catalog, recommend_for_file, stored_probe_evidence
    from advisor.spec import Precision, WorkloadSpec, load_workload_spec, parse_workload_spec
    from advisor.throughput.estimate import Basis, ThroughputEstimate

__all__ = [
    "BASIS_MEANING",
    "AdvisorError",
    "Basis",
    "CostEstimate",
    "NoFeasibleOffer",
    "Opportunity",
    "Precision",
    "ProbeEvidence",
    "RankBy",
    "Recommendation",
    "Rejection",
    "RejectionKind",
    "SpecError",
    "ThroughputEstimate",
    "WorkloadProfile",
    "WorkloadSpec",
    "could_be_better",
    "current_catalog",
    "evidence_from_probes",
    "group_regions",
    "headline",
    "load_workload_spec",
    "parse_workload_spec",
    "profile_workload",
    "recommend",
    "recommend_for_file",
    "recommendation_to_dict",
    "stored_probe_evidence",
]

_HOME = {
    "BASIS_MEANING": "ranking", "CostEstimate": "ranking", "Opportunity": "ranking",
    "ProbeEvidence": "ranking", "RankBy": "ranking", "Recommendation": "ranking",
    "Rejection": "ranking", "RejectionKind": "ranking", "could_be_better": "ranking",
    "current_catalog": "ranking", "evidence_from_probes": "ranking", "group_regions": "ranking",
    "headline": "ranking", "recommend_for_file": "ranking", "recommendation_to_dict": "ranking",
    "stored_probe_evidence": "ranking",
    "recommend": "ranking.recommend",
    "WorkloadProfile": "profiling", "profile_workload": "profiling",
    "Basis": "throughput", "ThroughputEstimate": "throughput",
    "Precision": "spec", "WorkloadSpec": "spec", "load_workload_spec": "spec",
    "parse_workload_spec": "spec",
}


__getattr__, __dir__ = lazy_exports("advisor", _HOME, globals(), __all__)
