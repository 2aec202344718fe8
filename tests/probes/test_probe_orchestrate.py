"""Orchestration with the fake launcher: dollars checked first, every outcome recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from probe_helpers import FakeClock, make_request

from pricing import Cloud
from probes.errors import ProbeError
from probes.launchers.fake import FakeBehaviour, FakeLauncher, FakeOutcome
from probes.orchestrate import ProbeEvent, check_budget, run_probes
from probes.store import ProbeStore
from probes.types import NO_DEVICE, ProbeRequest, ProbeStatus


def _launcher(outcomes: dict[str, FakeOutcome]) -> FakeLauncher:
    clock = FakeClock()
    return FakeLauncher(lambda r: FakeBehaviour(outcomes.get(r.probe_id, FakeOutcome.RESULT),
                                                ready_after_polls=2),
                        clock=clock, sleep=clock.sleep, grace_s=60.0)


def _request(probe_id: str, price: float = 3.6, **kw: object) -> ProbeRequest:
    return make_request(probe_id, "fake:x:y", price_usd_per_hour=price, time_box_s=60.0, **kw)  # type: ignore[arg-type]


def test_refuses_before_launching_when_over_max_usd(tmp_path: Path) -> None:
    launcher = _launcher({})
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    # (60 s box + 60 s boot) at $3.60/h = $0.12 each
    with pytest.raises(ProbeError, match=r"may cost \$0.24, over --max-usd \$0.20"):
        run_probes([_request("a"), _request("b")], launcher_for=lambda _r: launcher,
                   store=store, max_usd=0.20)
    assert launcher.launched == [] and store.list() == []


def test_a_probe_over_its_own_max_usd_is_refused() -> None:
    launcher = _launcher({})
    with pytest.raises(ProbeError, match="over its max_usd"):
        check_budget([_request("a", max_usd=0.05)], lambda _r: launcher, None)


def test_every_outcome_is_recorded_in_order(tmp_path: Path) -> None:
    launcher = _launcher({"b": FakeOutcome.LAUNCH_FAILS, "c": FakeOutcome.CRASH,
                          "d": FakeOutcome.HANG})
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    events: list[ProbeEvent] = []
    results = run_probes([_request(i) for i in "abcd"], launcher_for=lambda _r: launcher,
                         store=store, max_usd=1.0, on_event=events.append)
    assert [r.status for r in results] == [ProbeStatus.OK, ProbeStatus.LAUNCH_FAILED,
                                           ProbeStatus.ERROR, ProbeStatus.TIMEOUT]
    assert {r.probe_id: r.status for r in store.list()} == {r.probe_id: r.status for r in results}
    assert launcher.live_probe_ids() == []
    assert results[0].cost_usd > 0 and results[1].cost_usd == 0
    assert [e.stage for e in events if e.request.probe_id == "a"] == ["launching", "running", "done"]


def test_a_result_no_harness_wrote_names_no_device(tmp_path: Path) -> None:
    # a launch that failed, an instance that died without a result and a timeout were stored
    # as run on "cpu" (the field's default): 'probes list' showed a g5.xlarge's launch
    # failure under device 'cpu'
    launcher = _launcher({"b": FakeOutcome.LAUNCH_FAILS, "c": FakeOutcome.CRASH,
                          "d": FakeOutcome.HANG})
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    run_probes([_request(i) for i in "abcd"], launcher_for=lambda _r: launcher, store=store,
               max_usd=1.0)
    assert {r.probe_id: r.device for r in store.list()} == {
        "a": "fake", "b": NO_DEVICE, "c": NO_DEVICE, "d": NO_DEVICE}


def test_duplicate_probe_ids_are_refused(tmp_path: Path) -> None:
    launcher = _launcher({})
    with pytest.raises(ProbeError, match="unique"):
        run_probes([_request("a"), _request("a")], launcher_for=lambda _r: launcher,
                   store=ProbeStore(f"sqlite:///{tmp_path / 'p.db'}"))


def test_an_unexpected_failure_is_recorded_terminated_and_raised(tmp_path: Path) -> None:
    launcher = _launcher({"a": FakeOutcome.HANG})

    def broken_poll(handle: object) -> None:
        raise RuntimeError("bug in a launcher")

    launcher.poll = broken_poll  # type: ignore[assignment,method-assign]
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    with pytest.raises(RuntimeError, match="bug in a launcher"):
        run_probes([_request("a")], launcher_for=lambda _r: launcher, store=store)
    assert store.get("a").status is ProbeStatus.ERROR
    assert launcher.live_probe_ids() == []


class _AwsBilledFake(FakeLauncher):
    """The fake launcher billed as EC2 bills (per second, 60 s minimum)."""

    cloud = Cloud.AWS


def test_a_short_cloud_probe_costs_the_billing_minimum(tmp_path: Path) -> None:
    clock = FakeClock()
    launcher = _AwsBilledFake(lambda _r: FakeBehaviour(FakeOutcome.RESULT, ready_after_polls=2),
                              clock=clock, sleep=clock.sleep, grace_s=60.0)
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    [result] = run_probes([_request("a")], launcher_for=lambda _r: launcher, store=store)
    assert 0 < result.wall_time_s < 60.0
    assert result.cost_usd == pytest.approx(60.0 / 3600 * 3.6)  # billed 60 s at $3.60/h
    assert store.get("a").cost_usd == pytest.approx(result.cost_usd)


def test_a_probe_that_never_started_is_not_billed_the_minimum(tmp_path: Path) -> None:
    clock = FakeClock()
    launcher = _AwsBilledFake(lambda _r: FakeBehaviour(FakeOutcome.LAUNCH_FAILS),
                              clock=clock, sleep=clock.sleep, grace_s=60.0)
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    [result] = run_probes([_request("a")], launcher_for=lambda _r: launcher, store=store)
    assert result.status is ProbeStatus.LAUNCH_FAILED and result.cost_usd == 0
