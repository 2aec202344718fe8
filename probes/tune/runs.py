"""Configurations of the step built for the tuner: the model, its step, and its batches.

``open_run`` builds one ``StepConfig`` on a device from a freshly built workload: the step
at its precision, memory format, compiler and cuDNN autotuning, fed either one cached batch
or the user's real loader (rebuilt with other ``num_workers`` / ``pin_memory`` by
``with_loader_settings`` when the configuration says so). ``workload_traits`` tells the knob model what the
workload has. torch is imported lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from probes.devices.seam import Device
from probes.train_step import TrainStep, build_train_step, to_channels_last, to_device
from probes.tune.knobs import LoaderKind, StepConfig, WorkloadTraits
from probes.workload import BuiltWorkload

__all__ = ["BuiltRun", "open_run", "with_loader_settings", "workload_traits"]


@dataclass
class BuiltRun:
    """One built configuration: its step, ``feed()`` giving the next batch on the device,
    and ``make_batch(size)`` giving a synthetic batch of another size (for the batch
    search)."""

    config: StepConfig
    step: TrainStep
    feed: Callable[[], Any]
    make_batch: Callable[[int], Any]


def workload_traits(workload: BuiltWorkload, batch_size: int) -> WorkloadTraits:
    """Whether the model has 2-D/3-D convolutions, and what its ``make_loader`` returns
    (the loader is created, not iterated)."""
    from torch import nn
    from torch.utils.data import DataLoader

    modules = workload.model.modules() if isinstance(workload.model, nn.Module) else ()
    conv = any(isinstance(m, nn.Conv2d | nn.Conv3d) for m in modules)
    if workload.make_loader is None:
        return WorkloadTraits(conv)
    loader = workload.make_loader(batch_size)
    if isinstance(loader, DataLoader):
        return WorkloadTraits(conv, LoaderKind.DATALOADER, "DataLoader", loader.num_workers,
                              loader.pin_memory)
    return WorkloadTraits(conv, LoaderKind.ITERABLE, type(loader).__name__)


def with_loader_settings(loader: Any, *, num_workers: int | None,
                         pin_memory: bool | None) -> Any:
    """The user's DataLoader rebuilt with another ``num_workers`` / ``pin_memory`` (None:
    as it has them); its dataset, batching, sampling and collation are kept."""
    if num_workers is None and pin_memory is None:
        return loader
    from torch.utils.data import DataLoader, IterableDataset

    workers = loader.num_workers if num_workers is None else num_workers
    options: dict[str, Any] = {
        "num_workers": workers, "collate_fn": loader.collate_fn, "timeout": loader.timeout,
        "pin_memory": loader.pin_memory if pin_memory is None else pin_memory,
        "worker_init_fn": loader.worker_init_fn, "generator": loader.generator}
    if workers > 0:
        options.update(prefetch_factor=loader.prefetch_factor or 2,
                       persistent_workers=loader.persistent_workers,
                       multiprocessing_context=loader.multiprocessing_context)
    if isinstance(loader.dataset, IterableDataset):
        options.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
    elif loader.batch_sampler is None:
        options.update(batch_size=None, sampler=loader.sampler)
    else:
        options["batch_sampler"] = loader.batch_sampler
    return DataLoader(loader.dataset, **options)


def open_run(config: StepConfig, workload: BuiltWorkload, device: Device) -> BuiltRun:
    """``config`` built from ``workload`` (its model is changed: build one per run)."""
    step = build_train_step(workload.model, workload.loss_fn, device,
                            precision=config.precision, channels_last=config.channels_last,
                            compiler_backend=config.compiler,
                            cudnn_benchmark=config.cudnn_benchmark)

    def make_batch(size: int) -> Any:
        batch = workload.make_batch(size, device.torch_device)
        return to_channels_last(batch) if config.channels_last else batch

    if config.cached_input:
        cached = make_batch(config.batch_size)
        return BuiltRun(config, step, lambda: cached, make_batch)
    make_loader = workload.make_loader
    assert make_loader is not None  # loader trials are planned only with a loader

    def batches() -> Iterator[Any]:
        while True:  # a new epoch whenever the loader ends
            empty = True
            for batch in with_loader_settings(make_loader(config.batch_size),
                                              num_workers=config.num_workers,
                                              pin_memory=config.pin_memory):
                empty = False
                yield batch
            if empty:
                raise ValueError("make_loader returned a loader without batches")

    source = batches()

    def feed() -> Any:
        batch = to_device(next(source), device.torch_device)
        return to_channels_last(batch) if config.channels_last else batch

    return BuiltRun(config, step, feed, make_batch)
