"""What a tune measured: one row per configuration, the knobs skipped, the step profile.

Plain records with a JSON round trip (``pricing.records.Record``; they ride inside
``ProbeResult.tuning``) and the pure rules that read them: which trial beats the baseline
beyond the noise, which settings the best combination takes, and which measured
configuration counts as the tuned one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from pricing import samples_per_usd
from pricing.records import Record
from probes.errors import ProbeError
from probes.tune.knobs import Knob, Skipped, StepConfig, combine, knob_spec
from probes.tune.profile import StepProfile

__all__ = ["CombinationPlan", "RowKind", "RowStatus", "TuneReport", "TuneRow", "beats",
           "chosen_settings", "combination_plans"]

_NOISE_FREE_SPEEDUP = 1.10  # a gain that counts when a row has no interval (too few steps)


class RowKind(enum.StrEnum):
    """The baseline (the spec as written), a one-knob trial, the baseline again after the
    trials (how far the machine drifted meanwhile), or a combination of knobs."""

    BASELINE = "baseline"
    TRIAL = "trial"
    RECHECK = "baseline_again"
    COMBINATION = "combination"


class RowStatus(enum.StrEnum):
    """How a row's run ended: measured, out of memory, failed; not measured (it ran out of
    its window before 3 steps were timed, or a batch rung was not tried after a smaller
    one failed); or skipped for time (not started: the box could no longer give it its
    least window, ``probes.tune.shares``)."""

    MEASURED = "measured"
    OOM = "oom"
    FAILED = "failed"
    NOT_MEASURED = "not_measured"
    NO_TIME = "skipped_for_time"


@dataclass(frozen=True)
class TuneRow(Record):
    """One configuration and what it measured.

    ``setting`` is the change in words (``bf16``, ``num_workers=4``, the combination's
    settings joined by ``+``); ``speedup`` is samples/s over the baseline's (both on the
    same device); ``rel_halfwidth`` the relative 95% half-width of the mean step time (None:
    too few steps for an interval). ``changes_numerics``: the row runs another precision
    or batch than the spec, so it needs a convergence check before anyone trains with it.
    ``note`` says why a row was not measured, failed, or what it held back. ``run_s`` is
    the seconds its run took, building and first step included (None: not started), so the
    rows show how the box was shared.
    """

    _error = ProbeError

    kind: RowKind
    knob: Knob | None
    setting: str
    config: StepConfig
    status: RowStatus
    changes_numerics: bool
    samples_per_second: float | None = None
    rel_halfwidth: float | None = None
    speedup: float | None = None
    measured_steps: int = 0
    peak_memory_gib: float | None = None
    note: str = ""
    run_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row's fields as plain values, ``run_s`` left out when None (not started), so
        rows stored before it existed write back as they were."""
        data = super().to_dict()
        if data.get("run_s") is None:
            del data["run_s"]
        return data

    @property
    def tries_batch(self) -> bool:
        """The baseline or a batch trial: the rows that say which batch sizes ran."""
        return self.kind is RowKind.BASELINE or self.knob is Knob.BATCH

    @property
    def interval(self) -> tuple[float, float] | None:
        """Samples/s at the ends of the step time's 95% interval; None without one."""
        sps, width = self.samples_per_second, self.rel_halfwidth
        if sps is None or width is None:
            return None
        return sps / (1.0 + width), (sps / (1.0 - width) if width < 1.0 else float("inf"))

    def samples_per_usd(self, price_usd_per_hour: float) -> float | None:
        """Samples per dollar at ``price_usd_per_hour`` (None when free or not measured)."""
        if self.samples_per_second is None or price_usd_per_hour <= 0:
            return None
        return samples_per_usd(self.samples_per_second, price_usd_per_hour)


def beats(row: TuneRow, baseline: TuneRow) -> bool:
    """True when ``row`` is faster than ``baseline`` beyond the noise: its interval lies
    wholly above the baseline's, or (without intervals) it is at least 10% faster."""
    if row.status is not RowStatus.MEASURED or row.speedup is None:
        return False
    mine, theirs = row.interval, baseline.interval
    if mine is not None and theirs is not None:
        return mine[0] > theirs[1]
    return row.speedup >= _NOISE_FREE_SPEEDUP


def chosen_settings(rows: tuple[TuneRow, ...]) -> dict[Knob, StepConfig]:
    """Per step knob, the configuration of its fastest trial that beats the baseline as
    measured before the trials and, where it was measured again after them, as measured
    then (so a machine that sped up meanwhile is no gain); per loader knob, the fastest
    trial that beats the real loader as given (the input row)."""
    baselines = [r for r in rows if r.kind in (RowKind.BASELINE, RowKind.RECHECK)
                 and r.status is RowStatus.MEASURED]
    given = next((r for r in rows if r.knob is Knob.INPUT and r.kind is RowKind.TRIAL), None)
    chosen: dict[Knob, TuneRow] = {}
    for row in rows:
        if row.kind is not RowKind.TRIAL or row.knob is None:
            continue
        spec = knob_spec(row.knob)
        references = ([given] if given else []) if spec.on_loader else baselines
        if not spec.settable or not references or not all(beats(row, r) for r in references):
            continue
        held = chosen.get(row.knob)
        if held is None or (row.samples_per_second or 0.0) > (held.samples_per_second or 0.0):
            chosen[row.knob] = row
    return {knob: row.config for knob, row in chosen.items()}


@dataclass(frozen=True)
class CombinationPlan:
    """A combination to measure: its configuration, its settings in words, and a note (what
    it held back)."""

    config: StepConfig
    setting: str
    note: str = ""


