"""The device-name table: the names runtimes report, mapped to the catalog's accelerators."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from pricing import PricingError, accelerator_for_device, load_accelerators, shipped_catalog
from pricing.devices import RUNTIMES, DeviceNameRule, load_device_names

# (runtime, name as the runtime reports it, total memory in GiB as torch reports it, catalog name)
REPORTED = [
    # CUDA: torch.cuda.get_device_name(), total memory from get_device_properties
    ("cuda", "NVIDIA H100 80GB HBM3", 79.1, "H100-SXM"),           # the SXM5 part
    ("cuda", "NVIDIA H100 PCIe", 79.1, "H100-PCIe"),
    ("cuda", "NVIDIA H100 NVL", 93.1, "H100-NVL"),                  # 94 GB HBM3
    ("cuda", "NVIDIA H200", 139.8, "H200"),
    ("cuda", "NVIDIA GH200 480GB", 94.5, "GH200"),                  # 96 GB HBM3 + 480 GB LPDDR
    ("cuda", "NVIDIA B200", 178.4, "B200"),
    ("cuda", "NVIDIA A100-SXM4-40GB", 39.4, "A100-40GB-SXM"),
    ("cuda", "A100-SXM4-40GB", 39.4, "A100-40GB-SXM"),              # older drivers, no prefix
    ("cuda", "NVIDIA A100-SXM4-80GB", 79.2, "A100-80GB-SXM"),
    ("cuda", "A100-SXM-80GB", 79.2, "A100-80GB-SXM"),               # older driver spelling
    ("cuda", "NVIDIA PG509-210", 79.2, "A100-80GB-SXM"),            # board code; memory decides
    ("cuda", "NVIDIA A100-PCIE-40GB", 39.4, "A100-40GB-PCIe"),
    ("cuda", "NVIDIA A100 80GB PCIe", 79.2, "A100-80GB-PCIe"),
    ("cuda", "Tesla V100-SXM2-16GB", 15.8, "V100-16GB-SXM2"),
    ("cuda", "Tesla V100-SXM2-32GB", 31.7, "V100-32GB-SXM2"),
    ("cuda", "NVIDIA A10G", 22.1, "A10G"),                          # AWS g5
    ("cuda", "NVIDIA A10", 22.1, "A10"),                            # Azure NV A10 v5
    ("cuda", "NVIDIA L4", 22.0, "L4"),
    ("cuda", "NVIDIA L40S", 44.4, "L40S"),
    ("cuda", "Tesla T4", 14.7, "T4"),
    ("cuda", "Tesla P100-PCIE-16GB", 15.9, "P100"),
    ("cuda", "Tesla K80", 11.2, "K80"),                             # one die of the board
    ("cuda", "NVIDIA RTX A6000", 47.5, "RTX-A6000"),
    ("cuda", "NVIDIA RTX 6000 Ada Generation", 47.5, "RTX-6000-Ada"),
    ("cuda", "NVIDIA A40", 44.4, "A40"),
    ("cuda", "Quadro RTX 6000", 23.6, "Quadro-RTX-6000"),
    ("cuda", "Quadro RTX 8000", 47.5, "Quadro-RTX-8000"),
    ("cuda", "NVIDIA TITAN RTX", 23.6, "Titan-RTX"),
    ("cuda", "NVIDIA GeForce RTX 2080 Ti", 10.7, "RTX-2080Ti"),
    ("cuda", "NVIDIA GeForce RTX 3090", 23.7, "RTX-3090"),
    ("cuda", "NVIDIA GeForce RTX 4090", 23.6, "RTX-4090"),
    ("cuda", "NVIDIA GeForce GTX 1080 Ti", 10.9, "GTX-1080Ti"),
    ("cuda", "GeForce GTX 1080 Ti", 10.9, "GTX-1080Ti"),             # older drivers
    # TPU: the PJRT device kind, or the TPU VM's accelerator type
    ("xla", "TPU v2", None, "TPU-v2"),
    ("xla", "TPU v3", None, "TPU-v3"),
    ("xla", "TPU v4", None, "TPU-v4"),
    ("xla", "TPU v5 lite", None, "TPU-v5e"),                         # v5e's device kind
    ("xla", "TPU v5e", None, "TPU-v5e"),
    ("xla", "TPU v5", None, "TPU-v5p"),                              # v5p's device kind
    ("xla", "TPU v5p", None, "TPU-v5p"),
    ("xla", "TPU v6 lite", None, "TPU-v6e"),                         # v6e's device kind
    ("xla", "TPU v6e", None, "TPU-v6e"),
    ("xla", "v2-8", None, "TPU-v2"),
    ("xla", "v3-32", None, "TPU-v3"),
    ("xla", "v4-256", None, "TPU-v4"),
    ("xla", "v5litepod-8", None, "TPU-v5e"),
    ("xla", "v5p-8", None, "TPU-v5p"),
    ("xla", "v6e-8", None, "TPU-v6e"),
    # Gaudi: torch.hpu.get_device_name()
    ("hpu", "GAUDI", None, "Gaudi"),
    ("hpu", "GAUDI2", 94.6, "Gaudi2"),
    ("hpu", "GAUDI3", None, "Gaudi3"),
    # Neuron: torch_neuronx's platform target, the EC2 instance type, the driver's device name
    ("neuron", "trn1", None, "Trainium1"),
    ("neuron", "trn1n.32xlarge", None, "Trainium1"),
    ("neuron", "Trainium1", None, "Trainium1"),
    ("neuron", "trn2", None, "Trainium2"),
    ("neuron", "trn2.48xlarge", None, "Trainium2"),
    ("neuron", "inf2.xlarge", None, "Inferentia2"),
    ("neuron", "Inferentia2", None, "Inferentia2"),
]


@pytest.mark.parametrize(("runtime", "name", "memory_gib", "accelerator"), REPORTED)
def test_reported_names_map_to_catalog_accelerators(
    runtime: str, name: str, memory_gib: float | None, accelerator: str,
) -> None:
    assert accelerator_for_device(runtime, name, memory_gib) == accelerator


@pytest.mark.parametrize(("runtime", "name", "memory_gib", "accelerator"), REPORTED)
def test_a_name_resolves_without_memory_unless_it_needs_it(
    runtime: str, name: str, memory_gib: float | None, accelerator: str,
) -> None:
    # stored results carry the name only (``cuda:Tesla T4``); only a board code needs memory
    expected = None if name == "NVIDIA PG509-210" else accelerator
    assert accelerator_for_device(runtime, name) == expected


@pytest.mark.parametrize(("runtime", "name", "memory_gib"), [
    ("cuda", "NVIDIA A800-SXM4-80GB", 79.2),          # China-market A100: not the A100
    ("cuda", "NVIDIA GeForce RTX 3090 Ti", 23.6),     # not the 3090
    ("cuda", "NVIDIA GeForce RTX 4090 D", 23.6),      # cut-down 4090
    ("cuda", "NVIDIA H200 NVL", 139.8),               # PCIe H200, not sold in the catalog
    ("cuda", "NVIDIA GH200 144G HBM3e", 139.8),       # the other GH200: memory rules it out
    ("cuda", "NVIDIA A100-SXM4-40GB", 79.2),          # name and memory disagree
    ("cuda", "NVIDIA PG509-210", None),               # board code, no memory to choose a size
    ("cuda", "Tesla V100-PCIE-16GB", 15.8),           # the catalog sells SXM2 V100s only
    ("cuda", "NVIDIA Graphics Device", 23.6),         # what old drivers call unknown boards
    ("cuda", "TPU v4", None),                         # right name, wrong runtime
    ("xla", "TPU v4 lite", None),                     # v4i, inference only
    ("xla", "TPU7x", None),
    ("xla", "TPU", None),                             # hardware type only
    ("hpu", "hpu", None),
    ("neuron", "inf1.xlarge", None),                  # Inferentia 1, not in the catalog
    ("neuron", "neuron", None),
    ("cpu", "cpu", None),
])
def test_unknown_or_ambiguous_devices_have_no_catalog_name(
    runtime: str, name: str, memory_gib: float | None,
) -> None:
    assert accelerator_for_device(runtime, name, memory_gib) is None


def test_every_accelerator_the_catalog_sells_is_reachable_from_a_reported_name() -> None:
    sold = {offer.accelerator for offer in shipped_catalog().offers}
    reachable = {accelerator for *_, accelerator in REPORTED}
    assert sold - reachable == set(), (
        "add a row to pricing/data/device_names.csv and a reported name to REPORTED")


def test_every_accelerator_in_the_table_is_a_known_accelerator() -> None:
    assert {rule.accelerator for rule in load_device_names()} - set(load_accelerators()) == set()


def test_every_rule_is_sourced_and_dated() -> None:
    for rule in load_device_names():
        assert rule.runtime in RUNTIMES
        assert "seen in" in rule.source or rule.source.startswith(("unverified", "partly")), rule
        assert date(2025, 1, 1) <= rule.captured_at <= date.today()


def test_rules_that_disagree_name_nothing() -> None:
    rules = [_rule("a100", "A100-40GB-SXM", None, 60), _rule("a100", "A100-80GB-SXM", 60, None)]
    assert accelerator_for_device("cuda", "A100", 39.4, rules=rules) == "A100-40GB-SXM"
    assert accelerator_for_device("cuda", "A100", 79.2, rules=rules) == "A100-80GB-SXM"
    assert accelerator_for_device("cuda", "A100", rules=rules) is None


@pytest.mark.parametrize(("row", "problem"), [
    ("tpu,^v4$,,,TPU-v4,seen,2025-03-01", "runtime 'tpu'"),            # not a runtime
    ("xla,^v4($,,,TPU-v4,seen,2025-03-01", "missing"),                  # bad regex
    ("cuda,a100,80,40,A100-80GB-SXM,seen,2025-03-01", "min_memory_gib"),  # min above max
    ("cuda,a100,,,,seen,2025-03-01", "accelerator is empty"),
    ("cuda,a100,,,A100-80GB-SXM,seen,March", "Invalid isoformat"),
])
def test_a_bad_row_names_its_file_and_line(tmp_path: Path, row: str, problem: str) -> None:
    path = tmp_path / "device_names.csv"
    header = "runtime,reported_name_pattern,min_memory_gib,max_memory_gib,accelerator,source,captured_at"
    path.write_text(f"{header}\n{row}\n")
    with pytest.raises(PricingError, match=rf"device_names\.csv:2: bad device-name row .*{problem}"):
        load_device_names(path)


def _rule(pattern: str, accelerator: str, low: float | None, high: float | None) -> DeviceNameRule:
    return DeviceNameRule(runtime="cuda", pattern=re.compile(pattern, re.IGNORECASE),
                          min_memory_gib=low, max_memory_gib=high, accelerator=accelerator,
                          source="test", captured_at=date(2025, 3, 1))
