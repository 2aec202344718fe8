"""The built-in examples' workload features (``examples/resnet50.yaml``, ``examples/bert.yaml``,
...): FLOPs, convolution share and traced operator mix, stored in
``tests/data/builtin_features.json`` so throughput tests need no trace
(``python tests/advisor/test_family_order_throughput.py`` writes it again)."""

from __future__ import annotations

import fcntl
import json
import os
import pickle
from pathlib import Path

import pytest

from advisor.profiling import OpMix
from advisor.spec import Precision
from advisor.throughput import TransferModel, WorkloadFeatures, load_reference
from advisor.throughput.published import load_published
from pricing import load_accelerators

__all__ = ["BERT", "FEATURES_JSON", "RESNET", "anchored_model", "builtin_features"]

FEATURES_JSON = Path(__file__).parent.parent / "data" / "builtin_features.json"


def builtin_features() -> dict[str, WorkloadFeatures]:
    """``example/precision`` (``resnet50/bf16``) -> the example's features at that precision."""
    data = json.loads(FEATURES_JSON.read_text())
    return {key: WorkloadFeatures(
        precision=Precision(item["precision"]), flops_per_sample=item["flops_per_sample"],
        conv_flops_fraction=item["conv_flops_fraction"], params=item["params"],
        name=Path(item["spec"]).stem, op_mix=OpMix.from_dict(item["op_mix"]),
        batch_size_per_device=item["batch_size_per_device"]) for key, item in data.items()}


RESNET, BERT = builtin_features()["resnet50/bf16"], builtin_features()["bert/bf16"]


_anchored: list[TransferModel] = []  # this process's anchored model, once fitted or read


def anchored_model(tmp_path_factory: pytest.TempPathFactory | None = None) -> TransferModel:
    """The default model fitted on the reference rows and anchored to every published row,
    fitted once per test run (tests that re-anchor it do so on a ``copy.copy``). Given
    ``tmp_path_factory`` under pytest-xdist, the first worker to need it fits it and pickles
    it into the run's temporary folder (pytest removes it with old runs); the other workers
    wait for that file and read it instead of fitting again (about 10 s of CPU)."""
    if not _anchored:
        folder = (tmp_path_factory.getbasetemp().parent
                  if tmp_path_factory is not None and os.environ.get("PYTEST_XDIST_WORKER")
                  else None)
        _anchored.append(_fit_or_read(folder) if folder is not None else _fit_anchored())
    return _anchored[0]


def _fit_anchored() -> TransferModel:
    return TransferModel().fit(load_reference(), accelerators=load_accelerators(),
                               published=load_published())


def _fit_or_read(folder: Path) -> TransferModel:
    """The model pickled in ``folder`` by another worker of this run, or fitted now and
    pickled there (under a lock, so one worker fits and the others wait)."""
    path = folder / "anchored-model.pkl"
    with open(folder / "anchored-model.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            model = pickle.loads(path.read_bytes())  # noqa: S301 - written by this run
            assert isinstance(model, TransferModel)
            return model
        model = _fit_anchored()
        partial = path.with_suffix(".tmp")
        partial.write_bytes(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
        partial.replace(path)
        return model
