"""Which launcher probes an offer, and the settings it cannot start without.

The one place that decides: the planner, ``advisor probe``, the quotes and the runtime tables
all ask ``launcher_for_offer``. ``local`` is this machine; an AWS offer goes to ``aws``; a GCP
offer to ``gcp``, or to ``gcp-tpu`` for a TPU VM type; other clouds (Azure) have no launcher.
``REQUIRED_SETTINGS`` names, per launcher, what must be set before anything is launched or
billed, and ``check_settings`` says the first one missing in one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pricing import Cloud, parse_offer_key
from probes.errors import ProbeError

__all__ = ["REQUIRED_SETTINGS", "Setting", "check_settings", "launcher_for_offer",
           "launcher_options"]


@dataclass(frozen=True, slots=True)
class Setting:
    """A setting a launcher cannot start without: ``name`` as the caller's settings key it
    (``aws_bucket``), ``keyword`` the launcher's constructor argument (``bucket``), ``what``
    it is and ``fix`` where to set it (the CLI option and the environment variable)."""

    name: str
    keyword: str
    what: str
    fix: str


_GCP = (
    Setting("gcp_project", "project", "a project", "--gcp-project or set GOOGLE_CLOUD_PROJECT"),
    Setting("gcp_bucket", "bucket", "a GCS bucket for bundles and results",
            "--gcp-bucket or set ADVISOR_GCP_BUCKET"),
)
REQUIRED_SETTINGS: Mapping[str, tuple[Setting, ...]] = {
    "local": (),
    "aws": (Setting("aws_bucket", "bucket", "an S3 bucket for bundles and results",
                    "--aws-bucket or set ADVISOR_AWS_BUCKET"),),
    "gcp": _GCP,
    "gcp-tpu": _GCP,
}


def launcher_for_offer(offer_key: str) -> str | None:
    """The launcher that probes an offer: local, aws, gcp or gcp-tpu; None for other clouds.
    Raises ``pricing.OfferKeyError`` for a key that is not an offer key."""
    ref = parse_offer_key(offer_key)
    if ref.cloud is None:
        return "local"
    return {Cloud.AWS: "aws", Cloud.GCP: "gcp-tpu" if ref.is_tpu else "gcp"}.get(ref.cloud)


def check_settings(launchers: Iterable[str], settings: Mapping[str, str | None]) -> None:
    """ProbeError naming the first setting (by launcher name) that ``settings`` lacks, e.g.
    ``aws probes need an S3 bucket for bundles and results: pass --aws-bucket or set
    ADVISOR_AWS_BUCKET``; nothing for launchers that need none."""
    for name in sorted(set(launchers)):
        for setting in REQUIRED_SETTINGS.get(name, ()):
            if not settings.get(setting.name):
                raise ProbeError(f"{name} probes need {setting.what}: pass {setting.fix}")


def launcher_options(launcher: str, settings: Mapping[str, str | None]) -> dict[str, Any]:
    """The constructor keywords of ``launcher`` from ``settings`` (a missing one as "")."""
    return {s.keyword: settings.get(s.name) or "" for s in REQUIRED_SETTINGS.get(launcher, ())}
