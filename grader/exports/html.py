"""A self-contained HTML report: the lab table, each lab's parts and test cases, and plots
where a picture says more than a table. Inline CSS and inline SVG drawn here; no script, no
font, no image from anywhere else, so the file opens offline and as a CI artifact.

Plots (each one <svg>, drawn only when the data is in the result):
- speedup over the baseline per lab, the student's beside the reference's;
- the per-pair speedup samples of every timed lab (a strip plot: how noisy the timing was);
- from the bench documents' sweep points (`timing.student|reference.cases`) and derived
  figures (`.metrics`): bandwidth vs stride (cases `stride_N`, `copy` as the ceiling),
  cycles per shared-memory access vs stride (metrics `cycles_per_access_stride_N`, with the
  predicted conflict degree `predicted_degree_stride_N`), throughput vs block size (cases
  `sweep_block_N`) and throughput vs predicted occupancy (cases with a metric
  `<case>.predicted_occupancy`).
"""

from __future__ import annotations

import html
import math
import re
from typing import Any, Iterable

from ..result import BenchSummary, GradeResult, LabResult
from . import (EPS, FAIL, FLAG, PASS, SKIP, STATUS_WORDS, TEST_WORDS, fmt_points, lab_number,
               lab_reason, part_outcome, part_reason, test_counts, test_outcome, timing_summary)

STUDENT, REFERENCE, BASE = "#2563eb", "#9ca3af", "#b45309"
OUTCOME_CLASS = {PASS: "pass", FAIL: "fail", SKIP: "skip", FLAG: "flag"}
OUTCOME_WORD = {PASS: "✓", FAIL: "✗", SKIP: "–", FLAG: "⚑"}
W, H = 640, 300  # a plot's size in SVG units
M_LEFT, M_RIGHT, M_TOP, M_BOTTOM = 64, 132, 34, 46

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111827;
 margin:0;background:#f9fafb}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px}
