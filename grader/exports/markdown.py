"""A Markdown summary for a pull-request comment or a CI job summary: one table row per lab,
the reason beside every zero, and the parts and test cases of each lab folded away."""

from __future__ import annotations

import html
import re

from ..result import GradeResult, LabResult
from .common import (EPS, FAIL, FLAG, PASS, SKIP, STATUS_WORDS, TEST_WORDS, fmt_points,
                     lab_reason, part_outcome, part_reason, speed_of_light,
                     grader_problems, submission_name, test_outcome, timing_summary)
from .table import gradable_phrase, reported_only, reported_value, tests_phrase

ICONS = {PASS: "✅", FAIL: "❌", SKIP: "⏭️", FLAG: "🚩"}
DASH = "–"
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def cell(text: str) -> str:
    """Text safe inside a table cell: one line, pipes escaped."""
    return " ".join(_CONTROL.sub("", str(text)).split()).replace("|", "\\|")


def _lab_row(lab: LabResult, no_gpu: bool = False) -> str:
    t = timing_summary(lab)
    tests = tests_phrase(lab, no_gpu) or DASH
    points = f"{fmt_points(lab.points)} / {fmt_points(lab.max_points)}"
    if lab.points < lab.max_points - EPS:
        reason = gradable_phrase(lab) or re.sub(r" \(\+\d+ more\)$", "", lab_reason(lab))
        if lab.points <= EPS or reason:
            points += f" — {reason or 'no points earned'}"
    return "| " + " | ".join(cell(x) for x in (
        f"{lab.lab[:2]} {lab.title}",
        tests,
        f"{t['ms']:.3g} ms" if t["ms"] is not None else DASH,
        f"{t['speedup']:.2f}×" if t["speedup"] is not None else DASH,
        f"{t['vs_reference']:.2f}×" if t["vs_reference"] is not None else DASH,
        points,
    )) + " |"


def _details(lab: LabResult) -> list[str]:
    summary = html.escape(f"Lab {lab.lab[:2]} · {lab.title}: {fmt_points(lab.points)} / "
                          f"{fmt_points(lab.max_points)} points")
    out = ["<details>", f"<summary>{summary}</summary>", "",
           "| Part | Status | Points | Reason |", "|---|---|---:|---|"]
    for p in lab.parts:
        outcome = part_outcome(p)
        reason = part_reason(p) if outcome != PASS or p.points < p.max_points - EPS else ""
        icon, status = ICONS[outcome], STATUS_WORDS.get(p.status, p.status)
        if reported_only(p) and p.status == "graded":  # neutral: no points either way
            icon, status, reason = "ℹ️", "reported, not scored", reported_value(p)
        out.append("| " + " | ".join(cell(x) for x in (
            f"{icon} {p.name}", status,
            f"{fmt_points(p.points)} / {fmt_points(p.max_points)}", reason or "")) + " |")
    t = timing_summary(lab)
    if t["speedup"] is not None:
        line = f"Speedup over the baseline: {t['speedup']:.2f}×"
        if t["reference_speedup"] is not None:
            line += f" (reference: {t['reference_speedup']:.2f}×)"
        out += ["", line + "."]
    sol = speed_of_light(lab)
    if sol is not None:
        out += ["", _inline(sol.text())]
    if lab.tests:
        out += ["", "Test cases:", ""]
        for test in lab.tests:
            outcome = test_outcome(test)
            note = ""
            if outcome != PASS:
                first = next((m.strip() for m in test.messages if m.strip()), "")
                first = first.splitlines()[0] if first else ""
                word = TEST_WORDS.get(test.status, test.status)
                if first.lower().startswith(word.lower()):  # "not run: no CUDA device"
                    note = first
                else:
                    note = word + (f": {first}" if first else "")
            hidden = " (hidden)" if test.hidden else ""
            out.append(f"- {ICONS[outcome]} {_inline(test.name)}{hidden}"
                       + (f" — {_inline(note)}" if note else ""))
    errors = lab.build.errors if lab.build is not None else None
    if errors:
        out += ["", "Compiler errors:", "", "```text", *[str(e) for e in errors][:20], "```"]
    out += ["", "</details>", ""]
    return out


def _inline(text: str) -> str:
    text = _CONTROL.sub("", str(text))
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def to_markdown(result: GradeResult) -> str:
    lines = [f"## CUDA Memory Labs: {fmt_points(result.final_points)} / "
             f"{fmt_points(result.max_points)} points", ""]
    if result.late:
        lines += [f"**{result.late_note()}**", ""]
    if result.device:
        name = result.device.get("name", "a CUDA device")
        cc = result.device.get("compute_capability")
        lines.append(f"Submission `{submission_name(result)}`, seed {result.seed}, graded on "
                     f"{name}" + (f" (compute capability {cc})" if cc else "") + ".")
    else:
        lines.append(f"Submission `{submission_name(result)}`, seed {result.seed}. "
                     "**No CUDA device: the GPU parts were not graded** (they earn no points "
                     "here).")
    lines += ["", "| Lab | Tests passed | Time | Speedup vs baseline | vs reference | Points |",
              "|---|---:|---:|---:|---:|---|"]
    lines += [_lab_row(lab, not result.device) for lab in result.labs]
    lines.append("")
    for lab in result.labs:
        lines += _details(lab)
    if result.errors:
        lines += ["**Problems of the grader** (not your code):", ""]
        lines += [f"- {_inline(e)}" for e in grader_problems(result)]
        lines.append("")
    lines.append(f"<sub>{html.escape(result.schema)} · grader {html.escape(result.grader_version)}"
                 f" · {html.escape(result.created)}</sub>")
    return "\n".join(lines) + "\n"
