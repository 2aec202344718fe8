"""How ``advisor probe --tune`` shares its time box between its runs (pure: no torch, no clock).

The box starts after the baseline's first step, as a plain probe's does, and keeps a reserve
at its end for the profile. The baseline is measured first and may take what it needs to
settle, up to a third of what the runs share, or up to half when a third cannot hold
``BASELINE_MIN_STEPS`` steps at its pace (its second step's: the first one compiles). That
window is a cap: the steady-state rule stops short of it on a steady step, so there it costs
the knobs nothing; on a noisy machine it keeps the baseline from taking the knobs' time. A
baseline with fewer than ``MIN_TIMED_STEPS`` timed steps at its cap goes on until it has
them or the runs' part of the box ends (the tuner's rule: nothing compares without it).
Every later run (the knobs, the baseline again, the combinations) gets an even share of what
is left, less the set-up of later runs that compile when that fits, and at least
``RUN_MIN_STEPS`` steps at the baseline's pace; a run the box can no longer give that
minimum is not started: it is skipped for time, with what it needed and what was left.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BASELINE_MAX_SHARE",
    "BASELINE_MIN_STEPS",
    "BASELINE_SHARE",
    "MIN_TIMED_STEPS",
    "RUN_MIN_STEPS",
    "RunWindow",
    "baseline_window_s",
    "kept_setup_s",
    "profile_reserve_s",
    "run_window",
]

MIN_TIMED_STEPS = 3         # a run with fewer timed steps is not measured
BASELINE_SHARE = 1 / 3      # the baseline's cap, of what the runs share
BASELINE_MAX_SHARE = 1 / 2  # ... raised to this for a slow first step
BASELINE_MIN_STEPS = 8      # the baseline's cap holds this many steps when half the box can
RUN_MIN_STEPS = 8           # a later run's least window, in steps at the baseline's pace:
                            # its first step, a warm-up of up to 40% of the rest, 4 timed
_LEAST = (RUN_MIN_STEPS - 1) / RUN_MIN_STEPS  # a run starts with one step less than that
_PROFILE_RESERVE = 0.10     # of the box, kept for the profile (1 to 30 s)


def profile_reserve_s(box_s: float) -> float:
    """Seconds kept at the end of a ``box_s`` box for the profile: a tenth, 1 to 30 s."""
    return min(30.0, max(1.0, _PROFILE_RESERVE * box_s))


def kept_setup_s(free_s: float, setup_s: float) -> float:
    """Of later runs' set-up (compiling), what is kept aside of ``free_s`` seconds: all of
    it when it fits in half, else none (those runs will find no room and are skipped)."""
    return setup_s if setup_s <= 0.5 * free_s else 0.0


def baseline_window_s(free_s: float, *, later_setup_s: float, step_s: float) -> float:
    """The baseline's measuring window (a cap), given the seconds the runs share after the
    profile's reserve, the later runs' set-up and the seconds of one of its warm steps: a
    third of what is shared, raised towards half to hold ``BASELINE_MIN_STEPS`` such steps."""
    shared = max(0.0, free_s - kept_setup_s(free_s, later_setup_s))
    wanted_s = BASELINE_MIN_STEPS * max(0.0, step_s)
    return min(BASELINE_MAX_SHARE * shared, max(BASELINE_SHARE * shared, wanted_s))


@dataclass(frozen=True)
class RunWindow:
    """A later run's measuring window in seconds (its own set-up not included; 0.0: not
    started), the least window it needed and the seconds of the box it found left."""

    window_s: float
    needed_s: float
    left_s: float

    @property
    def fits(self) -> bool:
        """True when the run gets its minimum window, less one step's grace (the run
        before may end part of a step past its own window)."""
        return self.window_s > 0.0 and self.window_s >= _LEAST * self.needed_s


def run_window(left_s: float, *, pending_runs: int, own_setup_s: float,
               later_setup_s: float, step_s: float) -> RunWindow:
    """The window of the next run, with ``left_s`` seconds of the box left for runs (the
    profile's reserve taken off), ``pending_runs`` runs to share them (this one included),
    its own set-up, the later runs' set-up and its predicted seconds per step: an even share,
    at least ``RUN_MIN_STEPS`` steps, at most what is left; 0.0 when that minimum (less one
    step) does not fit."""
    needed_s = RUN_MIN_STEPS * max(0.0, step_s)
    free_s = left_s - own_setup_s
    share_s = (free_s - kept_setup_s(free_s, later_setup_s)) / max(1, pending_runs)
    window = RunWindow(min(max(share_s, needed_s), free_s), needed_s, max(0.0, left_s))
    return window if window.fits else RunWindow(0.0, needed_s, window.left_s)
