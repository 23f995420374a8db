"""Gradescope autograder results.json (written to /autograder/results/results.json).

The overall score is the sum of the test scores, so what a student sees per test adds up
to the grade. Gradescope knows only "passed" and "failed": a part not graded (no CUDA
device) or flagged for review is "failed" with 0 points and says so in its name and output,
never "passed". Hidden test cases become visible once the grades are published.
"""

from __future__ import annotations

from typing import Any

from ..result import GradeResult
from .common import PASS, SKIP, FLAG, score_items, timing_summary
from .table import terminal_table  # the plain-text table is the overall output

_TAGS = {SKIP: " [not graded]", FLAG: " [flagged for review]"}


def to_gradescope(result: GradeResult) -> dict[str, Any]:
    tests = []
    for lab in result.labs:
        for item in score_items(lab):
            name = item.name + _TAGS.get(item.outcome, "")
            tests.append({
                "name": name,
                "score": item.points,
                "max_score": item.max_points,
                "status": "passed" if item.outcome == PASS else "failed",
                "output": item.output,
                "visibility": "after_published" if item.hidden else "visible",
                "tags": [lab.lab],
            })
            if item.seconds is not None:
                tests[-1]["execution_time"] = round(item.seconds, 3)
    output = terminal_table(result, color=False)
    if result.errors:
        output += "\nProblems of the grader (not your code):\n" + "\n".join(
            f"  - {e}" for e in result.errors) + "\n"
    doc: dict[str, Any] = {
        "score": round(sum(t["score"] for t in tests), 4),
        "execution_time": int(round(sum(lab.wall_seconds for lab in result.labs))),
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    leaderboard = []
    for lab in result.labs:
        t = timing_summary(lab)
        if t["speedup"] is not None:
            leaderboard.append({"name": f"Lab {lab.lab[:2]} speedup vs baseline",
                                "value": round(t["speedup"], 3), "order": "desc"})
    if leaderboard:
        doc["leaderboard"] = leaderboard
    return doc
