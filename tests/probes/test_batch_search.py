"""The largest-batch search on a simulated device: memory = fixed + per-sample x batch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes.batch_search import is_tight, search_largest_batch


class _Device:
    """Fits while fixed + per_sample x batch stays under the limit (peaks reported or not)."""

    def __init__(self, limit_gib: float, *, fixed_gib: float = 1.0, per_sample_gib: float = 0.01,
                 reports_peak: bool = True) -> None:
        self.limit_gib, self.fixed, self.per_sample = limit_gib, fixed_gib, per_sample_gib
        self.reports_peak = reports_peak
        self.tried: list[int] = []

    def limit(self) -> int:
        return int((self.limit_gib - self.fixed) / self.per_sample)

    def __call__(self, batch: int) -> tuple[bool, float | None]:
        self.tried.append(batch)
        peak = self.fixed + self.per_sample * batch
        if peak > self.limit_gib:
            return False, None
        return True, peak if self.reports_peak else None


@pytest.mark.parametrize(("start", "limit_gib", "reports_peak"), [
    (256, 80.0, True),     # an H100-like card: doubles 256 -> 8192, narrows below 7900
    (256, 80.0, False),    # no memory readings (XLA): plain bisection
    (4096, 11.0, True),    # starts above the limit: halves, then narrows upward
    (1, 1.5, True),        # starts at batch 1
])
def test_search_brackets_the_limit_tightly(start: int, limit_gib: float,
                                           reports_peak: bool) -> None:
    device = _Device(limit_gib, reports_peak=reports_peak)
    fits = device(start)[0]
    found = search_largest_batch(device, start=start, start_fits=fits, limit_gib=limit_gib)
    assert found.complete
    assert found.largest_fit is not None and found.smallest_failure is not None
    assert found.largest_fit <= device.limit() < found.smallest_failure
    assert is_tight(found.largest_fit, found.smallest_failure)


def test_peak_guesses_need_fewer_trials_than_bisection() -> None:
    guided, blind = _Device(80.0), _Device(80.0, reports_peak=False)
    with_peaks = search_largest_batch(guided, start=256, start_fits=True, start_peak_gib=3.56,
                                      limit_gib=80.0)
    without = search_largest_batch(blind, start=256, start_fits=True, limit_gib=80.0)
    assert with_peaks.trials < without.trials
    assert with_peaks.largest_fit_peak_gib == pytest.approx(1.0 + 0.01 * with_peaks.largest_fit)


def test_nothing_fits_is_a_complete_answer() -> None:
    found = search_largest_batch(lambda _b: (False, None), start=8, start_fits=False)
    assert found.largest_fit is None and found.smallest_failure == 1 and found.complete


def test_the_batch_cap_leaves_a_lower_bound() -> None:
    found = search_largest_batch(_Device(1e9), start=256, start_fits=True, max_batch=4096)
    assert found.largest_fit == 4096 and found.smallest_failure is None
    assert not found.complete


def test_running_out_of_time_keeps_what_was_found() -> None:
    calls = iter(range(100))
    found = search_largest_batch(_Device(80.0), start=256, start_fits=True,
                                 out_of_time=lambda: next(calls) >= 2)
    assert found.largest_fit == 1024 and not found.complete


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 4096))
def test_exact_search_finds_the_largest_fit_up_to_the_cap(limit: int, max_batch: int) -> None:
    # memory model: 1 GiB per sample against a ``limit`` GiB device, batches up to max_batch
    found = search_largest_batch(lambda b: (b <= limit, float(b)), start=1, start_fits=True,
                                 limit_gib=float(limit), max_batch=max_batch, exact=True)
    assert found.largest_fit == min(limit, max_batch) and found.complete


def test_an_attempts_garbage_is_collected_while_what_was_alive_stays_frozen() -> None:
    import gc
    import weakref

    from probes.train_step import young_garbage_only

    class Node:
        pass

    alive = Node()
    with young_garbage_only():
        assert gc.get_freeze_count() > 0  # what was alive on entry is out of the collector
        cycle = Node()
        cycle.me = cycle  # type: ignore[attr-defined]  # freed by the collector only
        gone = weakref.ref(cycle)
        del cycle
        gc.collect()
        assert gone() is None
    assert gc.get_freeze_count() == 0 and alive is not None
