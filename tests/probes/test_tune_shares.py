"""How the tune's box is shared (``probes.tune.shares``, pure): the baseline's cap, the later
runs' windows, the skip for time, and the ``--tune`` help that states the same rule."""

from __future__ import annotations

import pytest

from cli._tune_table import tune_options
from probes.tune.shares import (
    BASELINE_MAX_SHARE,
    BASELINE_MIN_STEPS,
    BASELINE_SHARE,
    MIN_TIMED_STEPS,
    RUN_MIN_STEPS,
    baseline_window_s,
    kept_setup_s,
    profile_reserve_s,
    run_window,
)


@pytest.mark.parametrize(("step_s", "expected_share"), [
    (0.01, BASELINE_SHARE),      # a fast step: a third is plenty, and only a cap
    (1e9, BASELINE_MAX_SHARE),   # a very slow step: never more than half
])
def test_the_baseline_gets_a_third_raised_at_most_to_half(step_s: float,
                                                          expected_share: float) -> None:
    assert baseline_window_s(90.0, later_setup_s=0.0, step_s=step_s) == \
        pytest.approx(expected_share * 90.0)


def test_a_slow_step_raises_the_baseline_to_its_least_steps() -> None:
    free_s = 36.0
    step_s = 1.1 * BASELINE_SHARE * free_s / BASELINE_MIN_STEPS  # a third holds fewer steps
    window_s = baseline_window_s(free_s, later_setup_s=0.0, step_s=step_s)
    assert BASELINE_SHARE * free_s < window_s <= BASELINE_MAX_SHARE * free_s
    assert window_s == pytest.approx(BASELINE_MIN_STEPS * step_s)


def test_later_compiling_is_kept_aside_only_when_it_fits_in_half() -> None:
    assert kept_setup_s(300.0, 120.0) == 120.0
    assert kept_setup_s(36.0, 60.0) == 0.0  # the compiler will be skipped: keep nothing
    kept = baseline_window_s(300.0, later_setup_s=120.0, step_s=0.01)
    dropped = baseline_window_s(36.0, later_setup_s=60.0, step_s=0.01)
    assert kept == pytest.approx(BASELINE_SHARE * 180.0)
    assert dropped == pytest.approx(BASELINE_SHARE * 36.0)


def test_a_later_run_gets_an_even_share_when_it_holds_its_least_steps() -> None:
    window = run_window(24.0, pending_runs=4, own_setup_s=0.0, later_setup_s=0.0, step_s=0.05)
    assert window.fits and window.window_s == pytest.approx(6.0)
    assert window.needed_s == pytest.approx(RUN_MIN_STEPS * 0.05)


def test_a_later_run_gets_its_least_steps_over_an_even_share() -> None:
    step_s = 1.5
    window = run_window(24.0, pending_runs=6, own_setup_s=0.0, later_setup_s=0.0,
                        step_s=step_s)
    assert window.fits and window.window_s == pytest.approx(RUN_MIN_STEPS * step_s)


@pytest.mark.parametrize(("left_steps", "fits"), [
    (RUN_MIN_STEPS, True),
    (RUN_MIN_STEPS - 0.5, True),   # the run before overran its window by half a step
    (RUN_MIN_STEPS - 1.5, False),  # more than a step short: not started
])
def test_a_run_starts_with_at_most_one_step_of_its_least_window_missing(
        left_steps: float, fits: bool) -> None:
    window = run_window(left_steps * 2.0, pending_runs=3, own_setup_s=0.0,
                        later_setup_s=0.0, step_s=2.0)
    assert window.fits is fits
    assert (window.window_s > 0.0) is fits
    assert window.left_s == pytest.approx(left_steps * 2.0)  # said in the skip's note


def test_a_run_that_compiles_needs_room_for_its_set_up_too() -> None:
    window = run_window(33.0, pending_runs=1, own_setup_s=60.0, later_setup_s=0.0,
                        step_s=0.01)
    assert not window.fits and window.window_s == 0.0


@pytest.mark.parametrize(("box_s", "reserve_s"), [
    (5.0, 1.0),       # at least a second
    (40.0, 4.0),      # a tenth
    (3000.0, 30.0),   # at most 30 s
])
def test_the_profile_keeps_a_tenth_of_the_box(box_s: float, reserve_s: float) -> None:
    assert profile_reserve_s(box_s) == pytest.approx(reserve_s)


def test_the_tune_help_states_the_shares_as_they_are() -> None:
    def command() -> None:
        """A stand-in command."""

    decorated = tune_options(command)
    params = decorated.__click_params__  # type: ignore[attr-defined]
    (tune,) = [p for p in params if p.name == "tune"]
    words = {1 / 3: "a third", 1 / 2: "half"}
    assert f"at most {words[BASELINE_SHARE]} of the rest" in tune.help
    assert f"({words[BASELINE_MAX_SHARE]} when its steps are slow; longer only until " \
        f"{MIN_TIMED_STEPS} steps are timed" in tune.help
    assert f"at least {RUN_MIN_STEPS} steps" in tune.help and "skipped for time" in tune.help
