"""A self-contained HTML report: the lab table, each lab's parts and test cases, and plots
where a picture says more than a table. Inline CSS and inline SVG (drawn with svg.py); no
script, no font, no image from anywhere else, so the file opens offline and as a CI artifact.

Plots (each one <svg>, drawn only when the data is in the result):
- speedup over the baseline per lab, the student's beside the reference's;
- the per-pair speedup samples of every timed lab (a strip plot: how noisy the timing was);
- every plot a lab's bench declares in its document (`plots[]`, kept with the bench's
  `cases` and `metrics` in `timing.student|reference`), the student's and the reference's
  points as two series. The report knows no lab: a new sweep is declared in its bench.
Beside the speed plots, a table of each timed lab's speed of light: the rate its kernel
achieves as a fraction of the GPU's measured limit, the reference's beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..benchdoc import CaseTiming, Plot, PlotRef
from ..measure.floor import SpeedOfLight, percent_text, rate_text
from ..result import BenchSummary, GradeResult, LabResult
from .common import (EPS, FAIL, FLAG, PASS, SKIP, STATUS_WORDS, TEST_WORDS, fmt_points,
                     lab_number, lab_reason, part_outcome, part_reason, pending_points,
                     grader_problems, speed_of_light, submission_name, test_counts,
                     test_outcome, timing_summary)
from .table import reported_only, reported_value
from .svg import (BASE, M_BOTTOM, M_TOP, W, esc, fmt_tick, line_chart, nice_ticks,
                  scatter_chart)

STUDENT, REFERENCE = "#2563eb", "#9ca3af"
OUTCOME_CLASS = {PASS: "pass", FAIL: "fail", SKIP: "skip", FLAG: "flag"}
OUTCOME_WORD = {PASS: "✓", FAIL: "✗", SKIP: "–", FLAG: "⚑"}
# A failed build's compiler output is shown up to this size (a template error can run to
# thousands of lines; the first errors are the ones to read).
MAX_LOG_LINES = 400
MAX_LOG_CHARS = 40_000

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
.pass{color:#15803d}.fail{color:#b91c1c}.skip{color:#6b7280}.flag{color:#b45309}.info{color:#1d4ed8}
.why{color:#4b5563;font-size:13px}
p.sol{margin:6px 0;color:#1f2937}
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
pre.log{max-height:32em;overflow:auto;white-space:pre;margin:6px 0}
.note{background:#fffbeb;border:1px solid #fcd34d;padding:8px 12px}
footer{color:#6b7280;font-size:12px;margin-top:32px}
"""


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
                   f'fill="#374151">{esc(fmt_tick(t))}×</text>')
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
                       f'{esc(fmt_tick(t))}×</text>')
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

def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


@dataclass(frozen=True)
class BenchSide:
    """The cases (by name), the metrics and the plots of one side ("student" or
    "reference") of a lab's bench, from lab.timing; empty when not kept."""

    cases: dict[str, CaseTiming]
    metrics: dict[str, float]
    plots: list[Plot]
    samples: list[float]  # the scored comparison's per-pair speedups


def bench_side(lab: LabResult, side: str) -> BenchSide:
    summary: BenchSummary | None = getattr(lab.timing, side, None) if lab.timing else None
    if summary is None:
        return BenchSide({}, {}, [], [])
    samples = summary.speedup.samples if summary.speedup is not None else None
    return BenchSide({c.name: c for c in summary.cases}, dict(summary.metrics),
                     list(summary.plots),
                     [v for v in samples or () if _num(v) is not None])


def _value(ref: PlotRef, side: BenchSide) -> float | None:
    """The number a point (or a ceiling) names: `case` + `field`, or `metric`."""
    if ref.case is not None:
        case = side.cases.get(ref.case)
        return _num(case.figure(ref.field)) if case else None
    if ref.metric is not None:
        return _num(side.metrics.get(ref.metric))
    return None


