"""Artifact cleanup: the safety rule (property test) and the filesystem, S3 and GCS stores."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.trial import TrialState
from sweep_helpers import write_sweep

from advisor.sweep.accounting.records import ARTIFACT_ERROR_ATTR
from advisor.sweep.run.artifacts import open_artifact_store
from advisor.sweep.run.cleanup import (
    TrialArtifacts,
    best_trial_numbers,
    bytes_cleaned,
    cleanup_study,
    plan_cleanup,
    trial_artifacts,
)
from advisor.sweep.run.runner import run_worker
from advisor.sweep.spec import CleanupSpec, CleanupState, Direction, load_sweep_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)

_states = st.sampled_from([TrialState.RUNNING, TrialState.WAITING, TrialState.COMPLETE,
                           TrialState.PRUNED, TrialState.FAIL])


@st.composite
def _trials(draw: st.DrawFn) -> list[TrialArtifacts]:
    out = []
    for number in range(draw(st.integers(0, 12))):
        state = draw(_states)
        value = draw(st.floats(-10, 10)) if state is TrialState.COMPLETE else None
        ids = tuple(f"a{number}-{i}" for i in range(draw(st.integers(0, 2))))
        out.append(TrialArtifacts(number, state, value, ids))
    return out


@settings(max_examples=300, deadline=None)
@given(trials=_trials(), keep=st.integers(0, 4),
       states=st.sets(st.sampled_from(list(CleanupState))),
       direction=st.sampled_from(list(Direction)))
def test_cleanup_never_touches_running_or_best_k(trials: list[TrialArtifacts], keep: int,
                                                 states: set[CleanupState],
                                                 direction: Direction) -> None:
    policy = CleanupSpec(keep_best=keep, states=tuple(states))
    plan = plan_cleanup(trials, policy, direction)
    done = sorted((t for t in trials if t.state is TrialState.COMPLETE),
                  key=lambda t: t.value if direction is Direction.MINIMIZE else -t.value)  # type: ignore[arg-type,operator]
    best_values = [t.value for t in done[:keep]]
    for trial, artifact_id in plan:
        assert trial.state.is_finished()
        assert artifact_id in trial.artifact_ids
        if trial.state is TrialState.COMPLETE:
            assert CleanupState.COMPLETED in states
            assert trial.number not in best_trial_numbers(trials, keep, direction)
            # a strictly better trial than every kept one cannot be deleted
            if len(best_values) == keep and keep:
                worst_kept = max(best_values) if direction is Direction.MINIMIZE else min(
                    best_values)
                better = (trial.value < worst_kept if direction is Direction.MINIMIZE  # type: ignore[operator]
                          else trial.value > worst_kept)  # type: ignore[operator]
                assert not better
            elif keep:
                pytest.fail("deleted a completed trial while fewer than K completed")


def test_sweep_deletes_pruned_artifacts_and_keeps_best_k(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, pruner={"type": "median", "n_startup_trials": 2},
                       budget={"max_trials": 12}, artifacts="arts",
                       cleanup={"keep_best": 2, "states": ["pruned", "completed"]})
    run_worker(load_sweep_spec(path))
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path / 'sweep.db'}")
    left = {p.name for p in (tmp_path / "arts").iterdir()}
    kept = {a for t in study.trials for a in trial_artifacts(t).artifact_ids if a in left}
    best = {t.number for t in sorted(
        (t for t in study.trials if t.state is TrialState.COMPLETE), key=lambda t: t.value)[:2]}
    assert {n for t in study.trials if t.number in best
            for n in trial_artifacts(t).artifact_ids} == kept == left
    assert any(t.state is TrialState.PRUNED for t in study.trials)
    assert bytes_cleaned(study) > 0
    # nothing is left to clean, and a second pass frees nothing
    store = open_artifact_store(str(tmp_path / "arts"))
    assert cleanup_study(study, store, CleanupSpec(2, (CleanupState.PRUNED,))).bytes_freed == 0


class _FailingStore:
    def write(self, artifact_id: str, content_body: Any) -> None:
        raise OSError(28, "No space left on device")


def test_failed_upload_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, artifacts="arts", budget={"max_trials": 3})
    store = open_artifact_store(str(tmp_path / "arts"))
    store.inner = _FailingStore()
    run_worker(load_sweep_spec(path), artifact_store=store)
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path / 'sweep.db'}")
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    assert all("No space left" in t.user_attrs[ARTIFACT_ERROR_ATTR] for t in study.trials)


def _study_with_artifacts(store: Any, values: list[float | None]) -> optuna.Study:
    study = optuna.create_study(study_name="s", storage="sqlite:///:memory:")
    for value in values:
        trial = study.ask()
        trial.suggest_float("x", 0, 1)
        artifact_id = f"id-{trial.number}"
        study._storage.set_trial_system_attr(  # what optuna.artifacts.upload_artifact records
            trial._trial_id, f"artifacts:{artifact_id}",
            f'{{"artifact_id": "{artifact_id}", "filename": "m{trial.number}.pt"}}')
        store.write(artifact_id, io.BytesIO(b"x" * (100 + trial.number)))
        if value is None:
            study.tell(trial, state=TrialState.PRUNED)
        else:
            study.tell(trial, value)
    return study


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_s3_cleanup_under_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    from moto import mock_aws

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="sweeps")
        store = open_artifact_store("s3://sweeps/runs/a", s3_client=client)
        study = _study_with_artifacts(store, [1.0, None, 3.0, None, 0.5])
        dry = cleanup_study(study, store, CleanupSpec(1, (CleanupState.PRUNED,
                                                          CleanupState.COMPLETED)), dry_run=True)
        assert sorted(d.trial_number for d in dry.deleted) == [0, 1, 2, 3]
        assert len(client.list_objects_v2(Bucket="sweeps")["Contents"]) == 5
        report = cleanup_study(study, store, CleanupSpec(1, (CleanupState.PRUNED,
                                                             CleanupState.COMPLETED)))
        keys = [o["Key"] for o in client.list_objects_v2(Bucket="sweeps")["Contents"]]
        assert keys == ["runs/a/id-4"]  # the best trial (0.5) only
        assert report.bytes_freed == 100 + 101 + 102 + 103
        assert bytes_cleaned(study) == report.bytes_freed


class _FakeBlob:
    def __init__(self, bucket: _FakeBucket, name: str) -> None:
        self.bucket, self.name = bucket, name

    @property
    def size(self) -> int:
        return len(self.bucket.objects[self.name])

    def upload_from_string(self, data: bytes) -> None:
        self.bucket.objects[self.name] = data

    def download_as_bytes(self) -> bytes:
        return self.bucket.objects[self.name]


class _FakeBucket:
    """The subset of google.cloud.storage.Bucket that Optuna's GCSArtifactStore uses."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def blob(self, name: str) -> _FakeBlob:
        return _FakeBlob(self, name)

    def get_blob(self, name: str) -> _FakeBlob | None:
        return _FakeBlob(self, name) if name in self.objects else None

    def delete_blob(self, name: str) -> None:
        from google.api_core.exceptions import NotFound

        if name not in self.objects:
            raise NotFound(name)
        del self.objects[name]


class _FakeClient:
    def __init__(self) -> None:
        self.buckets: dict[str, _FakeBucket] = {}

    def bucket(self, name: str) -> _FakeBucket:
        return self.buckets.setdefault(name, _FakeBucket())


def test_gcs_cleanup_against_a_fake_client() -> None:
    client = _FakeClient()
    store = open_artifact_store("gs://sweeps/x", gcs_client=client)
    study = _study_with_artifacts(store, [2.0, None, 1.0])
    store.write("orphan", io.BytesIO(b"unrelated"))
    report = cleanup_study(study, store, CleanupSpec(1, (CleanupState.PRUNED,)))
    assert [d.trial_number for d in report.deleted] == [1]
    assert sorted(client.buckets["sweeps"].objects) == ["x/id-0", "x/id-2", "x/orphan"]
    assert report.bytes_freed == 101
