"""The launcher contract, one suite over every launcher: local (real subprocess), fake,
aws (moto) and gcp / gcp-tpu (fake clients)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from probe_envs import Env, environment

from probes.launchers import TAG_PROBE_ID, launcher_class
from probes.launchers.base import log_tail
from probes.types import ProbeStatus

KINDS = [
    pytest.param("local", marks=pytest.mark.slow),   # real harness in a subprocess
    "fake",
    "aws",                                           # EC2/S3/SSM under moto
    "gcp",                                           # Compute/GCS fakes
    "gcp-tpu",                                       # TPU/GCS fakes
]


@pytest.fixture(params=KINDS)
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    with environment(request.param, tmp_path) as built:
        yield built


class TestLauncherContract:
    """What every launcher promises (see probes/launchers/base.py)."""

    def test_registry_knows_the_launcher(self, env: Env) -> None:
        assert launcher_class(env.launcher.name) is type(env.launcher)

    def test_launch_wait_terminate_leaves_nothing(self, env: Env) -> None:
        request = env.request("c1")
        handle = env.launcher.launch(request)
        try:
            assert "c1" in env.launcher.live_probe_ids()
            env.finish(handle, request)
            result = env.launcher.wait(handle, request)
        finally:
            env.launcher.terminate(handle)
        assert result.status is ProbeStatus.OK, result.error
        assert result.probe_id == "c1" and result.samples_per_second
        assert env.launcher.live_probe_ids() == []

    def test_terminate_is_idempotent(self, env: Env) -> None:
        handle = env.launcher.launch(env.request("c2"))
        env.launcher.terminate(handle)
        env.launcher.terminate(handle)
        assert env.launcher.live_probe_ids() == []
        assert env.launcher.poll(handle) is None

    def test_resource_that_dies_without_result_is_an_error(self, env: Env) -> None:
        request = env.request("c3")
        handle = env.launcher.launch(request)
        try:
            env.crash(handle)
            result = env.launcher.wait(handle, request)
        finally:
            env.launcher.terminate(handle)
        assert result.status is ProbeStatus.ERROR
        assert "without a result" in result.error

    def test_no_result_in_time_is_a_timeout(self, env: Env) -> None:
        if env.clock is None:  # local: a workload that never finishes building
            request = env.request("c4", recipe=env.request("x").recipe.__class__(
                builtin=None, entrypoint="tiny_workload:build_hang",
                base_dir=env.request("x").recipe.base_dir), time_box_s=0.2)
            env.launcher.grace_s = 0.5
            env.launcher.boot_overhead_s = 0.5
        else:
            request = env.request("c4")
        handle = env.launcher.launch(request)
        try:
            result = env.launcher.wait(handle, request)
        finally:
            env.launcher.terminate(handle)
        assert result.status is ProbeStatus.TIMEOUT
        assert env.launcher.live_probe_ids() == []

    def test_gc_ends_only_expired_resources(self, env: Env) -> None:
        handle = env.launcher.launch(env.request("c5"))
        try:
            now = datetime.now(UTC)
            assert env.launcher.gc(now, dry_run=False) == []
            later = handle.expires_at + timedelta(seconds=1)
            assert len(env.launcher.gc(later, dry_run=True)) == 1
            assert env.launcher.live_probe_ids() == ["c5"]       # dry run touched nothing
            assert len(env.launcher.gc(later)) == 1
            assert env.launcher.live_probe_ids() == []
        finally:
            env.launcher.terminate(handle)

    def test_expiry_is_in_the_future_and_tagged(self, env: Env) -> None:
        handle = env.launcher.launch(env.request("c6"))
        try:
            assert handle.expires_at > datetime.now(UTC)
            assert TAG_PROBE_ID == "advisor-probe-id"
        finally:
            env.launcher.terminate(handle)


@pytest.mark.parametrize(("log", "tail"), [
    (None, ""),                                        # no log uploaded (yet)
    (b"one\n\n  \ntwo\nthree\nfour\n", "two | three | four"),  # last three non-blank lines
    (b"bad \xff byte", "bad \ufffd byte"),             # undecodable bytes replaced, not raised
    (b"x" * 1000, "x" * 600),                          # at most 600 characters, the last ones
])
def test_failure_detail_is_the_log_tail(log: bytes | None, tail: str) -> None:
    assert log_tail(log) == tail
