"""Shared fixtures: every test gets its own ADVISOR_HOME, and no test reaches the network or
sees cloud credentials, except those marked ``cloud`` (deselected by default).

Property tests (Hypothesis) draw fresh examples on a developer's machine; under CI (``CI``
set) the same examples every run (``derandomize``), so a landing run fails only on a change,
never on a draw: a counterexample found locally becomes an explicit ``@example``."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def _share_botocore_data_loaders() -> None:
    """Every botocore session of a test process shares one data loader. moto resets boto3's
    default session, so each test's clients came from a new session whose new loader parsed
    the service models (EC2's JSON is megabytes) again: about 0.8 s per test. Within one
    session botocore shares its loader (and that loader's cache) in the same way."""
    import botocore.loaders
    import botocore.session

    loaders: dict[str | None, botocore.loaders.Loader] = {}

    def shared(search_path_string: str | None = None) -> botocore.loaders.Loader:
        if search_path_string not in loaders:
            loaders[search_path_string] = botocore.loaders.create_loader(search_path_string)
        return loaders[search_path_string]

    botocore.session.create_loader = shared  # type: ignore[attr-defined]


_share_botocore_data_loaders()


@pytest.fixture(autouse=True)
def advisor_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 request: pytest.FixtureRequest) -> Iterator[Path]:
    """A private data directory (probe store, snapshots, profile cache) per test."""
    home = tmp_path / "advisor-home"
    monkeypatch.setenv("ADVISOR_HOME", str(home))
    monkeypatch.delenv("ADVISOR_STORAGE_URL", raising=False)
    if request.node.get_closest_marker("cloud"):
        yield home
        return
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    yield home


@pytest.fixture(scope="session", autouse=True)
def default_model_in_memory() -> None:
    """Each test process starts as one that has fitted the default throughput model once: its
    in-memory cache (``model_cache._fitted``) holds the shipped model, which is that fit
    (``test_shipped_artifacts`` checks its key is today's). Without this the first test of a
    process to ask for the model under ``no_shipped_artifacts`` (or with a ``cache_dir`` of
    its own) fitted it again, tens of seconds on a busy machine, and which test paid depended
    on the order the workers drew. Tests of a new process (the background fit, the shipped
    file's lookup) empty ``_fitted`` themselves, as they always had to."""
    from advisor.throughput import model_cache
    from pricing import load_accelerators

    shipped = model_cache.shipped_model_file(load_accelerators())
    if shipped.is_file():  # a stale model is not shipped: then tests fit as before
        key = shipped.name.removeprefix("throughput-").removesuffix(".pkl")
        model_cache._fitted.setdefault(key, shipped.read_bytes())


@pytest.fixture()
def no_shipped_artifacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No shipped profiles or fitted model (``python -m advisor.throughput.shipped_artifacts``),
    as for a model profiled for the first time: for tests of tracing, caching and fitting."""
    from advisor.profiling import _spec_files
    from advisor.throughput import model_cache

    empty = tmp_path / "no-shipped-artifacts"
    empty.mkdir()
    monkeypatch.setattr(_spec_files, "SHIPPED_PROFILES_DIR", empty)
    monkeypatch.setattr(model_cache, "SHIPPED_MODEL_DIR", empty)


@pytest.fixture()
def no_aws_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing boto3's chain could find: no variables, no files, no instance metadata."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture()
def no_gcp_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """google-auth finds no application default credentials (what it raises then)."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    def default(*_args: object, **_kwargs: object) -> object:
        raise DefaultCredentialsError("Your default credentials were not found. To set up "
                                      "Application Default Credentials, see https://x")

    monkeypatch.setattr(google.auth, "default", default)


_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and host not in {"127.0.0.1", "localhost", "::1"} and not host.startswith("/"):
        raise RuntimeError(f"test tried to reach the network: {address!r}")
    _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Fail any test that opens a connection to a non-loopback address."""
    if request.node.get_closest_marker("cloud"):
        return
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


# --- A private PostgreSQL server for multi-worker sweeps and shared stores -----------------

import glob  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass  # noqa: E402


@dataclass
class PostgresServer:
    """A throw-away PostgreSQL server: its SQLAlchemy ``url`` and a ``restart()`` for faults."""

    url: str
    data_dir: str
    port: int
    bin_dir: str
    run_as: list[str]
    log_path: str

    def pg_ctl(self, *args: str) -> None:
        """Run pg_ctl on this server's data directory (as the postgres user under root)."""
        subprocess.run([*self.run_as, f"{self.bin_dir}/pg_ctl", "-D", self.data_dir,
                        "-l", self.log_path, *args], check=True, capture_output=True)

    def restart(self) -> None:
        """Restart the server (fast shutdown, which drops every open connection)."""
        self.pg_ctl("-m", "fast", "-w", "restart")


def _postgres_bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(initdb)
    pytest.fail("PostgreSQL binaries not found (no /usr/lib/postgresql/*/bin/initdb, no initdb "
                "on PATH); install them with 'apt-get install postgresql'", pytrace=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """Start a private PostgreSQL server for the session (initdb in a temp dir, trust auth).

    Runs the server as the ``postgres`` OS user when the tests run as root (initdb refuses
    root). Stopped and deleted at the end of the session.
    """
    bin_dir = _postgres_bin_dir()
    tmp = tempfile.mkdtemp(prefix="advisor-pg-")
    run_as: list[str] = []
    if os.geteuid() == 0:
        import pwd

        user = pwd.getpwnam("postgres")
        os.chown(tmp, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    data_dir, port = f"{tmp}/data", _free_port()
    server = PostgresServer(
        url=f"postgresql://advisor@127.0.0.1:{port}/advisor_test", data_dir=data_dir,
        port=port, bin_dir=bin_dir, run_as=run_as, log_path=f"{tmp}/server.log")
    try:
        subprocess.run([*run_as, f"{bin_dir}/initdb", "-D", data_dir, "-U", "advisor",
                        "--auth=trust", "-E", "UTF8", "--no-sync"], check=True,
                       capture_output=True)
        options = (f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        server.pg_ctl("-o", options, "-w", "start")
        subprocess.run([*run_as, f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(port),
                        "-U", "advisor", "advisor_test"], check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        log = Path(server.log_path).read_text() if os.path.exists(server.log_path) else ""
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {exc.stderr!r}\n{log}", pytrace=False)
    try:
        yield server
    finally:
        try:
            server.pg_ctl("-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """SQLAlchemy URL of the session's private PostgreSQL database."""
    return postgres_server.url
