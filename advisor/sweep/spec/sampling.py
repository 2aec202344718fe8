"""The Optuna sampler and pruner that sweep.yaml names, seeded so no trial repeats another.

A sampler built once with ``seed`` draws the same sequence in every process that builds it:
a resumed sweep would re-draw the configurations it already paid for, and N workers started
together would draw the same N times. With a seed, the random-number state of every trial is
therefore derived from the seed and the trial's number (``trial_seed``), which the storage
hands out once per study: a resumed sweep continues where it stopped, workers and threads
never share a stream, and a fresh study with the same seed draws the same configurations
(given the same results). The grid sampler keeps the one seed: it walks a grid shuffled by
that seed and picks the point by trial number, so every worker needs the same shuffle.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from advisor.sweep.spec.sweep_spec import PrunerKind, SamplerKind, SweepSpec

__all__ = ["PerTrialSeedSampler", "make_pruner", "make_sampler", "trial_seed"]


def trial_seed(seed: int, number: int) -> int:
    """The seed of trial ``number`` of a sweep seeded with ``seed`` (stable across processes)."""
    digest = hashlib.sha256(f"advisor-sweep:{seed}:{number}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class PerTrialSeedSampler(optuna.samplers.BaseSampler):
    """A sampler that samples each trial with a fresh inner sampler seeded by the trial number.

    ``build(seed)`` makes the inner sampler; it must take everything else it needs from the
    study (TPE, random and CMA-ES do). Thread-safe: trials of one process may run in threads.
    """

    def __init__(self, build: Callable[[int], optuna.samplers.BaseSampler], seed: int) -> None:
        self._build = build
        self._seed = seed
        self._by_number: dict[int, optuna.samplers.BaseSampler] = {}
        self._lock = threading.Lock()

    def _inner(self, trial: FrozenTrial) -> optuna.samplers.BaseSampler:
        with self._lock:
            sampler = self._by_number.get(trial.number)
            if sampler is None:
                sampler = self._build(trial_seed(self._seed, trial.number))
                self._by_number[trial.number] = sampler
            return sampler

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._inner(trial).before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study,
                                    trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._inner(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._inner(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._inner(trial).sample_independent(study, trial, param_name,
                                                     param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self._inner(trial).after_trial(study, trial, state, values)
        with self._lock:
            self._by_number.pop(trial.number, None)

    def reseed_rng(self) -> None:
        """Nothing to do: every trial already has a stream of its own (Optuna calls this for
        ``n_jobs > 1``)."""


def _build(spec: SweepSpec, seed: int | None) -> optuna.samplers.BaseSampler:
    s = spec.sampler
    if s.kind is SamplerKind.RANDOM:
        return optuna.samplers.RandomSampler(seed=seed)
    if s.kind is SamplerKind.CMAES:
        return optuna.samplers.CmaEsSampler(seed=seed, **s.options)
    return optuna.samplers.TPESampler(seed=seed, **s.options)


def make_sampler(spec: SweepSpec) -> optuna.samplers.BaseSampler:
    """The Optuna sampler sweep.yaml names, with its options; seeded per trial when seeded."""
    s = spec.sampler
    if s.kind is SamplerKind.GRID:
        grid = {p.name: p.grid_values() for p in spec.search_space}
        return optuna.samplers.GridSampler(grid, seed=s.seed)
    if s.seed is None:
        return _build(spec, None)
    return PerTrialSeedSampler(lambda seed: _build(spec, seed), s.seed)


def make_pruner(spec: SweepSpec) -> optuna.pruners.BasePruner:
    """The Optuna pruner sweep.yaml names, with its options."""
    kind, options = spec.pruner.kind, dict(spec.pruner.options)
    if kind is PrunerKind.NONE:
        return optuna.pruners.NopPruner()
    if kind is PrunerKind.PERCENTILE:
        return optuna.pruners.PercentilePruner(options.pop("percentile", 25.0), **options)
    if kind is PrunerKind.SUCCESSIVE_HALVING:
        return optuna.pruners.SuccessiveHalvingPruner(**options)
    if kind is PrunerKind.HYPERBAND:
        return optuna.pruners.HyperbandPruner(**options)
    if kind is PrunerKind.WILCOXON:
        return optuna.pruners.WilcoxonPruner(**options)
    return optuna.pruners.MedianPruner(**options)
