"""Inline SVG charts drawn by our own code: bars with error bars, scatter with a Pareto front,
step lines over time, and stacked bars.

Every function takes plain values and returns :class:`~reports.html.Markup` holding one
``<svg class="chart">``. Data marks carry ``class="mark"`` (tests count them), each with a
``<title>`` tooltip. An empty input draws a "no data" note instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reports._scale import Scale, compact_number
from reports.html import Child, Markup, el

__all__ = [
    "Bar",
    "Point",
    "Series",
    "StackedBar",
    "bar_chart",
    "line_chart",
    "pareto_front",
    "scatter_chart",
    "stacked_bar_chart",
]

Format = Callable[[float], str]
_FALLBACK_COLOR = "#6b7785"


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


def _f(value: float) -> str:
    return f"{value:.1f}"


def _svg(name: str, width: int, height: int, *children: Child, label: str) -> Markup:
    return el("svg", {"class": "chart", "data-chart": name, "role": "img", "aria-label": label,
                      "viewBox": f"0 0 {width} {height}", "width": width, "height": height,
                      "xmlns": "http://www.w3.org/2000/svg"}, *children)


def _no_data(name: str, label: str, width: int = 860) -> Markup:
    return _svg(name, width, 60, el("text", {"x": 20, "y": 35, "class": "muted"},
                                    f"{label}: no data"), label=label)


def _legend(items: Sequence[tuple[str, str]], x: float, y: float) -> Markup:
    parts: list[Markup] = []
    for name, color in items:
        parts.append(el("rect", {"x": _f(x), "y": _f(y - 9), "width": 10, "height": 10,
                                 "fill": color}))
        parts.append(el("text", {"x": _f(x + 14), "y": _f(y)}, name))
        x += 24 + 6.5 * len(name)
    return el("g", {"class": "legend"}, parts)


def _x_axis(scale: Scale, y: float, top: float, label: str, fmt: Format) -> Markup:
    ticks = scale.ticks()
    grid = [el("line", {"x1": _f(scale(t)), "x2": _f(scale(t)), "y1": _f(top), "y2": _f(y)})
            for t in ticks]
    labels = [el("text", {"x": _f(scale(t)), "y": _f(y + 14), "text-anchor": "middle"}, fmt(t))
              for t in ticks]
    mid = (scale.start + scale.end) / 2
    return el("g", None, el("g", {"class": "grid"}, grid),
              el("g", {"class": "axis"},
                 el("line", {"x1": _f(scale.start), "x2": _f(scale.end), "y1": _f(y),
                             "y2": _f(y)}),
                 labels, el("text", {"x": _f(mid), "y": _f(y + 32), "text-anchor": "middle"},
                            label)))


def _y_axis(scale: Scale, x: float, right: float, label: str, fmt: Format) -> Markup:
    ticks = scale.ticks()
    grid = [el("line", {"x1": _f(x), "x2": _f(right), "y1": _f(scale(t)), "y2": _f(scale(t))})
            for t in ticks]
    labels = [el("text", {"x": _f(x - 6), "y": _f(scale(t) + 4), "text-anchor": "end"}, fmt(t))
              for t in ticks]
    mid = (scale.start + scale.end) / 2
    return el("g", None, el("g", {"class": "grid"}, grid),
              el("g", {"class": "axis"},
                 el("line", {"x1": _f(x), "x2": _f(x), "y1": _f(scale.start),
                             "y2": _f(scale.end)}),
                 labels, el("text", {"transform": f"translate({_f(x - 66)},{_f(mid)}) rotate(-90)",
                                     "text-anchor": "middle"}, label)))


def bar_chart(bars: Sequence[Bar], *, x_label: str, colors: Mapping[str, str],
              name: str = "bars", width: int = 860, fmt: Format = compact_number) -> Markup:
    """Horizontal bars from zero, one row per bar, with error bars where low/high are set."""
    if not bars:
        return _no_data(name, x_label, width)
    left, right, top, row = 280.0, width - 70.0, 30.0, 20.0
    bottom = top + row * len(bars)
    height = int(bottom + 45)
    scale = Scale.fit([b.high if b.high is not None else b.value for b in bars], left, right,
                      zero=True, pad=0.02)
    marks: list[Markup] = []
    for i, bar in enumerate(bars):
        y = top + i * row
        color = colors.get(bar.group, _FALLBACK_COLOR)
        label = bar.label if len(bar.label) <= 44 else bar.label[:43] + "…"
        tip = bar.title or f"{bar.label}: {fmt(bar.value)}"
        marks.append(el("text", {"x": _f(left - 6), "y": _f(y + row * 0.68),
                                 "text-anchor": "end"}, label))
        marks.append(el("rect", {"class": "mark", "x": _f(left), "y": _f(y + 3),
                                 "width": _f(max(scale(bar.value) - left, 0.5)),
                                 "height": _f(row - 6), "fill": color},
                        el("title", None, tip)))
        if bar.low is not None and bar.high is not None:
            x1, x2, cy = scale(bar.low), scale(bar.high), y + row / 2
            marks.append(el("path", {"class": "errorbar", "stroke": "#1d2430",
                                     "stroke-width": 1.2, "fill": "none",
                                     "d": f"M{_f(x1)} {_f(cy - 4)}v8M{_f(x1)} {_f(cy)}"
                                          f"H{_f(x2)}M{_f(x2)} {_f(cy - 4)}v8"}))
    legend = _legend([(g, colors.get(g, _FALLBACK_COLOR)) for g in
                      dict.fromkeys(b.group for b in bars) if g], left, 16)
    return _svg(name, width, height, _x_axis(scale, bottom, top, x_label, fmt), legend, marks,
                label=x_label)


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """Points no other point beats on both x and y (smaller is better), by increasing x."""
    front: list[Point] = []
    best_y = float("inf")
    for point in sorted(points, key=lambda p: (p.x, p.y)):
        if point.y < best_y:
            front.append(point)
            best_y = point.y
    return front


def scatter_chart(points: Sequence[Point], *, x_label: str, y_label: str,
                  colors: Mapping[str, str], name: str = "scatter", width: int = 860,
                  height: int = 440, log_x: bool = False, log_y: bool = False,
                  front: Sequence[Point] = (), front_label: str = "Pareto front",
                  highlight: Sequence[tuple[Point, str]] = (), fmt_x: Format = compact_number,
                  fmt_y: Format = compact_number) -> Markup:
    """Points coloured by group; ``front`` joined by a step line; ``highlight`` ringed and
    labelled."""
    if not points:
        return _no_data(name, f"{y_label} against {x_label}", width)
    left, right, top, bottom = 92.0, width - 30.0, 30.0, height - 50.0
    xs = Scale.fit([p.x for p in points], left, right, log=log_x)
    ys = Scale.fit([p.y for p in points], bottom, top, log=log_y)
    marks = [el("circle", {"class": "mark", "cx": _f(xs(p.x)), "cy": _f(ys(p.y)), "r": 3.2,
                           "fill": colors.get(p.group, _FALLBACK_COLOR), "fill-opacity": 0.65},
                el("title", None, p.title or f"{fmt_x(p.x)}, {fmt_y(p.y)}"))
             for p in points]
    overlay: list[Markup] = []
    if front:
        ordered = sorted(front, key=lambda p: p.x)
        path = f"M{_f(xs(ordered[0].x))} {_f(ys(ordered[0].y))}" + "".join(
            f"H{_f(xs(p.x))}V{_f(ys(p.y))}" for p in ordered[1:])
        overlay.append(el("path", {"class": "front", "d": path, "fill": "none",
                                   "stroke": "#b2182b", "stroke-width": 1.5}))
        overlay += [el("circle", {"class": "mark front-point", "cx": _f(xs(p.x)),
                                  "cy": _f(ys(p.y)), "r": 4.5, "fill": "none",
                                  "stroke": "#b2182b", "stroke-width": 1.6},
                       el("title", None, f"Pareto front: {p.title}"))
                    for p in ordered]
    for point, text in highlight:
        cx, cy = xs(point.x), ys(point.y)
        overlay.append(el("circle", {"class": "highlight", "cx": _f(cx), "cy": _f(cy), "r": 8,
                                     "fill": "none", "stroke": "#1d2430", "stroke-width": 2}))
        anchor = "end" if cx > (left + right) / 2 else "start"
        dx = -11 if anchor == "end" else 11
        overlay.append(el("text", {"x": _f(cx + dx), "y": _f(cy - 10), "text-anchor": anchor,
                                   "font-weight": 600}, text))
    groups = [(g, colors.get(g, _FALLBACK_COLOR)) for g in dict.fromkeys(p.group for p in points)
              if g]
    if front:
        groups.append((front_label, "#b2182b"))
    return _svg(name, width, height,
                _x_axis(xs, bottom, top, x_label + (" (log scale)" if log_x else ""), fmt_x),
                _y_axis(ys, left, right, y_label + (" (log scale)" if log_y else ""), fmt_y),
                el("g", None, marks), el("g", None, overlay), _legend(groups, left, 16),
                label=f"{y_label} against {x_label}")


def line_chart(series: Sequence[Series], *, x_label: str, y_label: str,
               hlines: Sequence[tuple[float, str, str]] = (), name: str = "lines",
               width: int = 860, height: int = 360, fmt_x: Format = compact_number,
               fmt_y: Format = compact_number) -> Markup:
    """Lines over x; ``hlines`` are (y, label, colour) reference lines such as a budget."""
    points = [pt for s in series for pt in s.points]
    if not points:
        return _no_data(name, f"{y_label} against {x_label}", width)
    left, right, top, bottom = 92.0, width - 30.0, 30.0, height - 50.0
    xs = Scale.fit([x for x, _ in points], left, right, zero=True, pad=0.02)
    ys = Scale.fit([y for _, y in points] + [h for h, _, _ in hlines], bottom, top, zero=True)
    lines: list[Markup] = []
    for s in series:
        if not s.points:
            continue
        first_x, first_y = s.points[0]
        d = [f"M{_f(xs(first_x))} {_f(ys(first_y))}"]
        for x, y in s.points[1:]:
            d.append(f"H{_f(xs(x))}V{_f(ys(y))}" if s.step else f"L{_f(xs(x))} {_f(ys(y))}")
        lines.append(el("path", {"class": "mark", "d": "".join(d), "fill": "none",
                                 "stroke": s.color, "stroke-width": 2,
                                 "stroke-dasharray": "6 4" if s.dashed else None},
                        el("title", None, s.name)))
    for value, label, color in hlines:
        y = ys(value)
        lines.append(el("line", {"class": "mark", "x1": _f(left), "x2": _f(right), "y1": _f(y),
                                 "y2": _f(y), "stroke": color, "stroke-width": 1.5,
                                 "stroke-dasharray": "4 3"}, el("title", None, label)))
        lines.append(el("text", {"x": _f(right - 4), "y": _f(y - 5), "text-anchor": "end"},
                        label))
    legend = _legend([(s.name, s.color) for s in series], left, 16)
    return _svg(name, width, height, _x_axis(xs, bottom, top, x_label, fmt_x),
                _y_axis(ys, left, right, y_label, fmt_y), lines, legend,
                label=f"{y_label} against {x_label}")


def stacked_bar_chart(bars: Sequence[StackedBar], *, colors: Mapping[str, str],
                      name: str = "stacked", width: int = 860,
                      fmt: Format = compact_number) -> Markup:
    """One full-width bar per entry, split by part in proportion to its share of the total."""
    if not bars or all(sum(v for _, v in b.parts) <= 0 for b in bars):
        return _no_data(name, "shares", width)
    left, right, top, row = 150.0, width - 20.0, 30.0, 34.0
    height = int(top + row * len(bars) + 10)
    marks: list[Markup] = []
    for i, bar in enumerate(bars):
        y = top + i * row
        total = sum(v for _, v in bar.parts)
        marks.append(el("text", {"x": _f(left - 8), "y": _f(y + row * 0.55), "text-anchor": "end"},
                        bar.label))
        x = left
        for part, value in bar.parts:
            if value <= 0 or total <= 0:
                continue
            w = (right - left) * value / total
            marks.append(el("rect", {"class": "mark", "x": _f(x), "y": _f(y + 4), "width": _f(w),
                                     "height": _f(row - 10),
                                     "fill": colors.get(part, _FALLBACK_COLOR)},
                            el("title", None, f"{bar.label}, {part}: {(bar.fmt or fmt)(value)} "
                                              f"({value / total:.0%})")))
            text = f"{part} {(bar.fmt or fmt)(value)}"
            if w > 6.5 * len(text) + 10:
                marks.append(el("text", {"x": _f(x + 5), "y": _f(y + row * 0.55),
                                         "style": "fill:#fff"}, text))
            x += w
    legend = _legend([(p, colors.get(p, _FALLBACK_COLOR))
                      for p in dict.fromkeys(p for b in bars for p, _ in b.parts)], left, 16)
    return _svg(name, width, height, legend, marks, label="shares")
