"""CSV and self-contained HTML cost reports (pure: values in, files out).

- ``reports.recommendation``: ``write_recommendation_report(rec, out_dir, baseline=...)``
  writes ``recommendation.html`` (charts, savings, rejected offers, assumptions),
  ``recommendation.csv`` (one row per offer, see ``reports.recommendation_csv``) and
  ``recommendation.columns.md`` (columns and units).
- ``reports.sweep``: ``write_sweep_report(data, out_dir)`` does the same for a sweep
  (``sweep.html``, one row per trial in ``sweep.csv``) from the sweep's read model,
  ``advisor.sweep.SweepStatus`` (``advisor.sweep.load_sweep_report_data`` reads a study).
- ``reports.render`` and ``reports/templates``: the Jinja2 environment (autoescaping on) and
  the page templates; ``reports.charts`` lays out the inline SVG charts the templates draw.
- ``reports.pdf``: optional PDF through headless Chromium.

Every HTML page is one file: inline CSS, inline SVG, no scripts, no fonts, no URLs, and a
Content-Security-Policy that forbids fetching anything.
"""