def combination_plans(rows: tuple[TuneRow, ...], *,
                      allow_numerics: bool) -> tuple[CombinationPlan, ...]:
    """The combinations ``rows`` (the baseline first) call for: the best on the cached batch
    without numerics changes, with them too when ``allow_numerics``, then the allowed one on
    the real loader with its best loader settings; none that is the baseline, none twice.
    Fewer rows beating the baseline (a measured recheck) never call for more."""
    chosen = chosen_settings(rows)
    baseline = rows[0].config
    combos = [combine(baseline, chosen, allow_numerics=False)]
    if allow_numerics:
        combos.append(combine(baseline, chosen, allow_numerics=True))
    has_loader = any(r.knob is Knob.INPUT and r.status is RowStatus.MEASURED for r in rows)
    workers, pin = chosen.get(Knob.LOADER_WORKERS), chosen.get(Knob.PIN_MEMORY)
    plans: list[CombinationPlan] = []
    seen = {baseline}
    for combo in combos:
        if combo.config in seen:
            continue
        seen.add(combo.config)
        held = ", ".join(chosen[k].setting(k) for k in combo.held_back)
        note = f"held back (changes numerics; --allow-numerics applies it): {held}" if held \
            else ""
        plans.append(CombinationPlan(combo.config, " + ".join(
            combo.config.setting(k) for k in combo.applied), note))
    best = combos[-1]
    if has_loader and (best.applied or workers or pin):
        on_loader = replace(best.config, cached_input=False,
                            num_workers=workers.num_workers if workers else None,
                            pin_memory=pin.pin_memory if pin else None)
        applied = [best.config.setting(k) for k in best.applied] + [
            on_loader.setting(k) for k, c in ((Knob.LOADER_WORKERS, workers),
                                              (Knob.PIN_MEMORY, pin)) if c is not None]
        plans.append(CombinationPlan(on_loader, " + ".join(["real loader", *applied])))
    return tuple(plans)


@dataclass(frozen=True)
class TuneReport(Record):
    """A tune of one probe: ``rows`` (the baseline first), the knobs that do not apply and
    why, whether numerics-changing settings were allowed into combinations, the box it ran
    in and how long it took, and the profile of the tuned configuration (None: no time or
    the profiler failed)."""

    _error = ProbeError

    rows: tuple[TuneRow, ...]
    skipped: tuple[Skipped, ...]
    allow_numerics: bool
    time_box_s: float
    elapsed_s: float
    profile: StepProfile | None = None

    @property
    def baseline(self) -> TuneRow:
        """The spec's own configuration."""
        return self.rows[0]

    def tuned(self, *, allow_numerics: bool) -> TuneRow | None:
        """The fastest measured combination on the cached batch (so comparable with a plain
        probe) that is faster than the baseline; one that changes numerics only when
        ``allow_numerics``. None when no combination gained anything."""
        found = [r for r in self.rows
                 if r.kind is RowKind.COMBINATION and r.status is RowStatus.MEASURED
                 and r.config.cached_input and (r.speedup or 0.0) > 1.0
                 and (allow_numerics or not r.changes_numerics)]
        return max(found, key=lambda r: r.samples_per_second or 0.0, default=None)

    @property
    def drift(self) -> float | None:
        """The baseline's samples/s measured after the trials over before them (1.0: the
        machine kept its speed); None when it was not measured again."""
        again = next((r for r in self.rows if r.kind is RowKind.RECHECK
                      and r.status is RowStatus.MEASURED), None)
        if again is None or not again.samples_per_second or not self.baseline.samples_per_second:
            return None
        return again.samples_per_second / self.baseline.samples_per_second

    def numerics_gains(self) -> tuple[TuneRow, ...]:
        """Per numerics-changing knob (precision, batch), its fastest trial that beats both
        baselines: gains a convergence check (and ``--allow-numerics``) would unlock."""
        chosen = chosen_settings(self.rows)
        return tuple(r for r in self.rows if r.kind is RowKind.TRIAL and r.knob in chosen
                     and knob_spec(r.knob).changes_numerics and r.config == chosen[r.knob])

    @property
    def untuned_because(self) -> str:
        """Why no combination is tuned, for a report that has none: the baseline was not
        measured or every knob was skipped for time (nothing could be compared), or no knob
        beat it beyond the noise."""
        if self.baseline.status is not RowStatus.MEASURED:
            return ("nothing compared: the baseline was not measured inside the time box; "
                    "give a longer --time-box")
        trials = [r for r in self.rows if r.kind is RowKind.TRIAL]
        if trials and all(r.status is RowStatus.NO_TIME for r in trials):
            return ("nothing compared: after the baseline the time box had no room left for "
                    "any knob; give a longer --time-box")
        return "no knob that keeps the numerics beat the baseline beyond the noise"

    def not_measured(self) -> tuple[TuneRow, ...]:
        """Rows that were not measured: started but without 3 timed steps in their window,
        or batch rungs not tried (each row's note says which)."""
        return tuple(r for r in self.rows if r.status is RowStatus.NOT_MEASURED)

    def skipped_for_time(self) -> tuple[TuneRow, ...]:
        """Rows not started because the box could no longer give them their least window."""
        return tuple(r for r in self.rows if r.status is RowStatus.NO_TIME)

    def measured(self) -> tuple[TuneRow, ...]:
        """Rows that ran and were measured."""
        return tuple(r for r in self.rows if r.status is RowStatus.MEASURED)

    def batch_reach(self) -> tuple[int, int] | None:
        """Of the baseline and the batch trials that were measured: the largest batch that
        ran and the batch with the best samples/s; None when none was measured."""
        rows = [r for r in self.measured() if r.tries_batch]
        if not rows:
            return None
        best = max(rows, key=lambda r: r.samples_per_second or 0.0)
        return max(r.config.batch_size for r in rows), best.config.batch_size
