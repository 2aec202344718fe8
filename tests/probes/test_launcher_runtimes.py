"""The runtime tables: every catalog offer on AWS and GCP boots software for its accelerator,
unknown families are named, and each row says where its facts come from."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from pricing import Cloud, shipped_catalog
from probes.errors import ProbeError
from probes.launchers import LaunchFailed
from probes.launchers.runtimes import (
    AWS_RUNTIMES,
    GCP_GPU_RUNTIMES,
    GCP_TPU_RUNTIMES,
    RUNTIME_TABLES,
    TORCH_XLA_VERSION,
    ImageLookup,
    Runtime,
    RuntimeTable,
    aws_family,
    gcp_family,
    runtime_for_offer,
    tpu_family,
)
from probes.vocabulary import DeviceKind

# accelerator vendor (pricing/data accelerator specs) -> the device its software drives
VENDOR_DEVICE = {
    "NVIDIA": DeviceKind.CUDA,
    "Google": DeviceKind.XLA,
    "Habana/Intel": DeviceKind.HPU,
    "AWS": DeviceKind.NEURON,
}
CATALOG = shipped_catalog()
# one offer per AWS / GCP instance type the catalog sells (the runtime depends on the type only)
CLOUD_OFFERS = sorted({(o.cloud, o.instance_type): (o.key, o.accelerator) for o in CATALOG.offers
                       if o.cloud in (Cloud.AWS, Cloud.GCP)}.values())


def test_the_catalog_has_offers_of_every_vendor() -> None:
    vendors = {CATALOG.accelerator(accelerator).vendor for _, accelerator in CLOUD_OFFERS}
    assert vendors == set(VENDOR_DEVICE)


@pytest.mark.parametrize(("offer_key", "accelerator"), CLOUD_OFFERS,
                         ids=[key for key, _ in CLOUD_OFFERS])
def test_every_catalog_offer_boots_software_for_its_accelerator(offer_key: str,
                                                                accelerator: str) -> None:
    runtime = runtime_for_offer(offer_key)
    assert runtime.device is VENDOR_DEVICE[CATALOG.accelerator(accelerator).vendor]


@pytest.mark.parametrize(("family_of", "instance_type", "family"), [
    (aws_family, "p4d.24xlarge", "p4d"),
    (aws_family, "trn1n.32xlarge", "trn1n"),          # not trn1
    (gcp_family, "a3-highgpu-8g", "a3"),
    (gcp_family, "n1-standard-8+1xT4", "n1+T4"),      # guest GPU is part of the family
    (gcp_family, "n1-highmem-16+4xv100", "n1+V100"),  # GPU name case does not matter
    (gcp_family, "n1-standard-8", "n1"),              # no GPU: a family no table has
    (tpu_family, "tpu-v5litepod-8", "v5litepod"),     # offer instance type
    (tpu_family, "v6e-256", "v6e"),                   # TPU accelerator type
])
def test_family_of_an_instance_type(family_of: Callable[[str], str], instance_type: str,
                                    family: str) -> None:
    assert family_of(instance_type) == family


@pytest.mark.parametrize(("offer_key", "family"), [
    ("aws:g5g.xlarge:us-east-1", "g5g"),              # Graviton + T4G: the x86 DLAMI cannot boot
    ("aws:g4ad.xlarge:us-east-1", "g4ad"),            # AMD Radeon, not NVIDIA
    ("gcp:n1-standard-8:us-central1", "n1"),          # n1 without a guest GPU
    ("gcp:tpu-v7-8:us-central1", "v7"),               # a TPU generation the table lacks
])
def test_unknown_family_names_itself_and_the_known_ones(offer_key: str, family: str) -> None:
    with pytest.raises(LaunchFailed, match=rf"no runtime for instance family '{family}'; known "
                                           r"families are [A-Za-z0-9+, ]+\(add a row"):
        runtime_for_offer(offer_key)


def test_local_offer_has_no_cloud_runtime() -> None:
    with pytest.raises(LaunchFailed, match="no cloud runtime table for launcher 'local'"):
        runtime_for_offer("local")


@pytest.mark.parametrize("table", list(RUNTIME_TABLES.values()), ids=list(RUNTIME_TABLES))
def test_every_row_says_where_its_facts_come_from(table: RuntimeTable) -> None:
    rows = table.by_family.values()
    assert all(len(row.source) > 40 for row in rows)


@pytest.mark.parametrize(("table", "lookups"), [
    (AWS_RUNTIMES, {ImageLookup.SSM_PARAMETER, ImageLookup.AMI_NAME}),   # Habana: by AMI name
    (GCP_GPU_RUNTIMES, {ImageLookup.GCE_IMAGE}),
    (GCP_TPU_RUNTIMES, {ImageLookup.TPU_RUNTIME}),
])
def test_each_table_names_images_the_way_its_cloud_finds_them(table: RuntimeTable,
                                                              lookups: set[ImageLookup]) -> None:
    assert {row.lookup for row in table.by_family.values()} == lookups


def test_tpu_setup_installs_torch_and_torch_xla_pinned_to_one_release() -> None:
    for row in GCP_TPU_RUNTIMES.by_family.values():
        setup = "\n".join(row.setup)
        assert re.search(rf"'torch=={re.escape(TORCH_XLA_VERSION)}'", setup)
        assert re.search(rf"'torch_xla\[tpu\]=={re.escape(TORCH_XLA_VERSION)}'", setup)
        assert "https://storage.googleapis.com/libtpu-releases/index.html" in setup


def test_with_images_renames_only_the_given_images_and_sets_the_owner() -> None:
    neuron = AWS_RUNTIMES.for_instance("trn1.2xlarge").image
    renamed = AWS_RUNTIMES.with_images({neuron: "/test/neuron"}, owner="self")
    assert renamed.for_instance("trn2.48xlarge").image == "/test/neuron"
    assert renamed.for_instance("g5.xlarge") == AWS_RUNTIMES.for_instance("g5.xlarge")
    assert renamed.for_instance("dl1.24xlarge").owner == "self"
    assert AWS_RUNTIMES.for_instance("trn1.2xlarge").image == neuron    # the table is unchanged


@pytest.mark.parametrize(("fields", "message"), [
    ({"python": " "}, "Runtime.python must not be empty"),
    ({"lookup": ImageLookup.AMI_NAME}, "owner is required for an AMI name lookup"),
])
def test_runtime_rejects_incomplete_rows(fields: dict[str, object], message: str) -> None:
    row: dict[str, object] = {"image": "img", "python": "py", "device": DeviceKind.CUDA,
                              "source": "test", **fields}
    with pytest.raises(ProbeError, match=message):
        Runtime(**row)  # type: ignore[arg-type]


def test_every_runtime_device_is_one_the_harness_can_open() -> None:
    from probes.devices import DEVICE_KINDS

    assert {str(kind) for kind in DeviceKind} <= set(DEVICE_KINDS)


@pytest.mark.parametrize(("table", "family"), [
    (AWS_RUNTIMES, "g5"),          # the GPU DLAMI
    (GCP_GPU_RUNTIMES, "a3"),      # the Deep Learning VM GPU image
])
def test_gpu_images_install_the_nvml_binding_for_utilisation(table: RuntimeTable,
                                                            family: str) -> None:
    runtime = table.by_family[family]
    assert any("nvidia-ml-py" in line and runtime.python in line for line in runtime.setup)
