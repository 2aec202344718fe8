"""ProbeRequest / ProbeResult: invariants on construction and the JSON round trip."""

from __future__ import annotations

from typing import Any

import pytest
from probe_helpers import make_request, ok_result

from pricing import billing_rule
from probes.errors import ProbeError
from probes.types import ProbeRequest, ProbeResult, ProbeStatus


def _result(**kw: Any) -> ProbeResult:
    base: dict[str, Any] = {"probe_id": "p", "offer_key": "local", "workload_fingerprint": "f",
                            "status": ProbeStatus.OK, "batch_size": 8,
                            "samples_per_second": 10.0, "measured_steps": 5}
    base.update(kw)
    return ProbeResult(**base)


def test_request_round_trips_through_json() -> None:
    request = make_request(find_batch=True, memory_limit_gib=2.5, max_usd=3.0)
    assert ProbeRequest.from_json(request.to_json()) == request


def test_result_round_trips_through_json() -> None:
    result = ok_result(make_request())
    back = ProbeResult.from_json(result.to_json())
    assert back == result
    assert back.status is ProbeStatus.OK


@pytest.mark.parametrize(("fields", "message"), [
    ({"samples_per_second": None}, "samples_per_second"),           # ok needs a throughput
    ({"samples_per_second": 0.0}, "samples_per_second"),            # ... that is positive
    ({"measured_steps": 0}, "measured_steps"),                       # ok needs measured steps
    ({"batch_size": 0}, "batch_size"),                               # batch at least 1
    ({"status": ProbeStatus.ERROR, "samples_per_second": None, "error": ""}, "error text"),
    ({"status": ProbeStatus.OOM, "samples_per_second": None,
      "largest_batch_that_fits": 8}, "largest_batch_that_fits"),    # oom batch must not fit
    ({"cost_usd": -1.0}, "cost_usd"),                                # no negative dollars
    ({"step_time_p50_s": float("nan")}, "step_time_p50_s"),          # finite timings
])
def test_result_invariants(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        _result(**fields)


@pytest.mark.parametrize(("fields", "message"), [
    ({"probe_id": "a b"}, "probe_id"),             # ids travel as tags and paths
    ({"time_box_s": 0}, "time_box_s"),
    ({"max_usd": -2.0}, "max_usd"),
    ({"offer_key": ""}, "offer_key"),
])
def test_request_invariants(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        make_request(**fields)


@pytest.mark.parametrize(("record", "what"), [
    (ProbeRequest, "probe request"),
    (ProbeResult, "probe result"),
])
def test_bad_json_is_a_probe_error_naming_the_record(
        record: type[ProbeRequest | ProbeResult], what: str) -> None:
    with pytest.raises(ProbeError, match=f"^{what}: not JSON"):
        record.from_json("{nope")
    with pytest.raises(ProbeError, match=f"^{what}: bad JSON"):
        record.from_json('{"status": "ok"}')


def test_with_cost_charges_wall_time_at_the_price() -> None:
    result = ok_result(make_request()).with_cost(wall_time_s=1800, price_usd_per_hour=2.0)
    assert result.cost_usd == pytest.approx(1.0)


@pytest.mark.parametrize(("wall_s", "billed_s"), [
    (20.0, 60.0),    # under EC2's minimum: a minute is billed
    (60.0, 60.0),    # the minimum itself
    (90.4, 91.0),    # past it: per second, rounded up
])
def test_with_cost_follows_the_clouds_billing_rule(wall_s: float, billed_s: float) -> None:
    result = ok_result(make_request()).with_cost(wall_time_s=wall_s, price_usd_per_hour=3.6,
                                                 billing=billing_rule("aws"))
    assert result.wall_time_s == wall_s
    assert result.cost_usd == pytest.approx(billed_s / 3600 * 3.6)
