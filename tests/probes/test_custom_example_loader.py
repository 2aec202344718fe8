"""The custom example's real input pipeline: a DataLoader over shard files on disk, built
lazily, and the harness's input check measured on it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from probe_helpers import FakeClock

from advisor.profiling import recipe_for
from advisor.spec import load_workload_spec
from probes.devices import CpuDevice
from probes.harness import run_probe
from probes.types import ProbeRequest, ProbeStatus
from probes.workload import BuiltWorkload, WorkloadRecipe, build_workload

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom" / "model.yaml"
_SMALL = {"vocab": 500, "embed_dim": 16, "channels": 16, "seq_len": 24,
          "dataset_samples": 256, "loader_workers": 2}


@pytest.fixture(autouse=True)
def _forget_my_model() -> Iterator[None]:
    """Each test imports the example afresh (it is imported as the top-level ``my_model``)."""
    yield
    sys.modules.pop("my_model", None)


def _recipe(data_dir: Path, batch_size: int = 8, **options: Any) -> WorkloadRecipe:
    """The example's recipe as advisor builds it from model.yaml, with small options."""
    recipe = recipe_for(load_workload_spec(EXAMPLE), samples_per_device=batch_size)
    return replace(recipe, precision="fp32", options={
        **recipe.options, **_SMALL, "data_dir": str(data_dir), **options})


def _built(data_dir: Path, **options: Any) -> BuiltWorkload:
    return build_workload(_recipe(data_dir, **options))


def test_building_on_meta_writes_no_data(tmp_path: Path) -> None:
    with torch.device("meta"):
        built = _built(tmp_path / "data")
    assert callable(built.make_loader)
    assert not (tmp_path / "data").exists()


def test_loader_is_a_dataloader_over_shard_files(tmp_path: Path) -> None:
    built = _built(tmp_path / "data")
    assert built.make_loader is not None
    loader = built.make_loader(8)
    assert isinstance(loader, torch.utils.data.DataLoader)
    assert loader.num_workers == 2 and loader.drop_last
    assert len(list((tmp_path / "data").rglob("shard-*.txt"))) >= 1


def test_loader_batches_match_make_batch_and_train(tmp_path: Path) -> None:
    built = _built(tmp_path / "data", loader_workers=0)
    assert built.make_loader is not None
    batches = list(built.make_loader(8))
    assert len(batches) == 256 // 8
    made = built.make_batch(8, "cpu")
    for loaded, fresh in zip(batches[0], made, strict=True):
        assert loaded.shape == fresh.shape and loaded.dtype == fresh.dtype
        assert loaded.device.type == "cpu"
    ids, labels = batches[0]
    assert int(ids.min()) >= 0 and int(ids.max()) < _SMALL["vocab"]
    assert int(labels.min()) >= 0 and int(labels.max()) < 4
    assert torch.isfinite(built.loss_fn(built.model, batches[0]))


def test_data_is_written_once_and_reused(tmp_path: Path) -> None:
    built = _built(tmp_path / "data", loader_workers=0)
    assert built.make_loader is not None
    built.make_loader(8)
    (shard, *_) = sorted((tmp_path / "data").rglob("shard-*.txt"))
    before = shard.stat().st_mtime_ns
    built.make_loader(16)
    assert shard.stat().st_mtime_ns == before
    assert not list((tmp_path / "data").glob("*.partial-*"))  # no staging folder left behind


def test_a_batch_larger_than_the_data_set_says_what_to_change(tmp_path: Path) -> None:
    built = _built(tmp_path / "data", loader_workers=0)
    assert built.make_loader is not None
    with pytest.raises(ValueError, match=r"dataset_samples \(256\) is smaller than one batch"):
        built.make_loader(512)


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One intra-op thread: on a busy shared CPU, threads waiting for each other make a step
    100x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_torch_thread")
def test_harness_measures_the_input_ratio_on_the_real_loader(tmp_path: Path) -> None:
    # The loader and the steps are real; the clock is fake (each read 5 ms) so that the phases
    # do not depend on how busy this machine's CPU is.
    workload = _built(tmp_path / "data")
    real_loader = workload.make_loader
    assert real_loader is not None
    served: list[int] = []

    def counting_loader(batch_size: int) -> Iterator[Any]:
        for batch in real_loader(batch_size):
            served.append(len(batch[0]))
            yield batch

    workload.make_loader = counting_loader
    request = ProbeRequest(probe_id="custom", offer_key="local",
                           recipe=_recipe(tmp_path / "data"), workload_fingerprint="fp-custom",
                           time_box_s=600.0)
    result = run_probe(request, workload=workload, device=CpuDevice(),
                       clock=FakeClock(tick=0.005))
    assert result.status is ProbeStatus.OK, result.error
    assert result.input_bound_ratio is not None and result.input_bound_ratio > 0
    assert len(served) >= 3 and set(served) == {8}