def lab_plots(lab: LabResult) -> list[tuple[str, str]]:
    """(svg, caption) for each plot the lab's bench declared, in the order declared."""
    sides = [(who, color, bench_side(lab, key)) for who, color, key in
             (("yours", STUDENT, "student"), ("reference", REFERENCE, "reference"))]
    specs: dict[str, Plot] = {}
    for _, _, side in sides:
        for spec in side.plots:
            specs.setdefault(spec.id, spec)
    plots = []
    for plot_id, spec in specs.items():
        log2x = spec.x_scale == "log2"
        series: list[tuple[str, str, list[tuple[float, float, str]]]] = []
        labels: dict[float, str] = {}
        ceiling: tuple[str, float] | None = None
        for who, color, side in sides:
            mine = next((p for p in side.plots if p.id == plot_id), None)
            if mine is None:
                continue
            pts: list[tuple[float, float, str]] = []
            for point in mine.points:
                x, y = _num(point.x), None
                if x is not None and not (log2x and x <= 0):
                    y = _value(point, side)
                if x is not None and y is not None:  # y is only read where x is a number
                    pts.append((x, y, point.label))
            if pts:
                series.append((who, color, pts))
                if not labels:
                    labels = {x: label for x, _, label in pts if label}
            ref = mine.ceiling
            if ceiling is None and ref is not None and (top := _value(ref, side)) is not None:
                ceiling = (ref.label or str(ref.case), top)
        if not series:
            continue
        title = f"Lab {lab_number(lab)}: {spec.title or plot_id}"
        caption = spec.caption
        if spec.style == "dots":
            lo, hi = _num(spec.x_min), _num(spec.x_max)
            svg = scatter_chart(title, caption, spec.x_label, spec.y_label, series,
                                (lo, hi) if lo is not None and hi is not None and hi > lo
                                else None)
        else:
            svg = line_chart(title, caption, spec.x_label, spec.y_label,
                             [(who, color, [(x, y) for x, y, _ in pts])
                              for who, color, pts in series],
                             log2x=log2x, ceiling=ceiling, labels=labels)
        plots.append((svg, caption))
    return plots


