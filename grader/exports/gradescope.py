"""Gradescope autograder results.json (written to /autograder/results/results.json).

The overall score is the sum of the test scores, so what a student sees per test adds up
to the grade. Gradescope knows only "passed" and "failed": a part flagged for review is
"failed" with 0 points and says so in its name and output, never "passed". A part not
graded because there is no CUDA device (Gradescope's machines have none) is neither: it
is listed as "pending GPU grading" with no status and no points, and the overall output
says the score is provisional. Hidden test cases become visible once the grades are
published, and the always-visible overall output never names them.

Fields used, as Gradescope's autograder specification lists them: top level `score`,
`execution_time` (whole seconds, the labs' wall time added up), `output`, `output_format`,
`test_output_format`, `visibility`, `stdout_visibility`, `extra_data`, `tests`,
`leaderboard`; per test `name`, `score`, `max_score`, `status`, `output`, `visibility`,
`tags` and `extra_data`. The specification has no time per test: a test case's run time
(Catch2's) goes in its `extra_data` as `seconds`.
"""

from __future__ import annotations

from typing import Any

from ..result import NOT_GRADED, NOT_RUN, GradeResult
from .common import (FLAG, PASS, SKIP, fmt_points, grader_problems, score_items,
                     timing_summary)
from .common import pending_points as lab_pending_points
from .table import NO_WRAP, terminal_table  # the plain-text table is the overall output

_TAGS = {FLAG: " [flagged for review]"}
PENDING = " [pending GPU grading]"
HIDDEN_NAME = "a hidden test case"
_MIN_PREFIX = 12  # a name cut short ("…") is recognised from this many characters on


def hidden_names(result: GradeResult) -> list[str]:
    """The names of every hidden test case in the result, longest first."""
    names = {t.name for lab in result.labs for t in lab.tests if t.hidden and t.name}
    return sorted(names, key=len, reverse=True)


def redact_hidden(text: str, names: list[str]) -> str:
    """`text` with every hidden test case's name replaced by "a hidden test case", names
    cut short with "…" (a table's reason column) included."""
    for name in names:
        text = text.replace(name, HIDDEN_NAME)
        for n in range(len(name) - 1, _MIN_PREFIX - 1, -1):
            cut = name[:n].rstrip() + "…"
            if cut in text:
                text = text.replace(cut, HIDDEN_NAME + "…")
                break
    return text


def pending_points(result: GradeResult) -> float:
    """Points of the parts not graded for want of a CUDA device."""
    return sum(lab_pending_points(lab) for lab in result.labs)


def provisional_note(result: GradeResult) -> str:
    """The first lines of the overall output when GPU parts are pending; "" otherwise."""
    pending = pending_points(result)
    if pending <= 0:
        return ""
    graded = result.max_points - pending
    return (f"PROVISIONAL SCORE: {fmt_points(result.points)} of the "
            f"{fmt_points(graded)} points graded so far ({fmt_points(result.max_points)} in "
            f"all). The GPU parts ({fmt_points(pending)} points) are pending GPU grading: this "
            "autograder has no CUDA device, so they were not run. They are not failures; "
            "your instructor grades them on a GPU and the score will change.\n\n")


def to_gradescope(result: GradeResult) -> dict[str, Any]:
    tests = []
    for lab in result.labs:
        for item in score_items(lab):
            test: dict[str, Any] = {
                "name": item.name,
                "score": item.points,
                "max_score": item.max_points,
                "status": "passed" if item.outcome == PASS else "failed",
                "output": item.output,
                "visibility": "after_published" if item.hidden else "visible",
                "tags": [lab.lab],
            }
            pending = item.status == NOT_GRADED or (item.status == NOT_RUN
                                                    and result.device is None)
            if pending:  # never shown as a failed test
                test["name"] += PENDING
                test["output"] = ("Pending GPU grading: this part needs a CUDA device and "
                                  "was not run here. It is not a failure.\n" + item.output)
                for key in ("score", "max_score", "status"):
                    del test[key]
            elif item.outcome == SKIP:  # not measured, not run: no points either way
                test["name"] += " [not measured]" if item.kind != "test" else " [not run]"
                del test["status"]
            else:
                test["name"] += _TAGS.get(item.outcome, "")
            if item.seconds is not None:
                test["extra_data"] = {"seconds": round(item.seconds, 3)}
            tests.append(test)
    output = provisional_note(result) + terminal_table(result, color=False, width=NO_WRAP)
    if result.late:
        output = result.late_note() + "\n\n" + output
    if result.errors:
        output += "\nProblems of the grader (not your code):\n" + "\n".join(
            f"  - {e}" for e in grader_problems(result)) + "\n"
    unpenalised = round(sum(t.get("score", 0.0) for t in tests), 4)
    doc: dict[str, Any] = {
        "score": round(unpenalised * result.late_factor, 4),
        "execution_time": int(round(sum(lab.wall_seconds for lab in result.labs))),
        "output": redact_hidden(output, hidden_names(result)),
        "output_format": "text",  # fixed-width: the table keeps its columns
        "test_output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"max_points": result.max_points,
                       "pending_gpu_points": pending_points(result),
                       "provisional": pending_points(result) > 0,
                       **({"late_factor": result.late_factor,
                           "unpenalised_score": unpenalised} if result.late else {})},
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
