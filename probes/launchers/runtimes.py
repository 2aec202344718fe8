"""Which software a probe instance boots, per instance family: image, interpreter, setup, device.

One table per launcher (``aws``, ``gcp``, ``gcp-tpu``), keyed by instance family (``p4d``,
``trn1``, ``a2``, ``n1+T4``, ``v5litepod``). A family missing from its table is a
``LaunchFailed`` that names it and the known ones, never a silent fall back to a GPU image.
Every row carries ``source``: where the fact comes from, and ``unverified: ...`` where it could
not be checked. Tests swap images for their own (moto reserves ``/aws/service/...``) with
``RuntimeTable.with_images``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pricing import parse_offer_key
from probes.errors import ProbeError
from probes.launchers.base import LaunchFailed
from probes.launchers.choice import launcher_for_offer
from probes.vocabulary import DeviceKind

__all__ = [
    "AWS_RUNTIMES",
    "GCP_GPU_RUNTIMES",
    "GCP_TPU_RUNTIMES",
    "RUNTIME_TABLES",
    "TORCH_XLA_VERSION",
    "ImageLookup",
    "Runtime",
    "RuntimeTable",
    "aws_family",
    "gcp_family",
    "runtime_for_offer",
    "tpu_family",
]

TORCH_XLA_VERSION = "2.7.0"   # torch and torch_xla[tpu] are pinned to the same release


class ImageLookup(enum.StrEnum):
    """How ``Runtime.image`` names the image."""

    SSM_PARAMETER = "ssm-parameter"   # AWS: a public SSM parameter whose value is the AMI id
    AMI_NAME = "ami-name"             # AWS: newest AMI of ``owner`` whose name matches
    GCE_IMAGE = "gce-image"           # GCP: an image or image family path
    TPU_RUNTIME = "tpu-runtime"       # GCP: a TPU VM software (runtime) version


@dataclass(frozen=True)
class Runtime:
    """The software a probe boots: ``image`` (found through ``lookup``; ``owner`` only for
    AMI_NAME), ``python`` (path or name of the interpreter with the framework), ``setup``
    (bash lines run before the harness, in its log), ``device`` for the harness, and
    ``source`` (where these facts come from; ``unverified: ...`` where unchecked)."""

    image: str
    python: str
    device: DeviceKind
    source: str
    setup: tuple[str, ...] = ()
    lookup: ImageLookup = ImageLookup.SSM_PARAMETER
    owner: str = ""

    def __post_init__(self) -> None:
        for name in ("image", "python", "source"):
            if not getattr(self, name).strip():
                raise ProbeError(f"Runtime.{name} must not be empty")
        if self.lookup is ImageLookup.AMI_NAME and not self.owner:
            raise ProbeError(f"Runtime {self.image!r}: owner is required for an AMI name "
                             "lookup (an account id, 'amazon' or 'self')")


@dataclass(frozen=True)
class RuntimeTable:
    """The runtimes one launcher (``label``) knows, by instance family (``family`` maps an
    instance or accelerator type to its family)."""

    label: str
    family: Callable[[str], str]
    by_family: Mapping[str, Runtime] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_family", MappingProxyType(dict(self.by_family)))

    def for_instance(self, instance_type: str) -> Runtime:
        """The runtime of ``instance_type``'s family; LaunchFailed names the unknown family."""
        family = self.family(instance_type)
        if family not in self.by_family:
            raise LaunchFailed(
                f"{self.label} {instance_type}: no runtime for instance family {family!r}; known "
                f"families are {', '.join(sorted(self.by_family))} (add a row to "
                "probes/launchers/runtimes.py)")
        return self.by_family[family]

    def with_images(self, images: Mapping[str, str], *, owner: str | None = None) -> RuntimeTable:
        """A copy whose images are renamed through ``images`` (others kept); ``owner``
        replaces the owner of AMI name lookups. For tests and private mirrors."""
        def renamed(runtime: Runtime) -> Runtime:
            new_owner = owner if owner and runtime.lookup is ImageLookup.AMI_NAME else runtime.owner
            return replace(runtime, image=images.get(runtime.image, runtime.image), owner=new_owner)
        return replace(self, by_family={k: renamed(v) for k, v in self.by_family.items()})

    def images(self) -> set[str]:
        """Every image the table names."""
        return {runtime.image for runtime in self.by_family.values()}


