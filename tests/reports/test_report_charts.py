"""SVG charts: Pareto front, scales, and what gets drawn."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from reports._scale import Scale, nice_ticks
from reports.charts import (
    Bar,
    Point,
    Series,
    StackedBar,
    bar_chart,
    line_chart,
    pareto_front,
    render_chart,
    scatter_chart,
    stacked_bar_chart,
)

_coords = st.floats(min_value=0.01, max_value=1e6, allow_nan=False)


@given(st.lists(st.tuples(_coords, _coords), min_size=1, max_size=60))
def test_pareto_front_is_exactly_the_undominated_points(pairs: list[tuple[float, float]]) -> None:
    points = [Point(x, y) for x, y in pairs]
    front = pareto_front(points)

    def dominated(p: Point) -> bool:
        return any(q.x <= p.x and q.y <= p.y and (q.x, q.y) != (p.x, p.y) for q in points)

    assert all(not dominated(p) for p in front)
    coords = {(p.x, p.y) for p in front}
    assert all(dominated(p) or (p.x, p.y) in coords for p in points)
    assert [p.x for p in front] == sorted(p.x for p in front)


@given(st.floats(-1e6, 1e6), st.floats(1e-3, 1e6))
def test_nice_ticks_cover_the_interval(low: float, span: float) -> None:
    ticks = nice_ticks(low, low + span)
    slop = 1e-6 * span  # rounding of a tick to the interval's end is allowed
    assert ticks[0] <= low + slop and ticks[-1] >= low + span - slop
    assert 2 <= len(ticks) <= 12


def test_log_scale_maps_decades_evenly() -> None:
    scale = Scale(1.0, 1000.0, 0.0, 300.0, log=True)
    assert [scale(v) for v in (1, 10, 100, 1000)] == [0.0, 100.0, 200.0, 300.0]
    assert scale.ticks()[:3] == [1.0, 2.0, 5.0]


def test_scale_fit_includes_every_value() -> None:
    values = [3.0, 132e6, 50e6]
    scale = Scale.fit(values, 0, 100, zero=True)
    assert scale.low <= 0 and scale.high >= 132e6 and not math.isnan(scale(132e6))


def test_bar_chart_draws_bars_and_error_bars() -> None:
    svg = render_chart(bar_chart([Bar("a", 10, 8, 12, "measured"), Bar("b", 5)], x_label="x",
                                 colors={"measured": "#000"}))
    assert svg.count('class="mark"') == 2 and svg.count('class="errorbar"') == 1
    assert 'fill="#000"' in svg


def test_scatter_marks_the_front_and_highlights() -> None:
    points = [Point(1, 5), Point(2, 2), Point(3, 3)]
    svg = render_chart(scatter_chart(points, x_label="h", y_label="$", colors={},
                                     front=pareto_front(points),
                                     highlight=[(points[1], "top pick")], log_x=True))
    assert svg.count('class="mark"') == 3 and svg.count("front-point") == 2
    assert "top pick" in svg and "(log scale)" in svg


def test_line_chart_draws_budget_line() -> None:
    svg = render_chart(line_chart([Series("spent", [(0, 0), (1, 2)], "#00f")], x_label="h",
                                  y_label="$", hlines=[(5.0, "budget $5", "#f00")]))
    assert svg.count('class="mark"') == 2 and "budget $5" in svg


def test_stacked_bars_split_by_share() -> None:
    svg = render_chart(stacked_bar_chart([StackedBar("trials", [("done", 3.0), ("pruned", 1.0)])],
                                         colors={}, width=420))
    assert svg.count('class="mark"') == 2
    assert "(75%)" in svg and "(25%)" in svg


def test_empty_inputs_draw_a_note() -> None:
    assert "no data" in render_chart(bar_chart([], x_label="x", colors={}))
    assert "no data" in render_chart(scatter_chart([], x_label="x", y_label="y", colors={}))
    assert "no data" in render_chart(line_chart([], x_label="x", y_label="y"))
    assert "no data" in render_chart(stacked_bar_chart([], colors={}))


def test_chart_text_is_escaped() -> None:
    # labels and tooltips come from the data (offer keys, trial params): autoescaped in the SVG
    svg = render_chart(bar_chart([Bar("<script>a</script>", 1.0, title='x" onload="y')],
                                 x_label="<b>x</b>", colors={}))
    assert "<script>" not in svg and "<b>" not in svg and '" onload="' not in svg
    assert "&lt;script&gt;a&lt;/script&gt;" in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
