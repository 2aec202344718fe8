"""Probe harness, launchers (local, AWS, GCP) and the probe result store: the Python API.

    from probes import ProbeStore, run_probes, quote_probe
    print(quote_probe("aws:g5.xlarge:us-east-1", price_usd_per_hour=1.006).text())

``advisor``, ``reports`` and ``cli`` import probes through this face only. The names below
are imported on first use, so ``import probes`` stays fast and never imports torch or a cloud
SDK. Inside the package:

- ``vocabulary``, ``errors``, ``types``, ``workload``, ``models``, ``op_classes``: the shared
  words, the requests and results, what a probe trains, the operator classes;
- ``harness`` (``python -m probes.harness``), ``train_step``, ``steady``, ``stats``,
  ``batch_search``: measuring on the instance;
- ``devices/``: the device seam and the wrong-device checks; ``tune/``: ``advisor probe --tune``;
- ``launchers/``: which launcher serves an offer, quotes and the cost check, and the launchers;
- ``orchestrate``, ``store``, ``urls``, ``findings``, ``result_warnings``: running probes and
  keeping and reading their results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probes._lazy import lazy_exports
from probes.errors import ProbeError

if TYPE_CHECKING:
    from probes.batch_search import search_largest_batch
    from probes.built import BuiltWorkload
    from probes.devices import rechecked, result_accelerator
    from probes.findings import FindingKind, findings_for
    from probes.launchers import Launcher, LaunchHandle, make_launcher
    from probes.launchers.aws import AwsLauncher
    from probes.launchers.choice import check_settings, launcher_for_offer, launcher_options
    from probes.launchers.cost_check import OverProbeBudget, check_cost, fmt_usd_pair, fmt_usd_small
    from probes.launchers.quote import (
        DEFAULT_PROBE_TIME_BOX_S,
        ProbeQuote,
        quote_probe,
        quote_request,
        quote_text,
    )
    from probes.models import BUILTIN_MODELS, ModelOptionError, check_builtin_options
    from probes.op_classes import OpClass, classify_op
    from probes.orchestrate import ProbeEvent, ResultNotStored, check_credentials, run_probes
    from probes.result_warnings import probe_warnings
    from probes.store import ProbeStore, most_trustworthy, stored_results
    from probes.tune import RowKind, RowStatus, StepProfile, TuneReport, TuneRow
    from probes.types import LOCAL_OFFER_KEY, ProbeRequest, ProbeResult, ProbeStatus
    from probes.urls import (
        MASK,
        db_error_line,
        mask_secrets,
        plain_sqlite_file,
        shown_url,
        sqlalchemy_url,
        sqlite_database,
        sqlite_file,
        sqlite_problem,
        url_secrets,
    )
    from probes.vocabulary import ENTRYPOINT_PATTERN, DeviceKind, Precision
    from probes.workload import WorkloadRecipe, build_workload, first_line, import_entrypoint

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_PROBE_TIME_BOX_S",
    "ENTRYPOINT_PATTERN",
    "LOCAL_OFFER_KEY",
    "MASK",
    "AwsLauncher",
    "BuiltWorkload",
    "DeviceKind",
    "FindingKind",
    "LaunchHandle",
    "Launcher",
    "ModelOptionError",
    "OpClass",
    "OverProbeBudget",
    "Precision",
    "ProbeError",
    "ProbeEvent",
    "ProbeQuote",
    "ProbeRequest",
    "ProbeResult",
    "ProbeStatus",
    "ProbeStore",
    "ResultNotStored",
    "RowKind",
    "RowStatus",
    "StepProfile",
    "TuneReport",
    "TuneRow",
    "WorkloadRecipe",
    "build_workload",
    "check_builtin_options",
    "check_cost",
    "check_credentials",
    "check_settings",
    "classify_op",
    "db_error_line",
    "findings_for",
    "first_line",
    "fmt_usd_pair",
    "fmt_usd_small",
    "import_entrypoint",
    "launcher_for_offer",
    "launcher_options",
    "lazy_exports",
    "make_launcher",
    "mask_secrets",
    "most_trustworthy",
    "probe_warnings",
    "quote_probe",
    "quote_request",
    "quote_text",
    "rechecked",
    "result_accelerator",
    "run_probes",
    "search_largest_batch",
    "plain_sqlite_file",
    "shown_url",
    "sqlalchemy_url",
    "sqlite_database",
    "sqlite_file",
    "sqlite_problem",
    "stored_results",
    "url_secrets",
]

_HOME = {
    "search_largest_batch": "batch_search", "BuiltWorkload": "built",
    "rechecked": "devices", "result_accelerator": "devices",
    "FindingKind": "findings", "findings_for": "findings",
    "LaunchHandle": "launchers", "Launcher": "launchers", "make_launcher": "launchers",
    "AwsLauncher": "launchers.aws",
    "check_settings": "launchers.choice", "launcher_for_offer": "launchers.choice",
    "launcher_options": "launchers.choice",
    "OverProbeBudget": "launchers.cost_check", "check_cost": "launchers.cost_check",
    "fmt_usd_pair": "launchers.cost_check", "fmt_usd_small": "launchers.cost_check",
    "DEFAULT_PROBE_TIME_BOX_S": "launchers.quote", "ProbeQuote": "launchers.quote",
    "quote_probe": "launchers.quote", "quote_request": "launchers.quote",
    "quote_text": "launchers.quote",
    "BUILTIN_MODELS": "models", "ModelOptionError": "models", "check_builtin_options": "models",
    "OpClass": "op_classes", "classify_op": "op_classes",
    "ProbeEvent": "orchestrate", "ResultNotStored": "orchestrate", "run_probes": "orchestrate",
    "check_credentials": "orchestrate",
    "probe_warnings": "result_warnings",
    "ProbeStore": "store", "most_trustworthy": "store", "stored_results": "store",
    "RowKind": "tune", "RowStatus": "tune", "StepProfile": "tune", "TuneReport": "tune",
    "TuneRow": "tune",
    "LOCAL_OFFER_KEY": "types", "ProbeRequest": "types", "ProbeResult": "types",
    "ProbeStatus": "types",
    "MASK": "urls", "db_error_line": "urls", "mask_secrets": "urls", "shown_url": "urls",
    "plain_sqlite_file": "urls",
    "sqlalchemy_url": "urls", "sqlite_database": "urls", "sqlite_file": "urls",
    "sqlite_problem": "urls",
    "url_secrets": "urls",
    "ENTRYPOINT_PATTERN": "vocabulary", "DeviceKind": "vocabulary", "Precision": "vocabulary",
    "WorkloadRecipe": "workload", "build_workload": "workload", "first_line": "workload",
    "import_entrypoint": "workload",
}

__getattr__, __dir__ = lazy_exports("probes", _HOME, globals(), __all__)
