"""Inline SVG charts: bars with error bars, scatter with a Pareto front, step lines over time,
and stacked bars.

Each chart function takes plain values and returns a frozen :class:`Chart`: every position
already mapped to pixels, every label already formatted. The markup is written by the
``charts.svg.j2`` macros (``{{ charts.draw(chart) }}`` in a page template, or
:func:`render_chart` for the SVG alone). Data marks carry ``class="mark"`` (tests count them),
each with a ``<title>`` tooltip. An empty input draws a "no data" note instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from reports._scale import Scale, compact_number
from reports.render import render

__all__ = [
    "Bar",
    "Chart",
    "Point",
    "Series",
    "StackedBar",
    "bar_chart",
    "line_chart",
    "pareto_front",
    "render_chart",
    "scatter_chart",
    "stacked_bar_chart",
]

Format = Callable[[float], str]
_FALLBACK_COLOR = "#6b7785"
_FRONT_COLOR = "#b2182b"


@dataclass(frozen=True)
class Bar:
    """One horizontal bar: ``value`` with an optional [low, high] interval; ``group`` picks
    the colour."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    group: str = ""
    title: str = ""


@dataclass(frozen=True)
class Point:
    """One scatter point; ``group`` picks the colour, ``title`` is its tooltip."""

    x: float
    y: float
    group: str = ""
    title: str = ""


@dataclass(frozen=True)
class Series:
    """A named line of (x, y) points drawn in ``color``; ``step`` holds y until the next x."""

    name: str
    points: Sequence[tuple[float, float]]
    color: str
    step: bool = True
    dashed: bool = False


@dataclass(frozen=True)
class StackedBar:
    """One bar split into named parts (drawn in the order given)."""

    label: str
    parts: Sequence[tuple[str, float]]
    fmt: Format | None = None


# What the templates draw: pixel positions (floats) and finished text.

@dataclass(frozen=True)
class Tick:
    """A tick at ``at`` pixels along its axis, labelled ``text``."""

    at: float
    text: str


@dataclass(frozen=True)
class Axis:
    """An axis line from ``start`` to ``end`` pixels, crossing the other axis at ``at``; its
    grid lines run from ``at`` to ``grid_to``."""

    horizontal: bool
    start: float
    end: float
    at: float
    grid_to: float
    label: str
    ticks: tuple[Tick, ...]

    @property
    def mid(self) -> float:
        """The middle of the axis, where its label goes."""
        return (self.start + self.end) / 2


@dataclass(frozen=True)
class Swatch:
    """A legend entry at (x, y): a colour square and its name."""

    x: float
    y: float
    name: str
    color: str


@dataclass(frozen=True)
class Chart:
    """An SVG chart ``width`` x ``height`` pixels; ``name`` goes to ``data-chart`` and
    ``label`` to ``aria-label``. ``kind`` picks the macro of ``charts.svg.j2`` that draws it."""

    kind: ClassVar[str] = "none"
    name: str
    width: int
    height: int
    label: str


@dataclass(frozen=True)
class BarRow:
    """One bar: the row's top ``y``, its ``width`` and an error bar from x1 to x2 (or None)."""

    y: float
    label: str
    width: float
    fill: str
    tip: str
    error: tuple[float, float] | None


@dataclass(frozen=True)
class BarChart(Chart):
    """Horizontal bars from ``left``, ``row`` pixels apart."""

    kind: ClassVar[str] = "bars"
    left: float
    row: float
    axis: Axis
    legend: tuple[Swatch, ...]
    rows: tuple[BarRow, ...]


@dataclass(frozen=True)
class Dot:
    """A point at (cx, cy) with its tooltip."""

    cx: float
    cy: float
    fill: str
    tip: str


@dataclass(frozen=True)
class Callout:
    """A ringed point and its label, written on the side ``anchor`` says (start/end)."""

    cx: float
    cy: float
    text: str
    anchor: str


@dataclass(frozen=True)
class ScatterChart(Chart):
    """Dots; the front as a step path (``front_path`` empty: none) with rings; callouts."""

    kind: ClassVar[str] = "scatter"
    x_axis: Axis
    y_axis: Axis
    dots: tuple[Dot, ...]
    front_path: str
    front: tuple[Dot, ...]
    callouts: tuple[Callout, ...]
    legend: tuple[Swatch, ...]


@dataclass(frozen=True)
class Line:
    """A path ``d`` drawn in ``color`` (dashed or not), its tooltip ``name``."""

    d: str
    color: str
    dashed: bool
    name: str


@dataclass(frozen=True)
class RefLine:
    """A horizontal reference line at ``y`` from ``x1`` to ``x2``, labelled at its right end."""

    y: float
    x1: float
    x2: float
    label: str
    color: str


