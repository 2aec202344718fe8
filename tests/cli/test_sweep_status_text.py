"""``advisor sweep status``'s table writes each state's dollars as the sweep's HTML report
does: from the trials' own charges, not from figures rounded to the micro-dollar first."""

from __future__ import annotations

import pytest
from rich.console import Console

import cli.render
import cli.sweep
from advisor.formatting import fmt_money
from advisor.sweep import TrialStatus
from advisor.sweep.accounting.status import SweepStatus, TrialCost


def test_tiny_dollars_by_state_keep_their_figures(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # a CPU sweep's pruned trials: the table read '$0.00007' where the page read '$0.0000701'
    trials = (TrialCost(0, TrialStatus.COMPLETE, 0.5, 0.000363),
              TrialCost(1, TrialStatus.PRUNED, 0.9, 0.0000451),
              TrialCost(2, TrialStatus.PRUNED, 0.8, 0.000025))
    status = SweepStatus("s", "minimize", "aws:g5.xlarge:us-east-1:spot", 0.397, trials=trials)
    monkeypatch.setattr(cli.render, "console", lambda **kw: Console(
        width=100, highlight=False, soft_wrap=False, **kw))
    cli.sweep._render_status(status)
    out = capsys.readouterr().out
    pruned = status.spend_by_state()[TrialStatus.PRUNED]
    assert fmt_money(pruned) == "$0.0000701"
    assert f"│ pruned   │      2 │ {fmt_money(pruned)} │" in out, out
    assert fmt_money(status.spent_usd) in out.split("│ total")[1]
