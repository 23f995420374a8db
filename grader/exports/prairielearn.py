"""PrairieLearn external grader results.json.

`score` is the fraction of the points earned (0..1); each test lists points and
max_points. Hidden test cases are summarised, one row per lab ("2 of 3 hidden test cases
pass"), without their names or messages. A submission is not gradable (`gradable: false`,
its reasons in `format_errors`; PrairieLearn then awards nothing, takes nothing and does
not count the attempt) when no lab could be graded at all: its file is missing, it does
not compile, or the grader itself failed before grading anything.
"""

from __future__ import annotations

from typing import Any

from ..parts.gates import BUILD
from ..result import GradeResult, LabResult
from .common import (FLAG, PASS, SKIP, Item, fmt_points, grader_problems, lab_reason,
                     score_items)
from .gradescope import hidden_names, pending_points, redact_hidden
from .table import NO_WRAP, terminal_table

_WORDS = {PASS: "passed", SKIP: "not graded", FLAG: "flagged for review"}


def _summarise_hidden(lab: LabResult, items: list[Item]) -> list[Item]:
    """The lab's rows with its hidden test cases merged into one row, in the place of the
    first; names, messages and outputs left out."""
    hidden = [i for i in items if i.hidden]
    if not hidden:
        return items
    passed = sum(1 for i in hidden if i.outcome == PASS)
    not_run = sum(1 for i in hidden if i.outcome == SKIP)
    message = f"{passed} of {len(hidden)} hidden test cases pass"
    if not_run:
        message += f" ({not_run} not run)"
    summary = Item(f"Lab {lab.lab[:2]} · hidden test cases", round(sum(i.points for i in hidden), 4),
                   round(sum(i.max_points for i in hidden), 4),
                   PASS if passed == len(hidden) else SKIP if not_run == len(hidden) else "fail",
                   message + ".", message + ". Hidden test cases are not shown one by one.",
                   True, None, lab.lab, "hidden tests", "")
    out: list[Item] = []
    for item in items:
        if not item.hidden:
            out.append(item)
        elif item is hidden[0]:
            out.append(summary)
    return out


def ungradable_reasons(result: GradeResult) -> list[str]:
    """Why nothing of the submission could be graded; [] when something was."""
    if not result.labs:
        return grader_problems(result) or ["no lab was graded"]
    reasons = []
    for lab in result.labs:
        build = next((p for p in lab.parts if p.kind == BUILD.kind), None)
        if build is None or not build.reason:
            return []  # this lab was built and graded
        errors = lab.build.errors if lab.build is not None else None
        reasons.append(f"Lab {lab.lab[:2]}: {build.reason.strip()}"
                       + ("" if not errors or str(errors[0]) in build.reason
                          else "\n" + "\n".join(str(e) for e in errors[:8])))
    return reasons


def to_prairielearn(result: GradeResult) -> dict[str, Any]:
    names = hidden_names(result)
    tests: list[dict[str, Any]] = []
    for lab in result.labs:
        for item in _summarise_hidden(lab, score_items(lab)):
            message = item.message
            if item.outcome in (SKIP, FLAG) and not message.lower().startswith(_WORDS[item.outcome]):
                message = f"{_WORDS[item.outcome].capitalize()}: {message}"
            tests.append({
                "name": item.name,
                "description": f"{item.kind} of {item.lab}",
                "points": item.points,
                "max_points": item.max_points,
                "message": redact_hidden(message, names),
                "output": redact_hidden(item.output, names),
            })
    points = sum(t["points"] for t in tests)
    max_points = sum(t["max_points"] for t in tests)
    score = min(max(points / max_points, 0.0), 1.0) if max_points > 0 else 0.0
    lines = [f"{fmt_points(points)} / {fmt_points(max_points)} points."]
    if pending_points(result) > 0:  # the score PrairieLearn records is not the final one
        lines[0] = f"PROVISIONAL SCORE (host parts only): {lines[0]}"
    for lab in result.labs:
        reason = lab_reason(lab)
        lines.append(f"Lab {lab.lab}: {fmt_points(lab.points)} / {fmt_points(lab.max_points)}"
                     + (f" ({reason})" if reason else ""))
    if result.device is None:
        lines.append("No CUDA device: GPU parts were not graded (pending GPU grading).")
    output = terminal_table(result, color=False, width=NO_WRAP)
    if result.errors:
        output += "\nProblems of the grader (not your code):\n" + "\n".join(
            f"  - {e}" for e in grader_problems(result)) + "\n"
    doc: dict[str, Any] = {
        "gradable": True,
        "score": round(score, 6),
        "message": redact_hidden("\n".join(lines), names),
        "output": redact_hidden(output, names),
        "tests": tests,
    }
    reasons = ungradable_reasons(result)
    if reasons:
        doc["gradable"] = False
        doc["format_errors"] = [redact_hidden(r, names) for r in reasons]
        doc["score"] = 0.0
    return doc