@dataclass(frozen=True)
class LineChart(Chart):
    """Lines over x, then reference lines such as a budget."""

    kind: ClassVar[str] = "lines"
    x_axis: Axis
    y_axis: Axis
    lines: tuple[Line, ...]
    refs: tuple[RefLine, ...]
    legend: tuple[Swatch, ...]


@dataclass(frozen=True)
class Segment:
    """One part of a stacked bar from ``x``, ``width`` wide; ``text`` shown inside when it fits."""

    x: float
    width: float
    fill: str
    tip: str
    text: str | None


@dataclass(frozen=True)
class StackedRow:
    """A stacked bar whose row starts at ``y``."""

    y: float
    label: str
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class StackedChart(Chart):
    """Full-width bars from ``left``, ``row`` pixels apart, split into segments."""

    kind: ClassVar[str] = "stacked"
    left: float
    row: float
    legend: tuple[Swatch, ...]
    rows: tuple[StackedRow, ...]


def render_chart(chart: Chart) -> str:
    """The ``<svg class="chart">`` element of ``chart``, as HTML text."""
    return render("chart.html.j2", chart=chart)


def _no_data(name: str, label: str, width: int = 860) -> Chart:
    return Chart(name=name, width=width, height=60, label=label)


def _legend(items: Sequence[tuple[str, str]], x: float, y: float) -> tuple[Swatch, ...]:
    swatches = []
    for name, color in items:
        swatches.append(Swatch(x, y, name, color))
        x += 24 + 6.5 * len(name)
    return tuple(swatches)


def _axis(scale: Scale, *, horizontal: bool, at: float, grid_to: float, label: str,
          fmt: Format) -> Axis:
    ticks = tuple(Tick(scale(t), fmt(t)) for t in scale.ticks())
    return Axis(horizontal, scale.start, scale.end, at, grid_to, label, ticks)


def bar_chart(bars: Sequence[Bar], *, x_label: str, colors: Mapping[str, str],
              name: str = "bars", width: int = 860, fmt: Format = compact_number) -> Chart:
    """Horizontal bars from zero, one row per bar, with error bars where low/high are set."""
    if not bars:
        return _no_data(name, x_label, width)
    left, right, top, row = 280.0, width - 70.0, 30.0, 20.0
    bottom = top + row * len(bars)
    scale = Scale.fit([b.high if b.high is not None else b.value for b in bars], left, right,
                      zero=True, pad=0.02)
    rows = tuple(BarRow(
        y=top + i * row, label=bar.label if len(bar.label) <= 44 else bar.label[:43] + "…",
        width=max(scale(bar.value) - left, 0.5), fill=colors.get(bar.group, _FALLBACK_COLOR),
        tip=bar.title or f"{bar.label}: {fmt(bar.value)}",
        error=(scale(bar.low), scale(bar.high))
        if bar.low is not None and bar.high is not None else None) for i, bar in enumerate(bars))
    legend = _legend([(g, colors.get(g, _FALLBACK_COLOR)) for g in
                      dict.fromkeys(b.group for b in bars) if g], left, 16)
    return BarChart(name=name, width=width, height=int(bottom + 45), label=x_label, left=left,
                    row=row, axis=_axis(scale, horizontal=True, at=bottom, grid_to=top,
                                        label=x_label, fmt=fmt),
                    legend=legend, rows=rows)


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """Points no other point beats on both x and y (smaller is better), by increasing x."""
    front: list[Point] = []
    best_y = float("inf")
    for point in sorted(points, key=lambda p: (p.x, p.y)):
        if point.y < best_y:
            front.append(point)
            best_y = point.y
    return front


def _f(value: float) -> str:
    return f"{value:.1f}"


