"""The storage password is masked in every URL form: a '/' in the password, an '@' in the user
name (as Azure writes it), percent-encoded or raw, in the URL shown and in every error line, of
the sweep's storage and of the probe store (one implementation, ``probes.urls``)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import advisor.storage as advisor_storage
import probes.urls as probe_urls
from advisor.errors import AdvisorError
from advisor.storage import mask_secrets, shown_url
from advisor.sweep.run.database import check_storage_url, open_rdb_storage
from cli.main import advisor
from probes.errors import ProbeError
from probes.store import ProbeStore


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:pa/ss@host/db", "postgresql://u:***@host/db"),           # '/' in password
    ("postgresql://u@corp:PW@host/db", "postgresql://u@corp:***@host/db"),    # Azure user@server
    ("postgresql://u:p@ss@host/db", "postgresql://u:***@host/db"),            # raw '@' in password
    ("postgresql+psycopg://a:p%40ss@h:5/db?x=1", "postgresql+psycopg://a:***@h:5/db?x=1"),
    ("postgresql://host:5432/db", "postgresql://host:5432/db"),               # a port, no user
    ("postgresql://advisor@db/advisor", "postgresql://advisor@db/advisor"),   # no password
    ("sqlite:////tmp/a:b@c.db", "sqlite:////tmp/a:b@c.db"),                   # a path, no user
])
def test_shown_url(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_advisor_and_the_probe_store_mask_with_one_implementation() -> None:
    for name in ("MASK", "db_error_line", "mask_secrets", "shown_url", "url_secrets"):
        assert getattr(advisor_storage, name) is getattr(probe_urls, name), name


ISSUE_URLS = ["postgresql://u:pa/ss@127.0.0.1:{port}/db",            # '/' in the password
              "postgresql://u@corp:PW-secret@127.0.0.1:{port}/db"]   # '@' in the user name


@pytest.mark.parametrize("url", ISSUE_URLS)
def test_the_issues_urls_are_masked_in_the_cli_error(url: str) -> None:
    url = url.format(port=_closed_port())
    result = CliRunner().invoke(advisor, ["sweep", "status", "t", "--storage", url])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: --storage: cannot open 'postgresql://u")
    assert "pa/ss" not in line and "PW-secret" not in line and ":***@127.0.0.1" in line


@pytest.mark.parametrize("url", ISSUE_URLS)
def test_the_issues_urls_are_masked_in_the_probe_commands_error(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADVISOR_STORAGE_URL", url.format(port=_closed_port()))
    result = CliRunner().invoke(advisor, ["probes", "list"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: cannot open the probe store at postgresql://u")
    assert "pa/ss" not in line and "PW-secret" not in line and ":***@127.0.0.1" in line


# any character, the URL's own delimiters often: the forms of the issue ('/' in a password,
# '@' in a user name) come up in every run, not once in a thousand examples
_CHARS = st.one_of(st.sampled_from(":/@%?#&=+ "),
                   st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")))
_USERS = st.text(_CHARS, min_size=1, max_size=12)
_PASSWORDS = st.text(_CHARS, min_size=4, max_size=16)


def _forms(user: str, password: str) -> list[str]:
    """The URL as a user may write it: percent-encoded, and raw where SQLAlchemy reads it so
    (its user name stops at ':' or '/', its password at '@')."""
    forms = [f"{quote(user, safe='')}:{quote(password, safe='')}"]
    if not set(user) & set(":/") and "@" not in password:
        forms.append(f"{user}:{password}")
    return forms


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user=_USERS, password=_PASSWORDS)
def test_the_password_never_shows(user: str, password: str) -> None:
    for userinfo in _forms(user, password):
        url = f"postgresql://{userinfo}@db.example.com:5432/sweeps"
        rest = url.replace(userinfo, "")  # the parts that are not secret
        for secret in {password, quote(password, safe="")}:
            assume(secret not in rest + "***" and secret not in user)
        shown = shown_url(url)
        text = mask_secrets(f"could not connect to {url!r}: timeout", url=url)
        for secret in {password, quote(password, safe="")}:
            assert secret not in shown
            assert secret not in text


def _open_sweep_storage(url: str) -> None:
    check_storage_url(url, origin="--storage")
    open_rdb_storage(url, origin="--storage")


def _open_probe_store(url: str) -> None:
    ProbeStore(url).close()


@pytest.mark.parametrize(("opener", "error"), [
    (_open_sweep_storage, AdvisorError),  # advisor sweep, status, report sweep
    (_open_probe_store, ProbeError),      # advisor probe, probes list/show/gc, report probe
])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user=_USERS.filter(lambda u: "\x00" not in u), password=_PASSWORDS)
@example(user="0", password="stor")  # part of "--storage": found once, not a leak
@example(user="{", password="000}")  # Optuna formats the URL: a brace raised IndexError
def test_the_password_never_shows_in_an_error_line(
        opener: Callable[[str], None], error: type[Exception], user: str, password: str) -> None:
    port = _closed_port()
    secrets = {password, quote(password, safe="")}
    for userinfo in _forms(user, password):  # percent-encoded, and raw where it reads so
        for url in (f"postgresql://{userinfo}@127.0.0.1:{port}/db",    # refused connection
                    f"postgresql+nodriver://{userinfo}@127.0.0.1/db"):  # unknown database kind
            rest = url.replace(userinfo, "")
            assume(all(s not in rest + "***" and s not in user for s in secrets))
            with pytest.raises(error) as plain:  # the same failure with a known password
                opener(url.replace(userinfo, "someone:known"))
            # a "password" that is part of the message itself ("stor" of "--storage") is no leak
            assume(all(s not in str(plain.value) for s in secrets))
            with pytest.raises(error) as info:
                opener(url)
            line = str(info.value)
            assert "\n" not in line
            assert not any(s in line for s in secrets), line


def test_braces_in_a_storage_url_are_the_url_s_own(tmp_path: Path) -> None:
    """Optuna reads a storage URL as a str.format template: braces reach the database as
    written (a file named with them), not as a template's fields."""
    url = f"sqlite:///{tmp_path}/study{{SCHEMA_VERSION}}{{0}}.db"
    storage = open_rdb_storage(url, origin="--storage")
    assert storage.url == url
    assert [p.name for p in tmp_path.iterdir()] == ["study{SCHEMA_VERSION}{0}.db"]