def aws_family(instance_type: str) -> str:
    """``p4d.24xlarge`` -> ``p4d``."""
    return instance_type.split(".", 1)[0]


def gcp_family(instance_type: str) -> str:
    """``a2-highgpu-1g`` -> ``a2``; ``n1-standard-8+1xT4`` -> ``n1+T4`` (guest GPU named)."""
    series = instance_type.split("-", 1)[0]
    guest = re.search(r"\+\d+x([A-Za-z0-9]+)$", instance_type)
    return f"{series}+{guest.group(1).upper()}" if guest else series


def tpu_family(accelerator_type: str) -> str:
    """``tpu-v5litepod-8`` or ``v5litepod-8`` -> ``v5litepod``."""
    return accelerator_type.removeprefix("tpu-").rsplit("-", 1)[0]


def _nvml_install(python: str) -> str:
    """The setup line that brings NVML's Python binding (GPU utilisation for the harness)."""
    return f"{python} -m pip install -q nvidia-ml-py"


# -- AWS ----------------------------------------------------------------------------------
_NVIDIA_DLAMI = Runtime(
    image="/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.6-ubuntu-22.04/"
          "latest/ami-id",
    python="/opt/pytorch/bin/python", device=DeviceKind.CUDA,
    setup=(_nvml_install("/opt/pytorch/bin/python"),),
    source="AWS DLAMI release notes, 'Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.6.0 "
           "(Ubuntu 22.04)': python_location /opt/pytorch/bin/python, supported G4dn, G5, G6, "
           "Gr6, G6e, P4, P4de, P5, P5e, P5en; parameter name per docs.aws.amazon.com/dlami/"
           "latest/devguide/find-dlami-id.html (PyTorch 2.6 patch support ended 2026-01-29)")
_NVIDIA_DLAMI_P3 = replace(_NVIDIA_DLAMI, source=(
    "unverified: the PyTorch DLAMI release notes do not list P3/P3dn (V100); only the Base "
    "Proprietary Nvidia Driver AMI (Amazon Linux 2) listed them, without PyTorch"))
_NEURON_VENV = "/opt/aws_neuronx_venv_pytorch_2_9"
_NEURON_DLAMI = Runtime(
    image="/aws/service/neuron/dlami/pytorch-2.9/ubuntu-24.04/latest/image_id",
    python=f"{_NEURON_VENV}/bin/python", device=DeviceKind.NEURON,
    setup=(f"source {_NEURON_VENV}/bin/activate",),   # neuronx-cc must be on PATH
    source="Neuron DLAMI user guide (aws-neuron/aws-neuron-sdk dlami/index.rst): 'Deep Learning "
           "AMI Neuron PyTorch 2.9 (Ubuntu 24.04)', SSM prefix /aws/service/neuron/dlami/"
           "pytorch-2.9/ubuntu-24.04 + /latest/image_id, venv /opt/aws_neuronx_venv_pytorch_2_9 "
           "(torch-neuronx); supports Inf2, Trn1, Trn1n, Trn2, Trn3")
_HABANA_DLAMI = Runtime(
    image="Deep Learning AMI Habana PyTorch * SynapseAI * (Ubuntu 20.04) *",
    lookup=ImageLookup.AMI_NAME, owner="amazon",
    python="/usr/bin/python3.8", device=DeviceKind.HPU,
    source="unverified: no public SSM parameter found for a Habana DLAMI; AMI names 'Deep "
           "Learning AMI Habana PyTorch <v> SynapseAI <v> (Ubuntu 20.04) <date>' by amazon appear "
           "in public packer/test configs; docs.habana.ai AWS_User_Guides/DLAMI.html: PyTorch is "
           "pre-installed, Python 3.8 on Ubuntu 20.04. Not checked that such an AMI still launches")

AWS_RUNTIMES = RuntimeTable("aws", aws_family, {
    **dict.fromkeys(("g4dn", "g5", "g6", "g6e", "gr6", "p4d", "p4de", "p5", "p5e", "p5en"),
                    _NVIDIA_DLAMI),
    **dict.fromkeys(("p3", "p3dn"), _NVIDIA_DLAMI_P3),
    **dict.fromkeys(("trn1", "trn1n", "trn2", "inf2"), _NEURON_DLAMI),
    "dl1": _HABANA_DLAMI,
})

