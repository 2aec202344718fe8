"""Accelerator names in filters: a family matches every variant, an exact name just itself."""

from __future__ import annotations

import pytest

from pricing import UnknownNameError, canonical_accelerator_name, shipped_catalog
from pricing.accelerators import matching_accelerators


@pytest.mark.parametrize(("typed", "matched"), [
    # a family: every variant, in catalog order
    ("A100", {"A100-40GB-SXM", "A100-40GB-PCIe", "A100-80GB-SXM", "A100-80GB-PCIe"}),
    ("h100", {"H100-SXM", "H100-PCIe", "H100-NVL"}),
    ("V100", {"V100-16GB-SXM2", "V100-32GB-SXM2"}),
    ("a100 80gb", {"A100-80GB-SXM", "A100-80GB-PCIe"}),        # a sub-family, any spelling
    ("TPU", {"TPU-v2", "TPU-v3", "TPU-v4", "TPU-v5e", "TPU-v5p", "TPU-v6e"}),
    ("trainium", {"Trainium1", "Trainium2"}),                   # word before a generation number
    # an exact canonical name: just itself
    ("H100-SXM", {"H100-SXM"}),
    ("a100-80gb-sxm", {"A100-80GB-SXM"}),
    ("A10", {"A10"}),                                           # not A100, not A10G
    ("Gaudi", {"Gaudi"}),                                       # not Gaudi2, Gaudi3
    # an alias of one variant: that variant
    ("h100 sxm5", {"H100-SXM"}),
    ("v5e", {"TPU-v5e"}),
])
def test_filter_names_match_families_or_one_accelerator(typed: str, matched: set[str]) -> None:
    assert set(matching_accelerators(typed)) == matched


@pytest.mark.parametrize(("typed", "one"), [
    ("A100", "A100-40GB-SXM"),   # a single-accelerator resolver still picks one variant
    ("H100", "H100-SXM"),
    ("V100", "V100-16GB-SXM2"),
])
def test_single_resolver_keeps_aliases(typed: str, one: str) -> None:
    assert canonical_accelerator_name(typed) == one


@pytest.mark.parametrize(("family", "variant"), [
    ("A100", "A100-80GB-SXM"),
    ("H100", "H100-NVL"),
    ("V100", "V100-32GB-SXM2"),
])
def test_catalog_query_by_family_includes_every_variant(family: str, variant: str) -> None:
    offers = shipped_catalog().query(accelerators=[family])
    assert variant in {o.accelerator for o in offers}


def test_catalog_query_by_exact_name_is_just_that_variant() -> None:
    assert {o.accelerator for o in shipped_catalog().query(accelerators=["H100-SXM"])} == {
        "H100-SXM"}


def test_unknown_name_names_the_field_and_suggests() -> None:
    with pytest.raises(UnknownNameError,
                       match=r"^--accelerator: unknown accelerator 'H10'; did you mean H100"):
        matching_accelerators("H10", field="--accelerator")


def test_unknown_name_without_a_close_match_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        matching_accelerators("foo", field="--accelerator")
    message = str(info.value)
    assert message.startswith("--accelerator: unknown accelerator 'foo'; use a family (A100, H100")
    assert "H100-NVL" in message and "TPU-v5e" in message and "\n" not in message


def test_unknown_region_names_the_field() -> None:
    with pytest.raises(UnknownNameError,
                       match=r"^constraints.regions: unknown region 'us-east-9'; did you mean"):
        shipped_catalog().check_regions(["us-east-9"], field="constraints.regions")


def test_unknown_region_without_a_close_match_lists_the_regions() -> None:
    with pytest.raises(UnknownNameError, match=r"^--region: unknown region 'zz'; regions with "
                                               r"offers: .*us-east-1"):
        shipped_catalog().check_regions(["zz"], field="--region")
