"""The code bundle a launched sweep worker fetches: our packages and the sweep's own files.

Only what the workers need travels (``bundle_files``), never a secret: the storage URL goes
without its password (``url_without_password``; workers read it from SSM), a file that holds
the password is refused, and built-in patterns plus ``.advisorignore`` keep keys,
credentials, databases and caches out.
"""

from __future__ import annotations

import fnmatch
import io
import tarfile
from collections.abc import Sequence
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.sweep.spec.sweep_spec import SweepSpec

__all__ = ["IGNORE_FILE", "bundle_files", "make_worker_bundle", "url_password",
           "url_without_password"]

_PACKAGES = ("advisor", "pricing", "probes")
_MAX_BUNDLE_BYTES = 50 * 2**20
IGNORE_FILE = ".advisorignore"
# never shipped, whatever the entrypoint's package holds
_ALWAYS_IGNORED = (".*", "__pycache__", "*.pyc", "*.db", "credentials*", "*secret*", "*.pem",
                   "*.key", "id_rsa*", "*.env")


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if _ignored(Path(info.name).name, _ALWAYS_IGNORED) else info


def _ignored(relative: str, patterns: Sequence[str]) -> bool:
    """True when ``relative`` (a path under the sweep folder) or one of its folders matches."""
    parts = Path(relative).parts
    candidates = [relative, *parts, *("/".join(parts[:i]) for i in range(1, len(parts)))]
    return any(fnmatch.fnmatch(c, p.rstrip("/")) for c in candidates for p in patterns)


def _ignore_patterns(folder: Path) -> list[str]:
    path = folder / IGNORE_FILE
    lines = path.read_text().splitlines() if path.is_file() else []
    return [*_ALWAYS_IGNORED, *(ln.strip() for ln in lines
                                if ln.strip() and not ln.lstrip().startswith("#"))]


def bundle_files(spec: SweepSpec, sweep_yaml_name: str = "sweep.yaml") -> list[str]:
    """The files of the sweep folder that travel to the workers, relative to it, sorted.

    Only what the sweep needs: sweep.yaml, the entrypoint's module (``train.py``) or the
    whole top-level package it lives in (``mypkg/``), and the ``model`` file sweep.yaml names;
    less whatever ``.advisorignore`` (shell patterns, one per line) and the built-in patterns
    (dotfiles, ``credentials*``, keys, ``*.db``, caches) exclude. Nothing else beside
    sweep.yaml is sent.
    """
    if not spec.source_dir:
        return []
    folder = Path(spec.source_dir)
    top = spec.entrypoint.split(":")[0].split(".")[0]
    wanted = [sweep_yaml_name, f"{top}.py", top]
    if spec.model and not Path(spec.model).is_absolute():
        wanted.append(spec.model)
    patterns = _ignore_patterns(folder)
    found: set[str] = set()
    for name in wanted:
        path = folder / name
        paths = sorted(path.rglob("*")) if path.is_dir() else [path]
        found.update(p.relative_to(folder).as_posix() for p in paths if p.is_file())
    return sorted(f for f in found if f == sweep_yaml_name or not _ignored(f, patterns))


def make_worker_bundle(spec: SweepSpec, storage_url: str, *,
                       sweep_yaml_name: str = "sweep.yaml") -> bytes:
    """tar.gz of our packages, ``bundle_files`` (under ``sweep/``) and ``storage.txt``: the
    storage URL without its password (workers read that from ``PGPASSWORD``)."""
    root = Path(__file__).resolve().parents[3]  # advisor/sweep/run/bundle.py: the repository
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for package in _PACKAGES:
            tar.add(root / package, arcname=package, filter=_skip)
        files: dict[str, bytes] = {}
        if spec.source_dir:
            for relative in bundle_files(spec, sweep_yaml_name):
                files[f"sweep/{relative}"] = (Path(spec.source_dir) / relative).read_bytes()
            yaml_name = f"sweep/{sweep_yaml_name}"
            if yaml_name in files:
                files[yaml_name] = _without_storage_password(files[yaml_name])
        files["storage.txt"] = url_without_password(storage_url).encode()
        password = url_password(storage_url)
        for name, data in files.items():
            if password and password.encode() in data:
                raise AdvisorError(f"--launch: {name.removeprefix('sweep/')} holds the storage "
                                   "password; keep it out of the files the workers get (they "
                                   f"read it from SSM), or list the file in {IGNORE_FILE}")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    bundle = buffer.getvalue()
    if len(bundle) > _MAX_BUNDLE_BYTES:
        raise AdvisorError(f"--launch: the worker bundle is {len(bundle) / 2**20:.0f} MiB (limit "
                           f"{_MAX_BUNDLE_BYTES // 2**20} MiB); list large files in "
                           f"{Path(spec.source_dir or '.') / IGNORE_FILE} (load data on the "
                           "instance)")
    return bundle


def _without_storage_password(sweep_yaml: bytes) -> bytes:
    """sweep.yaml with the password of its ``storage`` URL removed (the workers are given the
    URL with ``--storage`` anyway)."""
    import yaml

    data = yaml.safe_load(sweep_yaml)
    storage = data.get("storage") if isinstance(data, dict) else None
    if not isinstance(storage, str) or "://" not in storage or url_password(storage) is None:
        return sweep_yaml
    data["storage"] = url_without_password(storage)
    return yaml.safe_dump(data, sort_keys=False).encode()


def url_without_password(url: str) -> str:
    """``url`` with its password removed (the rest, user included, kept)."""
    from sqlalchemy.engine import URL, make_url

    parsed = make_url(url)
    if parsed.password is None:
        return url
    bare = URL.create(parsed.drivername, username=parsed.username, host=parsed.host,
                      port=parsed.port, database=parsed.database, query=parsed.query)
    return bare.render_as_string(hide_password=False)


def url_password(url: str) -> str | None:
    """The password in ``url``, if any."""
    from sqlalchemy.engine import make_url

    password = make_url(url).password
    return None if password is None else str(password)