# -- GCP GPU VMs --------------------------------------------------------------------------
_DLVM = Runtime(
    image="projects/deeplearning-platform-release/global/images/family/"
          "pytorch-2-7-cu128-ubuntu-2204-nvidia-570",
    lookup=ImageLookup.GCE_IMAGE, python="/opt/conda/bin/python", device=DeviceKind.CUDA,
    setup=(_nvml_install("/opt/conda/bin/python"),),
    source="unverified: Deep Learning VM family pytorch-2-7-cu128-ubuntu-2204-nvidia-570 seen in "
           "public gcloud/Terraform configs (2025-2026), not in Google's DLVM docs; /opt/conda/"
           "bin/python is the older DLVM interpreter (the boot script falls back to python3)")
_DLVM_P100 = replace(_DLVM, source=_DLVM.source + "; P100 (sm_60) kernels in the cu128 torch "
                     "build are unverified too")

GCP_GPU_RUNTIMES = RuntimeTable("gcp", gcp_family, {
    **dict.fromkeys(("a2", "a3", "g2", "n1+T4", "n1+V100"), _DLVM),
    "n1+P100": _DLVM_P100,
})

# -- GCP TPU VMs --------------------------------------------------------------------------
_LIBTPU_LINKS = ("-f https://storage.googleapis.com/libtpu-releases/index.html "
                 "-f https://storage.googleapis.com/libtpu-wheels/index.html")
_TPU_SETUP = (
    f"python3 -m pip install --quiet 'torch=={TORCH_XLA_VERSION}' "
    "--index-url https://download.pytorch.org/whl/cpu",
    f"python3 -m pip install --quiet 'torch_xla[tpu]=={TORCH_XLA_VERSION}' {_LIBTPU_LINKS}",
    "export PJRT_DEVICE=TPU",
)
_TPU_SOURCE = ("cloud.google.com/tpu/docs/runtimes (v6e: v2-alpha-tpuv6e, v5p: v2-alpha-tpuv5, "
               "v5e: v2-alpha-tpuv5-lite, v4 and older: tpu-ubuntu2204-base); install per "
               "pytorch/xla README: pip install torch==2.7.0 'torch_xla[tpu]==2.7.0' -f "
               "https://storage.googleapis.com/libtpu-releases/index.html (torch taken from the "
               "CPU wheel index here, to skip the CUDA libraries; not tried on a TPU VM)")


def _tpu(runtime_version: str) -> Runtime:
    return Runtime(image=runtime_version, lookup=ImageLookup.TPU_RUNTIME, python="python3",
                   device=DeviceKind.XLA, setup=_TPU_SETUP, source=_TPU_SOURCE)


GCP_TPU_RUNTIMES = RuntimeTable("gcp-tpu", tpu_family, {
    **dict.fromkeys(("v2", "v3", "v4"), _tpu("tpu-ubuntu2204-base")),
    "v5litepod": _tpu("v2-alpha-tpuv5-lite"),
    "v5p": _tpu("v2-alpha-tpuv5"),
    "v6e": _tpu("v2-alpha-tpuv6e"),
})

# launcher name -> its table
RUNTIME_TABLES: Mapping[str, RuntimeTable] = MappingProxyType({
    "aws": AWS_RUNTIMES, "gcp": GCP_GPU_RUNTIMES, "gcp-tpu": GCP_TPU_RUNTIMES})


def runtime_for_offer(offer_key: str) -> Runtime:
    """The runtime a cloud offer (``aws:trn1.2xlarge:us-east-1``) boots; LaunchFailed for an
    unknown family or an offer no cloud launcher runs (``local``)."""
    ref = parse_offer_key(offer_key)
    launcher = launcher_for_offer(offer_key) or str(ref.cloud)
    if launcher not in RUNTIME_TABLES:
        raise LaunchFailed(f"offer {offer_key!r}: no cloud runtime table for launcher "
                           f"{launcher!r}; known are {', '.join(sorted(RUNTIME_TABLES))}")
    return RUNTIME_TABLES[launcher].for_instance(ref.instance_type)
