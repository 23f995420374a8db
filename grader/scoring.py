"""Every point the grader gives (grader/README.md, "Scoring"), as formulas: a correctness
group's share of its cases, speed points from two speedups (or from a fraction of a
yardstick), memory-safety points from the sanitizer's tools, a profiler metric's points,
the `requires` gate, and the totals of a lab and a grade. Pure functions of numbers and
records: no I/O, no GPU. The parts these points go into are assembled by their kinds' modules
of grader/parts/ (kinds.py lists them, and makes the parts a lab did not reach).

Every function that can award less than full marks also says why, in a sentence a
student understands; the reason goes into PartResult.reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from .result import GRADED, NOT_MEASURED, REVIEW, GradeResult, LabResult

if TYPE_CHECKING:  # the measurements' types only; scoring runs nothing
    from .measure.sanitizer import SanitizerSummary

ROUND = 4  # decimal places kept in points


def rounded(x: float) -> float:
    """Points as kept: ROUND decimal places, never -0.0."""
    return round(x + 0.0, ROUND) + 0.0  # + 0.0 turns -0.0 into 0.0


def group_points(passed: int, total: int, points: float) -> float:
    """`points` split evenly over `total` test cases, for the `passed` of them.

    A group that matched no test cases earns nothing (the grader reports that as a
    problem with the rubric, not as the student's)."""
    if total <= 0 or passed <= 0:
        return 0.0
    passed = min(passed, total)
    return rounded(points * passed / total)


@dataclass
class SpeedScore:
    points: float
    status: str  # GRADED, REVIEW or NOT_MEASURED (from grader.result)
    reason: str
    time_ratio: float | None  # student time / reference time; None when not measurable


def speed_points(student_speedup: float, reference_speedup: float, points: float,
                 full_credit_ratio: float = 1.2, review_ratio: float = 10.0) -> SpeedScore:
    """Speed points from two speedups over the same baseline, measured in one run.

    The speedups are baseline time / kernel time, so student time / reference time =
    reference_speedup / student_speedup. Full credit when that ratio is at most
    `full_credit_ratio`; none when the student's kernel is no faster than the baseline
    (speedup <= 1); in between, linear in the speedup, from 0 at 1x to full credit at
    reference_speedup / full_credit_ratio. A speedup more than `review_ratio` times the
    reference's is flagged for review and earns nothing until a person looks at it.

    When the reference is itself barely faster than the baseline (reference_speedup /
    full_credit_ratio <= 1), any kernel faster than the baseline is within the ratio and
    earns full credit; there is no proportional band and no division by zero.
    """
    if not (isinstance(reference_speedup, (int, float)) and math.isfinite(reference_speedup)
            and reference_speedup > 0):
        return SpeedScore(0.0, NOT_MEASURED, "The reference solution's speed could not be "
                          "measured in this run, so no speed points were given either way.",
                          None)
    if not (isinstance(student_speedup, (int, float)) and math.isfinite(student_speedup)
            and student_speedup > 0):
        return SpeedScore(0.0, NOT_MEASURED, "Your kernel's speed could not be measured in "
                          "this run, so no speed points were given.", None)
    ratio = reference_speedup / student_speedup
    rel = (f"{student_speedup:.2f}x the baseline's speed (the reference reaches "
           f"{reference_speedup:.2f}x); your kernel took {ratio:.2f}x the reference's time")
    if student_speedup > review_ratio * reference_speedup:
        return SpeedScore(0.0, REVIEW, f"Your kernel measured {student_speedup:.2f}x the "
                          f"baseline's speed, more than {review_ratio:g}x the reference's "
                          f"{reference_speedup:.2f}x, which is implausible: it has been "
                          "flagged for review by the course staff and earns no speed points "
                          "until reviewed.", ratio)
    if student_speedup <= 1.0:
        return SpeedScore(0.0, GRADED, f"Your kernel was no faster than the baseline "
                          f"({student_speedup:.2f}x its speed; the reference reaches "
                          f"{reference_speedup:.2f}x), and speed points start only above the "
                          "baseline's speed.", ratio)
    if ratio <= full_credit_ratio:
        return SpeedScore(rounded(points), GRADED, f"Full speed points: {rel}, within the "
                          f"{full_credit_ratio:g}x allowed.", ratio)
    target = reference_speedup / full_credit_ratio  # > student_speedup > 1 here
    earned = points * (student_speedup - 1.0) / (target - 1.0)
    earned = min(max(earned, 0.0), points)
    return SpeedScore(rounded(earned), GRADED, f"Partial speed points: {rel}; full points need "
                      f"a time within {full_credit_ratio:g}x the reference's (a speedup of "
                      f"{target:.2f}x or more).", ratio)


def fraction_points(fraction: float, target: float, floor: float, points: float,
                    review_fraction: float = 1.5) -> SpeedScore:
    """Speed points from a fraction of a yardstick timed in the same run (lab 04's bonus:
    cuBLAS SGEMM time / the student's time, the median per-pair speedup of a comparison
    whose baseline is cuBLAS).

    Full points at `fraction` >= `target`; none at or below `floor`; linear in between. A
    fraction above `review_fraction` (faster than the yardstick by that much) is implausible:
    flagged for review, no points until a person looks. `time_ratio` in the result is the
    student's time over the yardstick's (1 / fraction)."""
    if not (isinstance(fraction, (int, float)) and math.isfinite(fraction) and fraction > 0):
        return SpeedScore(0.0, NOT_MEASURED, "Your kernel's speed relative to the yardstick "
                          "could not be measured in this run, so no points were given.", None)
    ratio = 1.0 / fraction
    shown = f"Your kernel reached {fraction:.3f} of the yardstick's speed in the same run"
    if fraction > review_fraction:
        return SpeedScore(0.0, REVIEW, f"{shown}, more than {review_fraction:g}x it, which is "
                          "implausible: it has been flagged for review by the course staff and "
                          "earns no points until reviewed.", ratio)
    if fraction >= target:
        return SpeedScore(rounded(points), GRADED, f"Full points: {shown} (full points from "
                          f"{target:g}).", ratio)
    if fraction <= floor or target <= floor:
        return SpeedScore(0.0, GRADED, f"{shown}; points start above {floor:g} and are full "
                          f"at {target:g}.", ratio)
    earned = rounded(points * (fraction - floor) / (target - floor))
    return SpeedScore(earned, GRADED, f"{earned:g} of {points:g} points: {shown}; points "
                      f"rise linearly from {floor:g} to full at {target:g}.", ratio)


class PointsScore(float):
    """Points (a float, usable as one) with the status and the reason beside them."""

    status: str
    reason: str
    details: dict[str, Any]

    def __new__(cls, points: float, status: str, reason: str,
                details: dict[str, Any] | None = None) -> "PointsScore":
        obj = super().__new__(cls, points)
        obj.status = status
        obj.reason = reason
        obj.details = details or {}
        return obj

    @property
    def points(self) -> float:
        return float(self)


def sanitizer_points(summaries: Iterable[SanitizerSummary], points: float) -> PointsScore:
    """Memory-safety points: each compute-sanitizer tool that ran to the end and reported
    no errors earns an equal share. `summaries` are sanitizer.SanitizerSummary records, one
    per tool. The result is a float with `.status`, `.reason` and `.details`
    (tool -> errors, None where the tool did not finish)."""
    tools = list(summaries)
    if not tools:
        return PointsScore(0.0, NOT_MEASURED, "compute-sanitizer was not run, so memory "
                           "safety was not measured (no points either way).")
    share = points / len(tools)
    earned = 0.0
    problems = []
    details: dict[str, int | None] = {}
    for s in tools:
        complete = getattr(s, "complete", True)
        details[s.tool] = s.errors if complete else None
        if s.ok:
            earned += share
        elif not complete:
            problems.append(f"{s.tool} did not finish (the program crashed or timed out "
                            "under it)")
        else:
            problems.append(f"{s.tool} reported {_count(s.errors, 'error')}"
                            + (f": {_first_line(s.messages[0])}" if s.messages else ""))
    if not problems:
        names = ", ".join(s.tool for s in tools)
        return PointsScore(rounded(earned), GRADED, f"No errors reported by {names}.", details)
    return PointsScore(rounded(earned), GRADED, "; ".join(problems) + ".", details)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.rstrip(".")


def metric_points(value: float | None, points: float, expect_min: float | None,
                  expect_max: float | None, missing_groups: Iterable[str] = (),
                  problem: str = "", source: str = "", explain: str = "") -> PointsScore:
    """Points for one profiler metric of the student's call (always GRADED: a metric that
    could not be measured never reaches this).

    `value` is the measured value, or None when the call gave the metric nothing to measure;
    `problem` then says why in the student's terms (no kernel launched, no shared-memory
    access...). Points need `points` > 0, the groups the metric requires at full marks
    (`missing_groups` lists those that are not) and the value inside [expect_min,
    expect_max] (either end may be open). `source` names what the value was read from
    ("kernel transpose_padded"), shown beside it; `explain` (metric_explanation) follows a
    value outside the range."""
    missing = list(missing_groups)
    if value is None or not math.isfinite(value):
        return PointsScore(0.0, GRADED, problem or "Nothing was measured.")
    shown = f"Measured {value:.4g}" + (f" in {source}" if source else "")
    if points <= 0:
        return PointsScore(0.0, GRADED, f"{shown} (reported, not scored).")
    if missing:
        return PointsScore(0.0, GRADED, f"{shown}, but metric points need full marks first in: "
                           + ", ".join(missing) + ".")
    wanted = _range_text(expect_min, expect_max)
    inside = ((expect_min is None or value >= expect_min)
              and (expect_max is None or value <= expect_max))
    if inside:
        return PointsScore(rounded(points), GRADED, f"{shown}: full points ({wanted} needed).")
    return PointsScore(0.0, GRADED, f"{shown}; full points need {wanted}. {explain}".strip())


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"a value between {lo:g} and {hi:g}"
    if hi is not None:
        return f"a value of at most {hi:g}"
    if lo is not None:
        return f"a value of at least {lo:g}"
    return "any value"


def missing_groups(requires: Iterable[str], full_groups: set[str]) -> list[str]:
    """The `requires` gate: the required correctness groups not at full marks."""
    return [g for g in requires if g not in full_groups]


def lab_totals(lab_result: LabResult) -> tuple[float, float]:
    """(points, max_points) of a lab: the sum over its parts, stored on the lab too.

    Parts not graded (no GPU) count towards max_points with 0 points, so a grade without a
    GPU reads "40 / 100", never "40 / 40". Parts not measured have been taken out of the
    maximum by leave_out_unmeasured() first."""
    points = rounded(sum(p.points for p in lab_result.parts))
    max_points = rounded(sum(p.max_points for p in lab_result.parts))
    lab_result.points, lab_result.max_points = points, max_points
    return points, max_points


def leave_out_unmeasured(lab_result: LabResult) -> None:
    """A part that could not be measured (a profiler or sanitizer missing or refused) is
    neither a loss nor a gain: its points leave the lab's maximum. The rubric's value stays in
    details["points_if_measured"] and the reason says so."""
    for part in lab_result.parts:
        if part.status == NOT_MEASURED and part.max_points > 0:
            part.details["points_if_measured"] = part.max_points
            note = (f"Its {part.max_points:g} point(s) are left out of the total: "
                    "neither lost nor gained.")
            part.reason = f"{part.reason.strip()} {note}".strip()
            part.points = part.max_points = 0.0


def grade_totals(grade_result: GradeResult) -> tuple[float, float]:
    """(points, max_points) over every lab (each lab's totals recomputed from its parts),
    stored on the grade too."""
    points = max_points = 0.0
    for lab in grade_result.labs:
        p, m = lab_totals(lab)
        points += p
        max_points += m
    grade_result.points, grade_result.max_points = rounded(points), rounded(max_points)
    return grade_result.points, grade_result.max_points
