"""Artifact stores of a sweep: Optuna's filesystem, S3 (boto3) and GCS stores behind one URL.

``open_artifact_store("runs/")``, ``("s3://bucket/prefix")`` or ``("gs://bucket/prefix")``
returns a store that also knows each artifact's size, so cleanup can report bytes freed.
Objectives save files with ``advisor.sweep.upload_artifact(trial, path)``; an upload that
fails is logged and recorded on the trial, and the trial goes on. ``optuna.artifacts`` is
imported on first use: it imports the S3 and GCS clients (about 0.4 s), which ``advisor sweep
status`` and a sweep with no artifacts never need.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

import optuna

from advisor.errors import AdvisorError
from advisor.sweep.accounting.records import read_settings, record_artifact_error

__all__ = [
    "SweepArtifactStore",
    "bind_store",
    "open_artifact_store",
    "store_errors",
    "upload_artifact",
]

log = logging.getLogger("advisor.sweep")

_bound: dict[str, SweepArtifactStore] = {}
_bound_lock = threading.Lock()


def store_errors() -> tuple[type[BaseException], ...]:
    """Exceptions an artifact store may raise (OS, botocore, google.api_core), for catching."""
    from optuna.artifacts.exceptions import ArtifactNotFound

    errors: list[type[BaseException]] = [OSError, ArtifactNotFound]
    try:
        from botocore.exceptions import BotoCoreError, ClientError

        errors += [BotoCoreError, ClientError]
    except ImportError:  # pragma: no cover - boto3 is optional
        pass
    try:
        from google.api_core.exceptions import GoogleAPIError

        errors.append(GoogleAPIError)
    except ImportError:  # pragma: no cover - google-cloud is optional
        pass
    return tuple(errors)


class SweepArtifactStore:
    """An Optuna artifact store with an optional key prefix and a ``size`` of each artifact.

    Implements Optuna's ``ArtifactStore`` protocol (``open_reader``, ``write``, ``remove``),
    so it can be passed to ``optuna.artifacts.upload_artifact``. Thread-safe as far as the
    wrapped client is.
    """

    def __init__(self, url: str, inner: Any, *, prefix: str = "", kind: str = "file",
                 root: Path | None = None) -> None:
        self.url = url
        self.root = root
        self.inner = inner
        self.prefix = prefix.strip("/")
        self.kind = kind

    def key(self, artifact_id: str) -> str:
        """The object key (or file name) of an artifact in the backend."""
        return f"{self.prefix}/{artifact_id}" if self.prefix else artifact_id

    def open_reader(self, artifact_id: str) -> BinaryIO:
        """A binary reader of the artifact; raises ArtifactNotFound."""
        reader: BinaryIO = self.inner.open_reader(self.key(artifact_id))
        return reader

    def write(self, artifact_id: str, content_body: IO[bytes]) -> None:
        """Store the artifact's bytes."""
        self.inner.write(self.key(artifact_id), content_body)

    def remove(self, artifact_id: str) -> None:
        """Delete the artifact; raises ArtifactNotFound when it is not there (filesystem)."""
        self.inner.remove(self.key(artifact_id))

    def size(self, artifact_id: str) -> int | None:
        """Bytes of the artifact, or None when it does not exist."""
        key = self.key(artifact_id)
        if self.kind == "file":
            assert self.root is not None
            path = self.root / key
            return path.stat().st_size if path.exists() else None
        if self.kind == "s3":
            from botocore.exceptions import ClientError

            try:
                head = self.inner.client.head_object(Bucket=self.inner.bucket, Key=key)
            except ClientError:
                return None
            return int(head["ContentLength"])
        blob = self.inner.bucket_obj.get_blob(key)
        return None if blob is None else int(blob.size or 0)


def _split_bucket(url: str, scheme: str) -> tuple[str, str]:
    rest = url[len(scheme):]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise AdvisorError(f"artifacts: {url!r} has no bucket; write {scheme}BUCKET/PREFIX")
    return bucket, prefix


def open_artifact_store(url: str, *, base_dir: str | Path | None = None,
                        s3_client: Any = None, gcs_client: Any = None,
                        create: bool = True) -> SweepArtifactStore:
    """The store for a local directory (relative to ``base_dir``), ``s3://`` or ``gs://`` URL.

    Clients default to ``boto3.client("s3")`` and ``google.cloud.storage.Client()``; tests
    pass fakes. Local directories are created, unless ``create`` is false (a store to clean
    up, which must exist): then a missing one is an AdvisorError naming it.
    """
    from optuna.artifacts import Boto3ArtifactStore, FileSystemArtifactStore, GCSArtifactStore

    if url.startswith("s3://"):
        bucket, prefix = _split_bucket(url, "s3://")
        if s3_client is None:
            import boto3

            s3_client = boto3.client("s3")
        return SweepArtifactStore(url, Boto3ArtifactStore(bucket, client=s3_client),
                                  prefix=prefix, kind="s3")
    if url.startswith("gs://"):
        bucket, prefix = _split_bucket(url, "gs://")
        if gcs_client is None:
            from google.cloud import storage as gcs

            gcs_client = gcs.Client()
        return SweepArtifactStore(url, GCSArtifactStore(bucket, client=gcs_client),
                                  prefix=prefix, kind="gs")
    path = Path(url.removeprefix("file://")).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not create and not path.is_dir():
        raise AdvisorError(f"artifacts: {path} is not a folder; name the one the sweep wrote its "
                           "artifacts to (sweep.yaml's 'artifacts', or --artifacts)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AdvisorError(f"artifacts: cannot create directory {path}: {exc.strerror}") from exc
    return SweepArtifactStore(str(path), FileSystemArtifactStore(path), kind="file",
                              root=path)


def bind_store(study_name: str, store: SweepArtifactStore | None) -> None:
    """Make ``store`` the one ``upload_artifact`` uses for trials of ``study_name`` here."""
    with _bound_lock:
        if store is None:
            _bound.pop(study_name, None)
        else:
            _bound[study_name] = store


def _store_for(trial: optuna.Trial) -> SweepArtifactStore | None:
    name = trial.study.study_name
    with _bound_lock:
        if name in _bound:
            return _bound[name]
    url = read_settings(trial.study.user_attrs).artifacts_url
    return open_artifact_store(url) if url is not None else None


def upload_artifact(trial: optuna.Trial, file_path: str | Path) -> str | None:
    """Save a file as an artifact of the trial; returns its id, or None when it failed.

    A failed upload is logged and recorded on the trial (``advisor.sweep.accounting.records``); the trial
    is not failed for it. Raises AdvisorError when the sweep has no
    ``artifacts:`` location.
    """
    store = _store_for(trial)
    if store is None:
        raise AdvisorError("upload_artifact: the sweep has no 'artifacts:' location; add "
                           "'artifacts: DIR' (or s3://, gs://) to sweep.yaml")
    from optuna.artifacts import upload_artifact as optuna_upload

    try:
        return optuna_upload(
            artifact_store=cast(Any, store), file_path=str(file_path), study_or_trial=trial)
    except store_errors() as exc:
        message = f"artifact upload of {Path(file_path).name} to {store.url} failed: {exc}"
        log.warning("trial %d: %s", trial.number, message)
        record_artifact_error(trial, message)
        return None
