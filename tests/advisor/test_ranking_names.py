"""Accelerator and region names in constraints: families, exact names, and errors naming the field."""

from __future__ import annotations

from datetime import date

import pytest

from advisor.errors import SpecError
from advisor.ranking.offers import check_constraint_names, filter_offers
from advisor.spec import WorkloadSpec, parse_workload_spec
from pricing import Cloud, InstanceOffer, Market, UnknownNameError, shipped_catalog

CATALOG = shipped_catalog()


def offer(accel: str) -> InstanceOffer:
    return InstanceOffer(cloud=Cloud.AZURE, region="eastus", zone=None, instance_type="vm",
                         accelerator=accel, accelerator_count=1, vcpus=8, memory_gib=64,
                         accelerator_memory_gib=80, market=Market.ON_DEMAND,
                         price_usd_per_hour=1.0, source="test", observed_at=date(2025, 3, 1))


def spec(**constraints: object) -> WorkloadSpec:
    return parse_workload_spec({
        "name": "t", "model": {"builtin": "mlp"}, "batch_size": 64,
        "data": {"total_samples": 3_600_000}, "constraints": constraints,
    })


@pytest.mark.parametrize(("accelerators", "accel", "kept"), [
    ({"include": ["h100"]}, "H100-NVL", True),          # an included family keeps every variant
    ({"include": ["H100"]}, "H100-PCIe", True),
    ({"include": ["A100"]}, "A100-80GB-SXM", True),
    ({"include": ["v100"]}, "V100-32GB-SXM2", True),
    ({"include": ["A100-80GB"]}, "A100-80GB-PCIe", True),
    ({"exclude": ["A100"]}, "A100-80GB-SXM", False),    # an excluded one leaves out every variant
    ({"exclude": ["A100"]}, "A100-40GB-PCIe", False),
    ({"exclude": ["h100"]}, "H100-NVL", False),
    ({"exclude": ["V100"]}, "V100-32GB-SXM2", False),
])
def test_a_family_stands_for_every_variant(accelerators: dict[str, list[str]], accel: str,
                                           kept: bool) -> None:
    got, rejected = filter_offers(spec(accelerators=accelerators), [offer(accel)],
                                  CATALOG.accelerators)
    assert got == ([offer(accel)] if kept else [])
    assert [r.reason for r in rejected] == (
        [] if kept else [f"{accel} in constraints.accelerators.exclude"])


def test_an_exact_name_matches_just_itself() -> None:
    kept, rejected = filter_offers(spec(accelerators={"include": ["H100-SXM"]}),
                                   [offer("H100-SXM"), offer("H100-NVL")], CATALOG.accelerators)
    assert [o.accelerator for o in kept] == ["H100-SXM"]
    assert rejected[0].reason == "H100-NVL not in constraints.accelerators.include"


@pytest.mark.parametrize(("constraints", "message"), [
    ({"regions": ["us-east-9"]},
     "constraints.regions: unknown region 'us-east-9'; did you mean us-east-"),
    ({"accelerators": {"include": ["h10o"]}},
     "constraints.accelerators.include: unknown accelerator 'h10o'; did you mean H100"),
    ({"accelerators": {"exclude": ["foo"]}},
     "constraints.accelerators.exclude: unknown accelerator 'foo'; use a family (A100"),
    ({"accelerators": ["foo"]},       # the list shorthand is include
     "constraints.accelerators.include: unknown accelerator 'foo'"),
])
def test_unknown_names_in_constraints_name_the_field(constraints: dict[str, object],
                                                     message: str) -> None:
    with pytest.raises(UnknownNameError) as info:
        check_constraint_names(spec(**constraints), CATALOG)
    assert str(info.value).startswith(message)


def test_filter_names_the_field_of_an_unknown_accelerator() -> None:
    with pytest.raises(UnknownNameError, match="^constraints.accelerators.exclude: unknown"):
        filter_offers(spec(accelerators={"exclude": ["foo"]}), [offer("T4")],
                      CATALOG.accelerators)


def test_known_family_and_region_names_pass() -> None:
    check_constraint_names(spec(regions=["us-east-1"],
                                accelerators={"include": ["TPU", "a100"], "exclude": ["V100"]}),
                           CATALOG)


@pytest.mark.parametrize(("constraints", "message"), [
    ({"clouds": ["gcp"], "regions": ["us-east-1"]},
     "constraints.regions: 'us-east-1' has offers only on aws, which constraints.clouds leaves "
     "out; add aws to constraints.clouds or name a region of gcp"),
    ({"clouds": ["aws", "gcp"], "regions": ["us-east-1", "eastus"]},  # one of two is azure's
     "constraints.regions: 'eastus' has offers only on azure, which constraints.clouds leaves "
     "out; add azure to constraints.clouds or name a region of aws, gcp"),
])
def test_a_region_of_no_allowed_cloud_is_refused(constraints: dict[str, object],
                                                 message: str) -> None:
    # it used to rank nothing (or silently drop the region), after profiling the model
    with pytest.raises(SpecError) as info:
        check_constraint_names(spec(**constraints), CATALOG)
    assert str(info.value) == message


def test_known_regions_of_allowed_clouds_pass() -> None:
    check_constraint_names(spec(clouds=["aws", "gcp"], regions=["us-east-1", "us-central1"]),
                           CATALOG)