def scatter_chart(points: Sequence[Point], *, x_label: str, y_label: str,
                  colors: Mapping[str, str], name: str = "scatter", width: int = 860,
                  height: int = 440, log_x: bool = False, log_y: bool = False,
                  front: Sequence[Point] = (), front_label: str = "Pareto front",
                  highlight: Sequence[tuple[Point, str]] = (), fmt_x: Format = compact_number,
                  fmt_y: Format = compact_number) -> Chart:
    """Points coloured by group; ``front`` joined by a step line; ``highlight`` ringed and
    labelled."""
    if not points:
        return _no_data(name, f"{y_label} against {x_label}", width)
    left, right, top, bottom = 92.0, width - 30.0, 30.0, height - 50.0
    xs = Scale.fit([p.x for p in points], left, right, log=log_x)
    ys = Scale.fit([p.y for p in points], bottom, top, log=log_y)
    dots = tuple(Dot(xs(p.x), ys(p.y), colors.get(p.group, _FALLBACK_COLOR),
                     p.title or f"{fmt_x(p.x)}, {fmt_y(p.y)}") for p in points)
    ordered = sorted(front, key=lambda p: p.x)
    path = "".join([f"M{_f(xs(ordered[0].x))} {_f(ys(ordered[0].y))}"]
                   + [f"H{_f(xs(p.x))}V{_f(ys(p.y))}" for p in ordered[1:]]) if ordered else ""
    rings = tuple(Dot(xs(p.x), ys(p.y), "none", f"Pareto front: {p.title}") for p in ordered)
    callouts = tuple(Callout(xs(p.x), ys(p.y), text,
                             "end" if xs(p.x) > (left + right) / 2 else "start")
                     for p, text in highlight)
    groups = [(g, colors.get(g, _FALLBACK_COLOR)) for g in dict.fromkeys(p.group for p in points)
              if g]
    if front:
        groups.append((front_label, _FRONT_COLOR))
    return ScatterChart(
        name=name, width=width, height=height, label=f"{y_label} against {x_label}",
        x_axis=_axis(xs, horizontal=True, at=bottom, grid_to=top, fmt=fmt_x,
                     label=x_label + (" (log scale)" if log_x else "")),
        y_axis=_axis(ys, horizontal=False, at=left, grid_to=right, fmt=fmt_y,
                     label=y_label + (" (log scale)" if log_y else "")),
        dots=dots, front_path=path, front=rings, callouts=callouts,
        legend=_legend(groups, left, 16))


def line_chart(series: Sequence[Series], *, x_label: str, y_label: str,
               hlines: Sequence[tuple[float, str, str]] = (), name: str = "lines",
               width: int = 860, height: int = 360, fmt_x: Format = compact_number,
               fmt_y: Format = compact_number) -> Chart:
    """Lines over x; ``hlines`` are (y, label, colour) reference lines such as a budget."""
    points = [pt for s in series for pt in s.points]
    if not points:
        return _no_data(name, f"{y_label} against {x_label}", width)
    left, right, top, bottom = 92.0, width - 30.0, 30.0, height - 50.0
    xs = Scale.fit([x for x, _ in points], left, right, zero=True, pad=0.02)
    ys = Scale.fit([y for _, y in points] + [h for h, _, _ in hlines], bottom, top, zero=True)
    lines = []
    for s in series:
        if not s.points:
            continue
        first_x, first_y = s.points[0]
        d = [f"M{_f(xs(first_x))} {_f(ys(first_y))}"]
        for x, y in s.points[1:]:
            d.append(f"H{_f(xs(x))}V{_f(ys(y))}" if s.step else f"L{_f(xs(x))} {_f(ys(y))}")
        lines.append(Line("".join(d), s.color, s.dashed, s.name))
    refs = tuple(RefLine(ys(value), left, right, label, color) for value, label, color in hlines)
    return LineChart(
        name=name, width=width, height=height, label=f"{y_label} against {x_label}",
        x_axis=_axis(xs, horizontal=True, at=bottom, grid_to=top, label=x_label, fmt=fmt_x),
        y_axis=_axis(ys, horizontal=False, at=left, grid_to=right, label=y_label, fmt=fmt_y),
        lines=tuple(lines), refs=refs, legend=_legend([(s.name, s.color) for s in series], left, 16))


def _segments(bar: StackedBar, colors: Mapping[str, str], left: float, right: float,
              fmt: Format) -> tuple[Segment, ...]:
    total = sum(v for _, v in bar.parts)
    segments, x = [], left
    for part, value in bar.parts:
        if value <= 0 or total <= 0:
            continue
        w = (right - left) * value / total
        shown = (bar.fmt or fmt)(value)
        text = f"{part} {shown}"
        segments.append(Segment(x, w, colors.get(part, _FALLBACK_COLOR),
                                f"{bar.label}, {part}: {shown} ({value / total:.0%})",
                                text if w > 6.5 * len(text) + 10 else None))
        x += w
    return tuple(segments)


def stacked_bar_chart(bars: Sequence[StackedBar], *, colors: Mapping[str, str],
                      name: str = "stacked", width: int = 860,
                      fmt: Format = compact_number) -> Chart:
    """One full-width bar per entry, split by part in proportion to its share of the total."""
    if not bars or all(sum(v for _, v in b.parts) <= 0 for b in bars):
        return _no_data(name, "shares", width)
    left, right, top, row = 150.0, width - 20.0, 30.0, 34.0
    rows = tuple(StackedRow(top + i * row, bar.label, _segments(bar, colors, left, right, fmt))
                 for i, bar in enumerate(bars))
    legend = _legend([(p, colors.get(p, _FALLBACK_COLOR))
                      for p in dict.fromkeys(p for b in bars for p, _ in b.parts)], left, 16)
    return StackedChart(name=name, width=width, height=int(top + row * len(bars) + 10),
                        label="shares", left=left, row=row, legend=legend, rows=rows)
