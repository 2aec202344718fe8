"""The fitted default model: fitted once per process and data directory, each caller its own
copy, and a first run's background fit waited for instead of repeated (without the shipped
model: tests/advisor/test_shipped_artifacts.py has those)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.throughput import model_cache
from advisor.throughput.model_cache import cached_transfer_model, fit_in_background
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()
pytestmark = pytest.mark.usefixtures("no_shipped_artifacts")


def _no_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kw: object) -> TransferModel:
        raise AssertionError("the model was fitted again")

    monkeypatch.setattr(TransferModel, "fit", refuse)


def test_another_data_directory_in_the_same_process_does_not_refit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = cached_transfer_model(SPECS, cache_dir=tmp_path / "a")
    _no_fit(monkeypatch)
    second = cached_transfer_model(SPECS, cache_dir=tmp_path / "b")
    assert second is not first  # a copy: what one caller changes, the other never sees
    assert second.residual_quantiles_ == first.residual_quantiles_
    assert len(list((tmp_path / "b").glob("*.pkl"))) == 1  # for the next process


def test_a_background_fit_is_waited_for_not_repeated(advisor_home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_cache, "_fitted", {})  # as a new process starts
    assert fit_in_background(SPECS)  # another process fits into ADVISOR_HOME's cache
    assert not fit_in_background(SPECS)  # one is enough
    _no_fit(monkeypatch)
    model = cached_transfer_model(SPECS)  # waits for it, then reads its cache file
    assert model.residual_quantiles_
    assert len(list((advisor_home / "cache").glob("throughput-*.pkl"))) == 1
    assert not fit_in_background(SPECS)  # the cache has it now


def test_nothing_is_started_when_the_model_is_at_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    cached_transfer_model(SPECS)
    monkeypatch.setattr(model_cache.subprocess, "Popen", None)  # would fail if called
    assert not fit_in_background(SPECS)
