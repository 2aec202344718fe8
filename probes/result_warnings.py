"""What a user must know before trusting one probe's figures, in one list that every view
(the ``advisor probe`` output, ``advisor probes show``, ``probe.html``) shows the same way.

Pure: a result in, sentences out (without a ``warning:`` prefix; each view adds its own).
"""

from __future__ import annotations

from probes.findings import FindingKind, findings_for
from probes.types import ProbeResult, ProbeStatus

__all__ = ["DRIFT_WARNING", "probe_warnings"]

DRIFT_WARNING = 0.10  # the baseline again vs the first, relative, past which a tune warns


def _status(result: ProbeResult) -> str:
    if result.status is ProbeStatus.OK:
        return ""
    return f"the probe ended {result.status}: {result.error}" if result.error else \
        f"the probe ended {result.status}"


def _unsettled(result: ProbeResult) -> str:
    if result.status is not ProbeStatus.OK or result.stable:
        return ""
    if result.rel_halfwidth is None:
        return ("samples/s did not settle (too few measured steps for an interval) in the time "
                "box; it is stored and used with its wide interval; a longer --time-box "
                "settles it")
    # the noisy-estimate finding's advice, said once (the probe table leaves that finding here)
    return (f"samples/s did not settle (±{result.rel_halfwidth:.1%} at 95% after "
            f"{result.measured_steps} measured steps) in the time box; it is stored and used "
            "with its wide interval; stop other work on the machine (or pick a quieter one) "
            "and probe again with a longer --time-box")


def _drift(result: ProbeResult) -> str:
    drift = result.tuning.drift if result.tuning is not None else None
    if drift is None or abs(drift - 1.0) <= DRIFT_WARNING:
        return ""
    return (f"the baseline ran at {drift:.2f}x its first speed after the trials: the machine's "
            "speed changed meanwhile (other work on it?); a knob counts only when it beats both "
            "baselines")


def _input_bound(result: ProbeResult) -> str:
    found = next((f for f in findings_for(result) if f.kind is FindingKind.INPUT_BOUND), None)
    if found is None:
        return ""
    return f"input-bound: {found.advice} ({found.evidence}; {found.expected_gain})"


def probe_warnings(result: ProbeResult) -> list[str]:
    """The warnings of ``result``, most serious first: a status other than ok (wrong device,
    oom, error, ...), samples/s that did not settle, a tune's baseline that drifted more than
    ``DRIFT_WARNING``, an input pipeline that holds the step back."""
    checks = (_status, _unsettled, _drift, _input_bound)
    return [text for text in (check(result) for check in checks) if text]
