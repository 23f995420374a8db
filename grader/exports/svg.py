"""A small kit for self-contained SVG charts: round ticks, axes (linear or log2 x), a frame,
a legend, line charts and labelled dot charts. Knows nothing of grading; the HTML report
(html.py) draws with it."""

from __future__ import annotations

import html
import math
from typing import Any

W, H = 640, 300  # a plot's size in SVG units
M_LEFT, M_RIGHT, M_TOP, M_BOTTOM = 64, 132, 34, 46
BASE = "#b45309"  # a dashed reference line (a baseline, a ceiling)
EPS = 1e-6


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = [round(start, 10)]
    while ticks[-1] < hi - step * 1e-6:  # the last tick is at or above hi
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def fmt_tick(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:g}" if abs(v) >= 0.01 else f"{v:.1e}"


class Axes:
    """Maps data to the plot area; x linear or log2, y linear from its lowest tick."""

    def __init__(self, xs: list[float], ys: list[float], log2x: bool = False,
                 y_zero: bool = True, x_range: tuple[float, float] | None = None) -> None:
        self.log2x = log2x
        if x_range:
            self.x0, self.x1 = x_range
        elif log2x:
            self.x0 = 2 ** math.floor(math.log2(min(xs)))
            self.x1 = 2 ** math.ceil(math.log2(max(xs)))
        else:
            self.x0, self.x1 = min(xs), max(xs)
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1
        lo = 0.0 if y_zero else min(ys)
        self.yticks = nice_ticks(min(lo, min(ys)), max(ys) * 1.05 if max(ys) > 0 else 1.0)
        self.y0, self.y1 = self.yticks[0], self.yticks[-1]

    def x(self, v: float) -> float:
        if self.log2x:
            frac = (math.log2(v) - math.log2(self.x0)) / (math.log2(self.x1) - math.log2(self.x0))
        else:
            frac = (v - self.x0) / (self.x1 - self.x0)
        return M_LEFT + frac * (W - M_LEFT - M_RIGHT)

    def y(self, v: float) -> float:
        frac = (v - self.y0) / ((self.y1 - self.y0) or 1.0)
        return H - M_BOTTOM - frac * (H - M_TOP - M_BOTTOM)

    def xticks(self) -> list[float]:
        if self.log2x:
            return [2.0 ** k for k in range(int(math.log2(self.x0)), int(math.log2(self.x1)) + 1)]
        return [t for t in nice_ticks(self.x0, self.x1) if self.x0 - EPS <= t <= self.x1 + EPS]


def svg_open(title: str, desc: str) -> list[str]:
    return [f'<svg viewBox="0 0 {W} {H}" role="img" '
            f'aria-label="{esc(title)}">', f"<title>{esc(title)}</title>",
            f"<desc>{esc(desc)}</desc>",
            f'<text x="{M_LEFT}" y="20" font-size="14" font-weight="600" '
            f'fill="#111827">{esc(title)}</text>']


def _frame(ax: Axes, x_label: str, y_label: str, x_names: dict[float, str] | None = None
           ) -> list[str]:
    out = []
    left, right, bottom, top = M_LEFT, W - M_RIGHT, H - M_BOTTOM, M_TOP
    for t in ax.yticks:
        y = ax.y(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
                   f'stroke="#e5e7eb"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="12" text-anchor="end" '
                   f'fill="#374151">{esc(fmt_tick(t))}</text>')
    for t in ax.xticks():
        x = ax.x(t)
        out.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" '
                   f'stroke="#6b7280"/>')
        name = (x_names or {}).get(t, fmt_tick(t))
        out.append(f'<text x="{x:.1f}" y="{bottom + 17}" font-size="12" text-anchor="middle" '
                   f'fill="#374151">{esc(name)}</text>')
    out.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#6b7280"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#6b7280"/>')
    out.append(f'<text x="{(left + right) / 2:.1f}" y="{H - 8}" font-size="13" '
               f'text-anchor="middle" fill="#111827">{esc(x_label)}</text>')
    out.append(f'<text x="14" y="{(top + bottom) / 2:.1f}" font-size="13" text-anchor="middle" '
               f'fill="#111827" transform="rotate(-90 14 {(top + bottom) / 2:.1f})">'
               f'{esc(y_label)}</text>')
    return out


