"""The knob model: which knobs apply per device kind and model, and the numerics rule."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from probes.tune.knobs import (
    DeviceTraits,
    Knob,
    LoaderKind,
    Precision,
    StepConfig,
    WorkloadTraits,
    combine,
    plan_knobs,
)
from probes.tune.report import RowKind, RowStatus, TuneReport, TuneRow, chosen_settings


@dataclass
class FakeDevice:
    """Shaped like probes.devices.Device as far as the knob model looks."""

    kind: str
    bf16: bool = False
    tf32: bool = False

    def supports_bf16(self) -> bool:
        return self.bf16

    def supports_tf32(self) -> bool:
        return self.tf32


BASE = StepConfig(Precision.FP32, 16)
CONV_WITH_DATALOADER = WorkloadTraits(True, LoaderKind.DATALOADER, "DataLoader", 2, False)


def _plan(device: FakeDevice, workload: WorkloadTraits = CONV_WITH_DATALOADER,
          baseline: StepConfig = BASE) -> tuple[dict[Knob, list[StepConfig]], dict[Knob, str]]:
    plan = plan_knobs(DeviceTraits.of(device), workload, baseline, cpu_count=8)
    trials: dict[Knob, list[StepConfig]] = {}
    for trial in plan.trials:
        trials.setdefault(trial.knob, []).append(trial.config)
    return trials, {s.knob: s.reason for s in plan.skipped}


@pytest.mark.parametrize(("device", "applies", "precisions", "compiler"), [
    # CPU: fp32 only (no native bf16), eager kernels use the memory format, inductor
    (FakeDevice("cpu"), {Knob.INPUT, Knob.MEMORY_FORMAT, Knob.LOADER_WORKERS, Knob.BATCH,
                         Knob.COMPILER}, [], "inductor"),
    # an Ampere-or-newer GPU: tf32, bf16 and fp16; pinned memory helps copies to it
    (FakeDevice("cuda", bf16=True, tf32=True),
     {Knob.INPUT, Knob.PRECISION, Knob.MEMORY_FORMAT, Knob.CUDNN_BENCHMARK, Knob.LOADER_WORKERS,
      Knob.PIN_MEMORY, Knob.BATCH, Knob.COMPILER},
     [Precision.TF32, Precision.BF16, Precision.FP16], "inductor"),
    # a pre-Ampere GPU (V100, T4): fp16 with a loss scaler, no tf32 or bf16
    (FakeDevice("cuda"), {Knob.INPUT, Knob.PRECISION, Knob.MEMORY_FORMAT, Knob.CUDNN_BENCHMARK,
                          Knob.LOADER_WORKERS, Knob.PIN_MEMORY, Knob.BATCH, Knob.COMPILER},
     [Precision.FP16], "inductor"),
    # TPU: bf16, the XLA path of torch.compile, XLA picks memory layouts
    (FakeDevice("xla", bf16=True), {Knob.INPUT, Knob.PRECISION, Knob.LOADER_WORKERS, Knob.BATCH,
                                    Knob.COMPILER}, [Precision.BF16], "openxla"),
    # Gaudi: bf16, its own torch.compile backend, its graph compiler picks layouts
    (FakeDevice("hpu", bf16=True), {Knob.INPUT, Knob.PRECISION, Knob.LOADER_WORKERS, Knob.BATCH,
                                    Knob.COMPILER}, [Precision.BF16], "hpu_backend"),
    # Trainium: bf16 through XLA's lazy tensors, no torch.compile for training
    (FakeDevice("neuron", bf16=True), {Knob.INPUT, Knob.PRECISION, Knob.LOADER_WORKERS,
                                       Knob.BATCH}, [Precision.BF16], None),
])
def test_knobs_per_device_kind(device: FakeDevice, applies: set[Knob],
                               precisions: list[Precision], compiler: str | None) -> None:
    trials, skipped = _plan(device)
    assert set(trials) == applies
    assert set(trials) | set(skipped) == set(Knob)  # every knob is tried or says why not
    assert [c.precision for c in trials.get(Knob.PRECISION, [])] == precisions
    assert [c.compiler for c in trials.get(Knob.COMPILER, [])] == ([compiler] if compiler else [])


def test_a_reduced_precision_baseline_is_tried_against_fp32_on_the_cpu() -> None:
    trials, _ = _plan(FakeDevice("cpu"), baseline=replace(BASE, precision=Precision.BF16))
    assert [c.precision for c in trials[Knob.PRECISION]] == [Precision.FP32]


def test_channels_last_only_for_convolutional_models() -> None:
    trials, skipped = _plan(FakeDevice("cuda", bf16=True, tf32=True),
                            replace(CONV_WITH_DATALOADER, convolutional=False))
    assert Knob.MEMORY_FORMAT not in trials
    assert "no 2-D or 3-D convolutions" in skipped[Knob.MEMORY_FORMAT]


@pytest.mark.parametrize("baseline_on", [False, True])
def test_cudnn_autotuning_is_tried_against_the_baseline_on_gpus_for_conv_models(
        baseline_on: bool) -> None:
    gpu = FakeDevice("cuda", bf16=True, tf32=True)
    trials, _ = _plan(gpu, baseline=replace(BASE, cudnn_benchmark=baseline_on))
    (flipped,) = trials[Knob.CUDNN_BENCHMARK]
    assert flipped.cudnn_benchmark is not baseline_on and flipped.cached_input
    assert ("cudnn.benchmark=True" in flipped.describe()) is not baseline_on
    _, skipped = _plan(gpu, replace(CONV_WITH_DATALOADER, convolutional=False))
    assert "no 2-D or 3-D convolutions (cudnn_benchmark" in skipped[Knob.CUDNN_BENCHMARK]
    for kind in ("cpu", "xla", "hpu", "neuron"):
        _, skipped = _plan(FakeDevice(kind, bf16=True))
        assert "CUDA and ROCm GPUs only" in skipped[Knob.CUDNN_BENCHMARK]


def test_a_configuration_stored_before_cudnn_autotuning_was_a_knob_still_reads() -> None:
    old = {k: v for k, v in BASE.to_dict().items() if k != "cudnn_benchmark"}
    assert StepConfig.from_dict(old) == BASE
    assert "cudnn" not in BASE.describe()  # off (torch's default) goes unsaid


@pytest.mark.parametrize(("loader", "reason"), [
    # a built-in model: no loader at all, so no input knob either
    (WorkloadTraits(True), "gives no make_loader"),
    # a plain generator: it can be compared with cached input, but has no workers to set
    (WorkloadTraits(True, LoaderKind.ITERABLE, "generator"), "returns a generator"),
])
def test_loader_knobs_need_a_real_dataloader(loader: WorkloadTraits, reason: str) -> None:
    trials, skipped = _plan(FakeDevice("cuda", bf16=True), loader)
    assert Knob.LOADER_WORKERS not in trials and Knob.PIN_MEMORY not in trials
    assert reason in skipped[Knob.LOADER_WORKERS]
    assert (Knob.INPUT in trials) is (loader.loader is LoaderKind.ITERABLE)


def test_loader_trials_read_the_loader_and_step_trials_the_cached_batch() -> None:
    trials, _ = _plan(FakeDevice("cuda", bf16=True))
    assert [c.num_workers for c in trials[Knob.LOADER_WORKERS]] == [0, 1, 4, 8]
    assert all(not c.cached_input for k in (Knob.INPUT, Knob.LOADER_WORKERS, Knob.PIN_MEMORY)
               for c in trials[k])
    assert all(c.cached_input for k in (Knob.PRECISION, Knob.BATCH, Knob.COMPILER)
               for c in trials[k])
    assert [c.batch_size for c in trials[Knob.BATCH]] == [32, 64]


def _row(knob: Knob | None, config: StepConfig, sps: float, *, numerics: bool = False,
         kind: RowKind = RowKind.TRIAL) -> TuneRow:
    return TuneRow(kind, knob, config.setting(knob) if knob else "base", config,
                   RowStatus.MEASURED, numerics, samples_per_second=sps, rel_halfwidth=0.01,
                   speedup=sps / 100.0, measured_steps=30)


FASTER = (
    _row(None, BASE, 100.0, kind=RowKind.BASELINE),
    _row(Knob.PRECISION, replace(BASE, precision=Precision.BF16), 200.0, numerics=True),
    _row(Knob.MEMORY_FORMAT, replace(BASE, channels_last=True), 130.0),
    _row(Knob.BATCH, replace(BASE, batch_size=64), 150.0, numerics=True),
    _row(Knob.COMPILER, replace(BASE, compiler="inductor"), 101.0),  # within the noise
)


def test_numerics_changing_settings_are_held_back_without_the_flag() -> None:
    combo = combine(BASE, chosen_settings(FASTER), allow_numerics=False)
    assert combo.config == replace(BASE, channels_last=True)
    assert combo.applied == (Knob.MEMORY_FORMAT,)
    assert set(combo.held_back) == {Knob.PRECISION, Knob.BATCH}
    assert not combo.changes_numerics


def test_numerics_changing_settings_apply_only_when_allowed() -> None:
    combo = combine(BASE, chosen_settings(FASTER), allow_numerics=True)
    assert combo.config == StepConfig(Precision.BF16, 64, channels_last=True)
    assert combo.changes_numerics and combo.held_back == ()


def test_a_gain_within_the_noise_is_not_chosen() -> None:
    assert Knob.COMPILER not in chosen_settings(FASTER)


def test_a_gain_the_machine_made_is_not_chosen() -> None:
    # channels_last beat the first baseline, but the baseline ran as fast after the trials:
    # the machine sped up meanwhile, so the gain is not the knob's.
    again = _row(None, BASE, 135.0, kind=RowKind.RECHECK)
    chosen = chosen_settings((*FASTER, again))
    assert Knob.MEMORY_FORMAT not in chosen and Knob.PRECISION in chosen


def test_held_back_gains_are_named_for_the_convergence_check() -> None:
    report = TuneReport(FASTER, (), allow_numerics=False, time_box_s=60.0, elapsed_s=50.0)
    assert [r.setting for r in report.numerics_gains()] == ["bf16", "batch 64"]
    assert report.tuned(allow_numerics=False) is None  # no combination was measured


def test_batch_reach_is_the_largest_batch_that_ran_and_the_fastest() -> None:
    oom = replace(_row(Knob.BATCH, replace(BASE, batch_size=128), 0.0),
                  status=RowStatus.FAILED, samples_per_second=None)
    report = TuneReport((*FASTER, oom), (), allow_numerics=False, time_box_s=60.0,
                        elapsed_s=50.0)
    assert report.batch_reach() == (64, 64)  # batch 128 failed: not counted
    assert len(report.measured()) == len(FASTER)
    slower = replace(FASTER[3], samples_per_second=90.0)
    report = TuneReport((FASTER[0], slower), (), allow_numerics=False, time_box_s=60.0,
                        elapsed_s=50.0)
    assert report.batch_reach() == (64, BASE.batch_size)
    assert TuneReport((), (), allow_numerics=False, time_box_s=1.0,
                      elapsed_s=1.0).batch_reach() is None


def test_step_shares_add_up_to_one() -> None:
    from probes.tune.profile import StepProfile

    profile = StepProfile("base", 10, input_wait_s=0.1, forward_s=0.3, backward_s=0.5,
                          optimizer_s=0.1, top_operators=())
    assert [(name, round(share, 3)) for name, _, share in profile.shares()] == [
        ("input wait", 0.1), ("forward", 0.3), ("backward", 0.5), ("optimizer", 0.1)]
    idle = replace(profile, input_wait_s=0.0, forward_s=0.0, backward_s=0.0, optimizer_s=0.0)
    assert all(share == 0.0 for _, _, share in idle.shares())