def sol_table(rows: list[tuple[str, SpeedOfLight]]) -> str:
    """Per timed lab, the limit that binds its work and each side's rate as a fraction of it
    (floor.speed_of_light, kept in the performance part's details)."""
    out = ['<table class="sol"><tr><th>Speed of light</th><th>Limit that binds</th>'
           "<th>Your kernel</th><th>Reference</th></tr>"]
    for name, sol in rows:
        limit = "copy bandwidth" if sol.bound == "bytes" else "FP32 peak"
        reference = ("–" if sol.reference_fraction is None or sol.reference_rate is None else
                     f"{rate_text(sol.reference_rate, sol.bound)} "
                     f"({percent_text(sol.reference_fraction)})")
        out.append(f"<tr><td>{esc(name)}</td>"
                   f"<td>{esc(limit)}: {esc(rate_text(sol.limit, sol.bound))}</td>"
                   f'<td class="num">{esc(rate_text(sol.student_rate, sol.bound))} '
                   f"({esc(percent_text(sol.student_fraction))})</td>"
                   f'<td class="num">{esc(reference)}</td></tr>')
    out.append("</table>")
    return "\n".join(out)


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
        pending = pending_points(lab)
        # Every point gradable here earned, the rest waiting for a GPU: not a failure.
        waiting = not full and pending > EPS and lab.points >= lab.max_points - pending - EPS
        reason = ("" if full else f"{fmt_points(pending)} points need a GPU: not graded here."
                  if waiting else lab_reason(lab))
        cls = "pass" if full else "skip" if waiting else "fail"
        ms = f"{t['ms']:.3g} ms" if t["ms"] is not None else "–"
        speedup = f"{t['speedup']:.2f}×" if t["speedup"] is not None else "–"
        vs_ref = f"{t['vs_reference']:.2f}×" if t["vs_reference"] is not None else "–"
        rows.append(
            "<tr>"
            f'<td><a href="#lab-{esc(lab.lab)}">{esc(lab_number(lab))} {esc(lab.title)}</a></td>'
            f'<td class="num">{esc(tests)}</td><td class="num">{esc(ms)}</td>'
            f'<td class="num">{speedup}</td><td class="num">{vs_ref}</td>'
            f'<td class="num {cls}">{fmt_points(lab.points)} / '
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
        cls, word, status = (OUTCOME_CLASS[outcome], OUTCOME_WORD[outcome],
                             STATUS_WORDS.get(p.status, p.status))
        if reported_only(p) and p.status == "graded":  # neutral: no points either way
            cls, word, status, reason = "info", "ℹ", "reported, not scored", reported_value(p)
        out.append(f'<tr><td class="{cls}">{word} '
                   f"{esc(p.name)}</td><td>{esc(status)}</td>"
                   f'<td class="num">{fmt_points(p.points)} / {fmt_points(p.max_points)}</td>'
                   f'<td class="why">{esc(reason)}</td></tr>')
    out.append("</table>")
    sol = speed_of_light(lab)
    if sol is not None:
        out.append(f'<p class="sol">{esc(sol.text())}</p>')
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
                first = first.splitlines()[0] if first else ""
                word = TEST_WORDS.get(test.status, test.status)
                # "not run: no CUDA device" already says its status
                note = first if first.lower().startswith(word + ":") else (
                    word + (f": {first}" if first else ""))
            out.append(f'<li class="{OUTCOME_CLASS[outcome]}">{OUTCOME_WORD[outcome]} '
                       f'<span style="color:#111827">{esc(test.name)}</span>'
                       + (" (hidden)" if test.hidden else "")
                       + (f' <span class="why">— {esc(note)}</span>' if note else "")
                       + "</li>")
        out.append("</ul></details>")
    out += compiler_block(lab)
    return out


def _cut(text: str) -> tuple[str, str]:
    """`text` cut to MAX_LOG_LINES lines and MAX_LOG_CHARS characters, and a note saying
    what was left out ("" when nothing was)."""
    lines = text.splitlines()
    shown = "\n".join(lines[:MAX_LOG_LINES])[:MAX_LOG_CHARS]
    if shown == "\n".join(lines):
        return text, ""
    return shown, (f"Cut here: the first {shown.count(chr(10)) + 1} of {len(lines)} lines "
                   f"({len(shown)} of {len(text)} characters) are shown. Build the lab "
                   "yourself to read the rest.")


def compiler_block(lab: LabResult) -> list[str]:
    """A failed build's whole compiler output (escaped, scrollable, cut at a sane size with a
    note), else the error lines result.json kept; nothing when the build did not fail."""
    build = lab.build
    if build is None or build.ok:
        return []
    text = (build.output or "").strip()
    title = "Compiler output"
    if not text:
        if not build.errors:
            return []
        text, title = "\n".join(str(e) for e in build.errors), "Compiler errors"
    shown, note = _cut(text)
    return [f"<details open><summary>{title}</summary>"
            f'<pre class="log">{esc(shown)}</pre>'
            + (f'<p class="why">{esc(note)}</p>' if note else "") + "</details>"]


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
           f'<p class="meta">Submission <code>{esc(submission_name(result))}</code> · seed '
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
    strip_rows = [(f"Lab {lab_number(lab)}", bench_side(lab, "student").samples,
                   bench_side(lab, "reference").samples) for lab in result.labs]
    strip_rows = [r for r in strip_rows if r[1] or r[2]]
    sol_rows = [(f"Lab {lab_number(lab)}", sol) for lab in result.labs
                for sol in [speed_of_light(lab)] if sol is not None]
    if speed_rows or strip_rows or sol_rows:
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
        if sol_rows:
            out.append(sol_table(sol_rows))
            out.append('<p class="why">Speed of light: the rate each kernel achieves on the '
                       "scored comparison's work (its bytes or its FP32 flop, whichever the "
                       "GPU's limits bind), as a fraction of the rate this GPU's bench "
                       "measured: a copy kernel's bandwidth or an FMA loop's FP32 rate. A "
                       "figure to read, not a score: it earns no points.</p>")
    for lab in result.labs:
        out += _lab_section(lab)
    if result.errors:
        out.append('<h2>Problems of the grader (not your code)</h2><ul>'
                   + "".join(f"<li>{esc(e)}</li>" for e in grader_problems(result))
                   + "</ul>")
    out.append(f"<footer>{esc(result.schema)} · grader {esc(result.grader_version)} · "
               f"{esc(result.created)}</footer></main></body></html>")
    return "\n".join(out) + "\n"