def _legend(entries: list[tuple[str, str, str]]) -> list[str]:
    """entries: (label, colour, "line" | "dot" | "dash"), right of the plot area."""
    out = []
    x = W - M_RIGHT + 12
    for i, (label, color, kind) in enumerate(entries):
        y = M_TOP + 10 + i * 18
        if kind == "dash":
            out.append(f'<line x1="{x}" y1="{y}" x2="{x + 16}" y2="{y}" stroke="{color}" '
                       'stroke-width="2" stroke-dasharray="4 3"/>')
        elif kind == "bar":
            out.append(f'<rect x="{x}" y="{y - 5}" width="16" height="10" fill="{color}"/>')
        else:
            out.append(f'<line x1="{x}" y1="{y}" x2="{x + 16}" y2="{y}" stroke="{color}" '
                       'stroke-width="2"/>')
            out.append(f'<circle cx="{x + 8}" cy="{y}" r="3" fill="{color}"/>')
        out.append(f'<text x="{x + 22}" y="{y + 4}" font-size="12" fill="#111827">'
                   f'{esc(label)}</text>')
    return out


Series = tuple[str, str, list[tuple[float, float]]]  # label, colour, points


def line_chart(title: str, desc: str, x_label: str, y_label: str, series: list[Series],
               log2x: bool = False, ceiling: tuple[str, float] | None = None,
               labels: dict[float, str] | None = None, connect: bool = True) -> str:
    """Lines with dots, one per series; `ceiling` a dashed horizontal line; `labels` text
    above the first series' points."""
    xs = [x for _, _, pts in series for x, _ in pts]
    ys = [y for _, _, pts in series for _, y in pts] + ([ceiling[1]] if ceiling else [])
    ax = Axes(xs, ys, log2x=log2x)
    out = svg_open(title, desc) + _frame(ax, x_label, y_label)
    legend = []
    if ceiling:
        y = ax.y(ceiling[1])
        out.append(f'<line x1="{M_LEFT}" y1="{y:.1f}" x2="{W - M_RIGHT}" y2="{y:.1f}" '
                   f'stroke="{BASE}" stroke-width="1.5" stroke-dasharray="5 4"/>')
        legend.append((ceiling[0], BASE, "dash"))
    for name, color, pts in reversed(series):  # the first series (yours) drawn on top
        pts = sorted(pts)
        if connect and len(pts) > 1:
            path = " ".join(f"{ax.x(x):.1f},{ax.y(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                       'stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{ax.x(x):.1f}" cy="{ax.y(y):.1f}" r="3.5" fill="{color}">'
                       f"<title>{esc(name)}: {esc(fmt_tick(x))} → {y:.3g}</title></circle>")
    legend += [(name, colour, "line") for name, colour, _ in series]
    if labels and series:
        pts = sorted(series[0][2])
        for i, (x, y) in enumerate(pts):
            if x in labels:  # the end points' labels stay inside the plot area
                anchor = "start" if i == 0 else "end" if i == len(pts) - 1 else "middle"
                out.append(f'<text x="{ax.x(x):.1f}" y="{ax.y(y) - 8:.1f}" font-size="11" '
                           f'text-anchor="{anchor}" fill="#374151">{esc(labels[x])}</text>')
    out += _legend(legend)
    out.append("</svg>")
    return "\n".join(out)


def scatter_chart(title: str, desc: str, x_label: str, y_label: str,
                  series: list[tuple[str, str, list[tuple[float, float, str]]]],
                  x_range: tuple[float, float] | None = None) -> str:
    """Labelled dots (x, y, label); the x axis spans `x_range`, else the data."""
    xs = [x for _, _, pts in series for x, _, _ in pts]
    ys = [y for _, _, pts in series for _, y, _ in pts]
    ax = Axes(xs, ys, x_range=x_range)
    out = svg_open(title, desc) + _frame(ax, x_label, y_label)
    for name, color, pts in reversed(series):  # the first series (yours) drawn on top
        for x, y, label in pts:
            out.append(f'<circle cx="{ax.x(x):.1f}" cy="{ax.y(y):.1f}" r="4" fill="{color}" '
                       f'fill-opacity="0.8"><title>{esc(name)} {esc(label)}: '
                       f'{x:.3g}, {y:.3g}</title></circle>')
    out += _legend([(name, color, "dot") for name, color, _ in series])
    out.append("</svg>")
    return "\n".join(out)
