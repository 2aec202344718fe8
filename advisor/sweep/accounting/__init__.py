"""What a sweep costs and may still spend: the one place its money is counted.

- ``budget``: a trial's cost (through ``pricing.billing``), the caps (``max_trials``,
  ``max_usd``, ``max_hours``) and the ``BudgetGate`` asked before every trial;
- ``instances``: the instance trials are charged at, and the billed time of launched workers;
- ``ledger``: the study's dollar totals from two aggregate queries, and a trial's charge
  written once (``record_charge``);
- ``admission``: the PostgreSQL lock that keeps concurrent workers inside the caps;
- ``finished``: a rerun of a spent sweep answered from its stored totals, without Optuna;
- ``records``: every ``advisor:*`` attribute the sweep stores on the study, typed;
- ``timestamps``: trial times in one zone, as the charges compare them;
- ``status``: the one read model of a sweep (``SweepStatus``) that the CLI and reports render.

Imports the spec (``advisor.sweep.spec``), never the running of trials (``advisor.sweep.run``).
Nothing is imported here, so ``finished`` stays free of Optuna.
"""
