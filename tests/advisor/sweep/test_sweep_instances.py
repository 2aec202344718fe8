"""A cloud worker is charged the instance time its cloud bills: max(its trials' charges, billed
instance time), in the ledger, the cap gate, ``sweep status`` and the sweep report."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.trial import TrialState

from advisor.errors import AdvisorError
from advisor.sweep import sweep_report_data
from advisor.sweep.accounting.budget import BudgetGate
from advisor.sweep.accounting.instances import WorkerInstance, transition_time_s
from advisor.sweep.accounting.ledger import ledger_from_trials, read_ledger
from advisor.sweep.accounting.records import COST_ATTR, PRICE_ATTR, WORKER_ATTR, record_instance
from advisor.sweep.spec import BudgetSpec
from advisor.sweep.spec.outcomes import StopKind
from cli.main import advisor
from pricing.billing import BILLING_RULES
from pricing.types import Cloud
from reports.sweep import write_sweep_html

optuna.logging.set_verbosity(optuna.logging.WARNING)

PRICE = 3600.0  # $1 per second
NOW = 1_800_000_000.0
OFFER = "aws:g5.xlarge:us-east-1:spot"


def _instance(worker: str = "w0", *, ran_s: float, running: bool = False) -> WorkerInstance:
    return WorkerInstance(worker_id=worker, instance_id=f"i-{worker}", offer_key=OFFER,
                          price_usd_per_hour=PRICE, launched_at_s=NOW - ran_s,
                          ended_at_s=None if running else NOW)


def _trial(cost_usd: float, worker: str | None = "w0") -> optuna.trial.FrozenTrial:
    attrs: dict[str, object] = {COST_ATTR: cost_usd}
    if worker is not None:
        attrs[WORKER_ATTR] = worker
    return optuna.trial.create_trial(state=TrialState.COMPLETE, value=0.0, user_attrs=attrs)


@pytest.mark.parametrize(("run_s", "billed_s"), [
    (0.0, 60.0),     # launched, gone at once: the 60 s minimum
    (59.2, 60.0),    # under a minute: the minimum
    (60.4, 61.0),    # past it: rounded up to the next second
    (600.0, 600.0),  # whole seconds stay
])
def test_aws_bills_per_second_with_a_60_s_minimum(run_s: float, billed_s: float) -> None:
    rule = BILLING_RULES[Cloud.AWS]
    assert rule.billed_s(run_s) == billed_s
    assert "aws.amazon.com" in rule.source


@pytest.mark.parametrize(("fields", "words"), [
    ({"price_usd_per_hour": -1.0}, "price_usd_per_hour must be >= 0"),
    ({"ended_at_s": NOW - 1000}, "ended_at_s .* is before launched_at_s"),
    ({"offer_key": "azure:nd40:eastus"}, "no billing rule for cloud 'azure'"),
])
def test_bad_instance_records_name_the_field(fields: dict[str, object], words: str) -> None:
    values: dict[str, object] = {"worker_id": "w", "instance_id": "i-1", "offer_key": OFFER,
                                 "price_usd_per_hour": 1.0, "launched_at_s": NOW - 10,
                                 "ended_at_s": NOW, **fields}
    with pytest.raises(AdvisorError, match=words):
        WorkerInstance(**values).billed_s(NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize(("reason", "seconds"), [
    ("User initiated (2025-05-01 12:00:00 GMT)", 1746100800.0),  # EC2's form
    ("User initiated (2025-05-01 12:00:00 UTC)", 1746100800.0),  # moto's form
    ("Client.InstanceInitiatedShutdown: Instance initiated shutdown", None),  # no time given
    ("", None),
])
def test_the_time_in_a_state_transition_reason(reason: str, seconds: float | None) -> None:
    assert transition_time_s(reason) == seconds


@pytest.mark.parametrize(("instance_s", "trial_usd", "spent_usd"), [
    (600.0, [60.0, 60.0, 60.0], 600.0),  # instance ran 10 min, trials 3 min: charged 10 min
    (120.0, [60.0, 60.0, 60.0], 180.0),  # trials charged more (shared instance): the trials
])
def test_a_worker_is_charged_the_larger_of_its_trials_and_its_billed_instance_time(
        tmp_path: Path, instance_s: float, trial_usd: list[float], spent_usd: float) -> None:
    study = optuna.create_study(study_name="inst", storage=f"sqlite:///{tmp_path / 'i.db'}")
    for cost in trial_usd:
        study.add_trial(_trial(cost))
    study.add_trial(_trial(5.0, worker=None))  # ran elsewhere: not set against w0's instance
    record_instance(study, _instance(ran_s=instance_s))
    fast = read_ledger(study, price_usd_per_hour=PRICE, now_s=NOW + 999)  # it has ended
    slow = ledger_from_trials(study.get_trials(), price_usd_per_hour=PRICE, now_s=NOW + 999,
                              instances=[_instance(ran_s=instance_s)])
    for ledger in (fast, slow):
        assert ledger.spent_usd == pytest.approx(spent_usd + 5.0)
        assert ledger.instance_overhead_usd == pytest.approx(spent_usd - sum(trial_usd))


def test_a_running_instance_accrues_until_terminated(tmp_path: Path) -> None:
    study = optuna.create_study(study_name="acc", storage=f"sqlite:///{tmp_path / 'a.db'}")
    study.add_trial(_trial(60.0))
    record_instance(study, _instance(ran_s=300.0, running=True))
    spent = [read_ledger(study, price_usd_per_hour=PRICE, now_s=NOW + dt).spent_usd
             for dt in (0.0, 100.0)]
    assert spent == pytest.approx([300.0, 400.0])
    record_instance(study, _instance(ran_s=300.0))  # terminated at NOW: stops accruing
    assert read_ledger(study, price_usd_per_hour=PRICE, now_s=NOW + 100).spent_usd == 300.0


def test_the_cap_gate_refuses_a_trial_when_the_instance_accrual_would_pass_the_cap() -> None:
    trials = [_trial(60.0), _trial(60.0), _trial(60.0)]  # 3 min of trials, $180
    gate = BudgetGate(BudgetSpec(max_usd=400.0), PRICE, clock=lambda: NOW)
    by_trials = ledger_from_trials(trials, price_usd_per_hour=PRICE, now_s=NOW)
    assert gate.stop_reason(by_trials) is None  # $180 + $60 for one more fits in $400
    running = [_instance(ran_s=400.0, running=True)]  # but the instance has run 400 s
    billed = ledger_from_trials(trials, price_usd_per_hour=PRICE, now_s=NOW, instances=running)
    reason = gate.stop_reason(billed)
    assert reason is not None and reason.kind is StopKind.DOLLAR_CAP
    assert reason.spent_usd == pytest.approx(400.0)


_WORKERS = st.lists(st.tuples(st.floats(0.0, 3600.0),                  # instance run time
                              st.lists(st.floats(0.0, 600.0), max_size=6)),  # its trials
                    max_size=4)


@settings(max_examples=200, deadline=None)
@given(workers=_WORKERS, elsewhere=st.lists(st.floats(0.0, 600.0), max_size=3))
def test_spend_is_the_sum_over_workers_of_max_trials_and_billed_time(
        workers: list[tuple[float, list[float]]], elsewhere: list[float]) -> None:
    """For any workers (instance run time, trial charges) and trials run elsewhere: spend is
    the trials elsewhere plus, per worker, the larger of its trials and its billed time; so
    never less than any worker's billed time or the trials' charges."""
    trials = [_trial(c, worker=None) for c in elsewhere]
    instances = []
    for i, (ran_s, costs) in enumerate(workers):
        trials += [_trial(c, worker=f"w{i}") for c in costs]
        instances.append(_instance(f"w{i}", ran_s=ran_s))
    ledger = ledger_from_trials(trials, price_usd_per_hour=PRICE, now_s=NOW,
                                instances=instances)
    expected = sum(elsewhere) + sum(max(sum(costs), BILLING_RULES[Cloud.AWS].billed_s(ran_s))
                                    for ran_s, costs in workers)
    assert ledger.spent_usd == pytest.approx(expected)
    assert ledger.spent_usd >= sum(sum(costs) for _, costs in workers) + sum(elsewhere) - 1e-6


def test_status_and_report_show_the_instance_overhead(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = optuna.create_study(study_name="shown", storage=url)
    study.set_user_attr(PRICE_ATTR, PRICE)
    study.add_trial(_trial(180.0))
    record_instance(study, _instance(ran_s=600.0))
    as_json = CliRunner().invoke(advisor, ["sweep", "status", "shown", "--storage", url,
                                           "--json"])
    assert as_json.exit_code == 0, as_json.output
    status = json.loads(as_json.stdout)
    assert status["instance_overhead_usd"] == pytest.approx(420.0)
    assert status["worker_instances"] == 1
    assert status["spent_usd"] == pytest.approx(600.0)
    table = CliRunner().invoke(advisor, ["sweep", "status", "shown", "--storage", url])
    assert "instance overhead" in table.stdout
    assert "$420.00 of instance time billed beyond the trials on 1 worker instance" in (
        " ".join(table.stdout.split()))
    data = sweep_report_data(optuna.load_study(study_name="shown", storage=url))
    assert data.spent_usd == pytest.approx(600.0)
    assert data.instance_overhead_usd == pytest.approx(420.0)
    write_sweep_html(data, tmp_path / "review.html")
    html = (tmp_path / "review.html").read_text()
    assert "Instance time billed beyond the trials on the 1 cloud worker instance(s)" in html