h3{font-size:16px;margin:20px 0 6px}
.meta{color:#4b5563;margin:0 0 16px}
table{border-collapse:collapse;width:100%;background:#fff;margin:8px 0}
th,td{border:1px solid #e5e7eb;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600}td.num{text-align:right;white-space:nowrap}
.pass{color:#15803d}.fail{color:#b91c1c}.skip{color:#6b7280}.flag{color:#b45309}
.why{color:#4b5563;font-size:13px}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:16px;
 margin:12px 0}
figure{margin:0;background:#fff;border:1px solid #e5e7eb;padding:8px;min-width:0}
figure svg{width:100%;height:auto;display:block}
figcaption{font-size:13px;color:#4b5563;margin-top:4px}
details{background:#fff;border:1px solid #e5e7eb;padding:6px 10px;margin:8px 0}
summary{cursor:pointer;font-weight:600}
ul.tests{margin:6px 0;padding-left:20px}ul.tests li{margin:2px 0}
table.parts td:first-child{width:40%}table.parts td:nth-child(2){width:12%}
table.parts td:nth-child(3){width:9%}
pre{background:#f3f4f6;padding:8px;overflow-x:auto;font-size:13px}
.note{background:#fffbeb;border:1px solid #fcd34d;padding:8px 12px}
footer{color:#6b7280;font-size:12px;margin-top:32px}
"""


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


# ------------------------------------------------------------------------------ SVG helpers

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


def _fmt_tick(v: float) -> str:
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


def _svg_open(title: str, desc: str) -> list[str]:
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
                   f'fill="#374151">{esc(_fmt_tick(t))}</text>')
    for t in ax.xticks():
        x = ax.x(t)
        out.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" '
                   f'stroke="#6b7280"/>')
        name = (x_names or {}).get(t, _fmt_tick(t))
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
    out = _svg_open(title, desc) + _frame(ax, x_label, y_label)
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
                       f"<title>{esc(name)}: {esc(_fmt_tick(x))} → {y:.3g}</title></circle>")
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
                  x_range: tuple[float, float]) -> str:
    """Labelled dots (x, y, label)."""
    xs = [x for _, _, pts in series for x, _, _ in pts]
    ys = [y for _, _, pts in series for _, y, _ in pts]
    ax = Axes(xs, ys, x_range=x_range)
    out = _svg_open(title, desc) + _frame(ax, x_label, y_label)
    for name, color, pts in reversed(series):  # the first series (yours) drawn on top
        for x, y, label in pts:
            out.append(f'<circle cx="{ax.x(x):.1f}" cy="{ax.y(y):.1f}" r="4" fill="{color}" '
                       f'fill-opacity="0.8"><title>{esc(name)} {esc(label)}: '
                       f'{x:.3g}, {y:.3g}</title></circle>')
    out += _legend([(name, color, "dot") for name, color, _ in series])
    out.append("</svg>")
    return "\n".join(out)


def speedup_chart(rows: list[tuple[str, float | None, float | None]]) -> str:
    """Horizontal bars per lab: the student's speedup and the reference's; a line at 1×."""
    height = M_TOP + 26 * 2 * len(rows) + 14 * len(rows) + M_BOTTOM
    values = [v for _, s, r in rows for v in (s, r) if v is not None] + [1.0]
    ticks = nice_ticks(0.0, max(values) * 1.05)
    left, right = 150, W - 120  # room for the value labels right of the bars
    scale = (right - left) / (ticks[-1] or 1.0)
    title = "Speedup over the baseline, per lab"
    out = [f'<svg viewBox="0 0 {W} {height}" role="img" '
           f'aria-label="{esc(title)}">', f"<title>{esc(title)}</title>",
           "<desc>Bars: your kernel's median speedup over the lab's baseline, and the "
           "reference solution's, measured in the same run.</desc>",
           f'<text x="{left}" y="20" font-size="14" font-weight="600">{esc(title)}</text>']
    bottom = height - M_BOTTOM
    for t in ticks:
        x = left + t * scale
        out.append(f'<line x1="{x:.1f}" y1="{M_TOP}" x2="{x:.1f}" y2="{bottom}" '
                   'stroke="#e5e7eb"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 16}" font-size="12" text-anchor="middle" '
                   f'fill="#374151">{esc(_fmt_tick(t))}×</text>')
    one = left + scale
    y = M_TOP + 4
    for name, student, reference in rows:
        out.append(f'<text x="{left - 8}" y="{y + 24}" font-size="13" text-anchor="end" '
                   f'fill="#111827">{esc(name)}</text>')
        for value, color, who in ((student, STUDENT, "yours"), (reference, REFERENCE,
                                                                "reference")):
            if value is None:
                out.append(f'<text x="{left + 4}" y="{y + 16}" font-size="12" '
                           f'fill="#6b7280">{who}: not measured</text>')
            else:
                width = max(value, 0.0) * scale
                out.append(f'<rect x="{left}" y="{y + 4}" width="{width:.1f}" height="18" '
                           f'fill="{color}"><title>{who}: {value:.2f}×</title></rect>')
                out.append(f'<text x="{left + width + 4:.1f}" y="{y + 17}" font-size="12" '
                           f'fill="#111827">{value:.2f}× {who}</text>')
            y += 22
        y += 18
    out.append(f'<line x1="{one:.1f}" y1="{M_TOP}" x2="{one:.1f}" y2="{bottom}" '
               f'stroke="{BASE}" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{one + 3:.1f}" y="{M_TOP + 10}" font-size="11" fill="{BASE}">'
               "baseline (1×)</text>")
    out.append(f'<text x="{(left + right) / 2:.1f}" y="{height - 8}" font-size="13" '
               'text-anchor="middle">median speedup over the baseline (higher is faster)</text>')
    out.append("</svg>")
    return "\n".join(out)


def strip_chart(rows: list[tuple[str, list[float], list[float]]]) -> str:
    """Per lab, the per-pair speedup samples (yours above, the reference's below), each lab
    on its own axis (the labs' speedups differ by orders of magnitude); the tick marks are
    the medians."""
    row_h = 62
    height = M_TOP + row_h * len(rows) + 30
    left, right = 150, W - 40
    title = "Timing samples: speedup of each interleaved pair"
    out = [f'<svg viewBox="0 0 {W} {height}" role="img" '
           f'aria-label="{esc(title)}">', f"<title>{esc(title)}</title>",
           "<desc>Every baseline/candidate pair the bench timed, as its speedup; a tight "
           "cluster means a steady measurement. Each lab has its own scale.</desc>",
           f'<text x="{left}" y="20" font-size="14" font-weight="600">{esc(title)}</text>']
    y = M_TOP
    for name, student, reference in rows:
        values = student + reference
        lo, hi = min(values), max(values)
        pad = (hi - lo) * 0.08 or max(abs(hi) * 0.02, 0.01)
        lo, hi = lo - pad, hi + pad
        ticks = [t for t in nice_ticks(lo, hi, 4) if lo <= t <= hi]

        def sx(v: float, lo: float = lo, hi: float = hi) -> float:
            return left + (v - lo) / (hi - lo) * (right - left)

        out.append(f'<text x="{left - 8}" y="{y + 22}" font-size="13" text-anchor="end">'
                   f'{esc(name)}</text>')
        base = y + 40
        out.append(f'<line x1="{left}" y1="{base}" x2="{right}" y2="{base}" stroke="#9ca3af"/>')
        for t in ticks:
            out.append(f'<line x1="{sx(t):.1f}" y1="{base}" x2="{sx(t):.1f}" y2="{base + 3}" '
                       f'stroke="#6b7280"/><text x="{sx(t):.1f}" y="{base + 14}" '
                       f'font-size="11" text-anchor="middle" fill="#374151">'
                       f'{esc(_fmt_tick(t))}×</text>')
        for values_, color, dy, who in ((student, STUDENT, 10, "yours"),
                                        (reference, REFERENCE, 26, "reference")):
            for i, v in enumerate(values_):
                jitter = ((i * 7919) % 9 - 4) * 0.9
                out.append(f'<circle cx="{sx(v):.1f}" cy="{y + dy + jitter:.1f}" r="2.6" '
                           f'fill="{color}" fill-opacity="0.65"/>')
            if values_:
                med = sorted(values_)[len(values_) // 2] if len(values_) % 2 else sum(
                    sorted(values_)[len(values_) // 2 - 1:len(values_) // 2 + 1]) / 2
                out.append(f'<line x1="{sx(med):.1f}" y1="{y + dy - 8}" x2="{sx(med):.1f}" '
                           f'y2="{y + dy + 8}" stroke="#111827" stroke-width="2">'
                           f"<title>{who}: median {med:.3g}× of {len(values_)} pairs</title>"
                           "</line>")
        y += row_h
    out += [f'<circle cx="{left + 4}" cy="{height - 12}" r="3" fill="{STUDENT}"/>',
            f'<text x="{left + 12}" y="{height - 8}" font-size="12">yours</text>',
            f'<circle cx="{left + 64}" cy="{height - 12}" r="3" fill="{REFERENCE}"/>',
            f'<text x="{left + 72}" y="{height - 8}" font-size="12">reference</text>',
            f'<line x1="{left + 150}" y1="{height - 18}" x2="{left + 150}" y2="{height - 6}" '
            'stroke="#111827" stroke-width="2"/>',
            f'<text x="{left + 156}" y="{height - 8}" font-size="12">median</text>', "</svg>"]
    return "\n".join(out)


# --------------------------------------------------------------------- data from the result

def bench_side(lab: LabResult, side: str) -> dict[str, Any]:
    """The `cases` (list) and `metrics` (dict) of one side ("student" or "reference") of
    a lab's bench, from lab.timing[side]; empty when the pipeline did not keep them."""
    d = getattr(lab.timing, side, None)
    cases = d.cases if d is not None and isinstance(d.cases, list) else []
    metrics = d.metrics if d is not None and isinstance(d.metrics, dict) else {}
    return {"cases": [c for c in cases if isinstance(c, dict)], "metrics": metrics}


def _case_points(cases: list[dict], pattern: str, field: str) -> list[tuple[float, float]]:
    rx = re.compile(pattern)
    pts = []
    for c in cases:
        m = rx.fullmatch(str(c.get("name", "")))
        value = _num(c.get(field))
        if m and value is not None:
            pts.append((float(m.group(1)), value))
    return sorted(pts)


def _metric_points(metrics: dict, pattern: str) -> list[tuple[float, float]]:
    rx = re.compile(pattern)
    pts = []
    for key, value in metrics.items():
        m = rx.fullmatch(str(key))
        if m and _num(value) is not None:
            pts.append((float(m.group(1)), float(value)))
    return sorted(pts)


def _samples(side: BenchSummary | None) -> list[float]:
    if side is None:
        return []
    speedup = side.speedup
    samples = speedup.get("samples") if isinstance(speedup, dict) else None
    return [float(v) for v in samples or [] if _num(v) is not None]


def _sides(lab: LabResult) -> Iterable[tuple[str, str, dict[str, Any]]]:
    yield "yours", STUDENT, bench_side(lab, "student")
    yield "reference", REFERENCE, bench_side(lab, "reference")


def lab_plots(lab: LabResult) -> list[tuple[str, str]]:
    """(svg, caption) for each sweep the lab's bench recorded."""
    plots = []
    name = f"Lab {lab_number(lab)}"
    # Bandwidth vs stride (cases stride_N, the copy kernel as the ceiling).
    series, ceiling = [], None
    for who, color, side in _sides(lab):
        pts = _case_points(side["cases"], r"stride_(\d+)", "gbytes_per_s")
        if pts:
            series.append((who, color, pts))
        copy = next((c for c in side["cases"] if c.get("name") == "copy"), None)
        if ceiling is None and copy and _num(copy.get("gbytes_per_s")) is not None:
            ceiling = ("copy kernel", float(copy["gbytes_per_s"]))
    if series:
        plots.append((line_chart(f"{name}: bandwidth vs stride", "Effective bandwidth of the "
                                 "strided kernel at each stride.", "stride (elements)",
                                 "GB/s", series, log2x=True, ceiling=ceiling),
                      "Bandwidth falls as the stride spreads a warp's accesses over more "
                      "sectors; the dashed line is a plain copy."))
    # Cycles per shared-memory access vs stride, labelled with the predicted degree.
    series, labels = [], {}
    for who, color, side in _sides(lab):
        pts = _metric_points(side["metrics"], r"cycles_per_access_stride_(\d+)")
        if pts:
            series.append((who, color, pts))
        if not labels:
            labels = {x: f"{y:g}-way" for x, y in
                      _metric_points(side["metrics"], r"predicted_degree_stride_(\d+)")}
    if series:
        plots.append((line_chart(f"{name}: cycles per shared access vs stride", "Clock "
                                 "cycles per shared-memory access of a warp at each stride, "
                                 "with the predicted conflict degree.", "stride (words)",
                                 "cycles per access", series, log2x=True, labels=labels),
                      "Each doubling of the conflict degree (labels: predicted n-way "
                      "conflict) adds replays to every access."))
    # Throughput vs block size.
    series = []
    for who, color, side in _sides(lab):
        pts = _case_points(side["cases"], r"sweep_block_(\d+)", "gbytes_per_s")
        if pts:
            series.append((who, color, pts))
    if series:
        plots.append((line_chart(f"{name}: throughput vs block size", "Throughput of the "
                                 "same kernel launched with each block size.",
                                 "threads per block", "GB/s", series, log2x=True),
                      "Block sizes that are not a multiple of 32 leave lanes idle; very "
                      "small blocks are limited by how fast blocks start."))
    # Throughput vs predicted occupancy.
    series_occ = []
    for who, color, side in _sides(lab):
        pts = []
        for c in side["cases"]:
            occ = _num(side["metrics"].get(f"{c.get('name')}.predicted_occupancy"))
            rate = _num(c.get("gbytes_per_s"))
            if occ is not None and rate is not None:
                regs = side["metrics"].get(f"{c.get('name')}.registers")
                pts.append((occ, rate, f"{c.get('name')}"
                            + (f", {regs:g} registers" if _num(regs) is not None else "")))
        if pts:
            series_occ.append((who, color, pts))
    if series_occ:
        plots.append((scatter_chart(f"{name}: throughput vs occupancy", "Each launch "
                                    "configuration's throughput against its predicted "
                                    "occupancy.", "predicted occupancy (resident warps / "
                                    "maximum)", "GB/s", series_occ, (0.0, 1.0)),
                      "Each dot is one block size / register bound (hover for its name)."))
    return plots


# -------------------------------------------------------------------------------- the page

def _lab_rows(result: GradeResult) -> list[str]:
    rows = []
    for lab in result.labs:
        counts = test_counts(lab)
        t = timing_summary(lab)
        tests = f"{counts['passed']} / {counts['total']}" if counts["total"] else "–"
        if counts["not_run"]:
            tests += f" ({counts['not_run']} not run)"
        full = lab.points >= lab.max_points - EPS
        reason = "" if full else lab_reason(lab)
        ms = f"{t['ms']:.3g} ms" if t["ms"] is not None else "–"
        speedup = f"{t['speedup']:.2f}×" if t["speedup"] is not None else "–"
        vs_ref = f"{t['vs_reference']:.2f}×" if t["vs_reference"] is not None else "–"
        rows.append(
            "<tr>"
            f'<td><a href="#lab-{esc(lab.lab)}">{esc(lab_number(lab))} {esc(lab.title)}</a></td>'
            f'<td class="num">{esc(tests)}</td><td class="num">{esc(ms)}</td>'
            f'<td class="num">{speedup}</td><td class="num">{vs_ref}</td>'
            f'<td class="num {"pass" if full else "fail"}">{fmt_points(lab.points)} / '
            f"{fmt_points(lab.max_points)}</td>"
            f'<td class="why">{esc(reason)}</td></tr>')
    return rows


def _lab_section(lab: LabResult) -> list[str]:
    out = [f'<h2 id="lab-{esc(lab.lab)}">Lab {esc(lab_number(lab))} · {esc(lab.title)}: '
           f"{fmt_points(lab.points)} / {fmt_points(lab.max_points)} points</h2>",
           '<table class="parts"><tr><th>Part</th><th>Status</th><th>Points</th><th>Reason</th></tr>']
    for p in lab.parts:
        outcome = part_outcome(p)
        reason = part_reason(p) if outcome != PASS or p.points < p.max_points - EPS else ""
        out.append(f'<tr><td class="{OUTCOME_CLASS[outcome]}">{OUTCOME_WORD[outcome]} '
                   f"{esc(p.name)}</td><td>{esc(STATUS_WORDS.get(p.status, p.status))}</td>"
                   f'<td class="num">{fmt_points(p.points)} / {fmt_points(p.max_points)}</td>'
                   f'<td class="why">{esc(reason)}</td></tr>')
    out.append("</table>")
    plots = lab_plots(lab)
    if plots:
        out.append('<div class="plots">')
        out += [f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"
                for svg, caption in plots]
        out.append("</div>")
    if lab.tests:
        counts = test_counts(lab)
        out.append(f"<details><summary>Test cases: {counts['passed']} of {counts['total']} "
                   "passed</summary><ul class=\"tests\">")
        for test in lab.tests:
            outcome = test_outcome(test)
            note = ""
            if outcome != PASS:
                first = next((m.strip() for m in test.messages if m.strip()), "")
                note = TEST_WORDS.get(test.status, test.status) + (
                    f": {first.splitlines()[0]}" if first else "")
            out.append(f'<li class="{OUTCOME_CLASS[outcome]}">{OUTCOME_WORD[outcome]} '
                       f'<span style="color:#111827">{esc(test.name)}</span>'
                       + (" (hidden)" if test.hidden else "")
                       + (f' <span class="why">— {esc(note)}</span>' if note else "")
                       + "</li>")
        out.append("</ul></details>")
    errors = lab.build.errors if lab.build is not None else None
    if errors:
        out.append("<details open><summary>Compiler errors</summary><pre>"
                   + esc("\n".join(str(e) for e in errors[:30])) + "</pre></details>")
    return out


def to_html(result: GradeResult) -> str:
    total = f"{fmt_points(result.points)} / {fmt_points(result.max_points)}"
    if result.device:
        cc = result.device.get("compute_capability")
        device = (f"graded on {result.device.get('name', 'a CUDA device')}"
                  + (f" (compute capability {cc})" if cc else ""))
    else:
        device = "no CUDA device: the GPU parts were not graded (they earn no points here)"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>CUDA Memory Labs: {esc(total)} points</title>",
           f"<style>{CSS}</style></head><body><main>",
           f"<h1>CUDA Memory Labs: {esc(total)} points</h1>",
           f'<p class="meta">Submission <code>{esc(result.submission)}</code> · seed '
           f"{esc(result.seed)} · {esc(device)}</p>"]
    if not result.device:
        out.append('<p class="note">Without a GPU the parts that need one are “not graded”: '
                   "they count in the maximum and earn nothing here.</p>")
    out += ["<table><tr><th>Lab</th><th>Tests passed</th><th>Time</th><th>Speedup vs "
            "baseline</th><th>vs reference</th><th>Points</th><th>Why not full</th></tr>",
            *_lab_rows(result), "</table>"]

    speed_rows = [(f"Lab {lab_number(lab)}", timing_summary(lab)["speedup"],
                   timing_summary(lab)["reference_speedup"]) for lab in result.labs
                  if timing_summary(lab)["speedup"] is not None
                  or timing_summary(lab)["reference_speedup"] is not None]
    strip_rows = [(f"Lab {lab_number(lab)}", _samples(getattr(lab.timing, "student", None)),
                   _samples(getattr(lab.timing, "reference", None))) for lab in result.labs]
    strip_rows = [r for r in strip_rows if r[1] or r[2]]
    if speed_rows or strip_rows:
        out += ["<h2>Speed</h2>", '<div class="plots">']
        if speed_rows:
            out.append(f"<figure>{speedup_chart(speed_rows)}<figcaption>Full speed points at a "
                       "time within the rubric's full_credit_ratio of the reference's (1.2× by "
                       "default); none at or below the baseline.</figcaption></figure>")
        if strip_rows:
            out.append(f"<figure>{strip_chart(strip_rows)}<figcaption>Baseline and kernel "
                       "run interleaved (A B A B …); each dot is one pair's ratio."
                       "</figcaption></figure>")
        out.append("</div>")
    for lab in result.labs:
        out += _lab_section(lab)
    if result.errors:
        out.append('<h2>Problems of the grader (not your code)</h2><ul>'
                   + "".join(f"<li>{esc(e)}</li>" for e in result.errors) + "</ul>")
    out.append(f"<footer>{esc(result.schema)} · grader {esc(result.grader_version)} · "
               f"{esc(result.created)}</footer></main></body></html>")
    return "\n".join(out) + "\n"
