"""PrairieLearn external grader results.json.

`score` is the fraction of the points earned (0..1); each test lists points and
max_points. A submission is "gradable" unless the grader itself could not grade anything.
"""

from __future__ import annotations

from typing import Any

from ..result import GradeResult
from .common import FLAG, PASS, SKIP, fmt_points, lab_reason, score_items
from .table import terminal_table

_WORDS = {PASS: "passed", SKIP: "not graded", FLAG: "flagged for review"}


def to_prairielearn(result: GradeResult) -> dict[str, Any]:
    tests = []
    for lab in result.labs:
        for item in score_items(lab):
            message = item.message
            if item.outcome in (SKIP, FLAG) and not message.lower().startswith(_WORDS[item.outcome]):
                message = f"{_WORDS[item.outcome].capitalize()}: {message}"
            tests.append({
                "name": item.name,
                "description": f"{'hidden test case' if item.hidden else item.kind}"
                               f" of {item.lab}",
                "points": item.points,
                "max_points": item.max_points,
                "message": message,
                "output": item.output,
            })
    points = sum(t["points"] for t in tests)
    max_points = sum(t["max_points"] for t in tests)
    score = min(max(points / max_points, 0.0), 1.0) if max_points > 0 else 0.0
    lines = [f"{fmt_points(points)} / {fmt_points(max_points)} points."]
    for lab in result.labs:
        reason = lab_reason(lab)
        lines.append(f"Lab {lab.lab}: {fmt_points(lab.points)} / {fmt_points(lab.max_points)}"
                     + (f" ({reason})" if reason else ""))
    if result.device is None:
        lines.append("No CUDA device: GPU parts were not graded.")
    gradable = bool(result.labs) or not result.errors
    doc: dict[str, Any] = {
        "gradable": gradable,
        "score": round(score, 6),
        "message": "\n".join(lines),
        "output": terminal_table(result, color=False),
        "tests": tests,
    }
    if result.errors:
        doc["output"] += "\nProblems of the grader (not your code):\n" + "\n".join(
            f"  - {e}" for e in result.errors) + "\n"
    return doc
