"""Every point the grader gives (grader/README.md, "Scoring"): correctness groups from the
test cases, the gates (`requires`, the sanitizer cases passing first), memory safety, speed,
profiler metrics, parts not graded or cut short, and the totals. Pure functions of what the
stages measured: no I/O, no GPU.

Every function that can award less than full marks also says why, in a sentence a
student understands; the reason goes into PartResult.reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from .measure import bench
from .measure.floor import floor_check, speed_of_light as sol_record
from .result import (FAILED, GRADED, NOT_GRADED, NOT_MEASURED, NOT_RUN, PASSED, REVIEW,
                     GradeResult, LabResult, PartResult, TestResult)

if TYPE_CHECKING:  # the measurements' types only; scoring runs nothing
    from .measure.bench import BenchRuns
    from .measure.profiler import MetricRun
    from .measure.sanitizer import SanitizerRuns
    from .rubric import MemorySafety, Metric, Performance, Rubric, Stretch
    from .catch2.testrun import Case

ROUND = 4  # decimal places kept in points


def _round(x: float) -> float:
    return round(x + 0.0, ROUND) + 0.0  # + 0.0 turns -0.0 into 0.0


def group_points(passed: int, total: int, points: float) -> float:
    """`points` split evenly over `total` test cases, for the `passed` of them.

    A group that matched no test cases earns nothing (the grader reports that as a
    problem with the rubric, not as the student's)."""
    if total <= 0 or passed <= 0:
        return 0.0
    passed = min(passed, total)
    return _round(points * passed / total)


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
        return SpeedScore(_round(points), GRADED, f"Full speed points: {rel}, within the "
                          f"{full_credit_ratio:g}x allowed.", ratio)
    target = reference_speedup / full_credit_ratio  # > student_speedup > 1 here
    earned = points * (student_speedup - 1.0) / (target - 1.0)
    earned = min(max(earned, 0.0), points)
    return SpeedScore(_round(earned), GRADED, f"Partial speed points: {rel}; full points need "
                      f"a time within {full_credit_ratio:g}x the reference's (a speedup of "
                      f"{target:.2f}x or more).", ratio)


class PointsScore(float):
    """Points (a float, usable as one) with the status and the reason beside them."""

    status: str
    reason: str
    details: dict

    def __new__(cls, points: float, status: str, reason: str, details: dict | None = None):
        obj = super().__new__(cls, points)
        obj.status = status
        obj.reason = reason
        obj.details = details or {}
        return obj

    @property
    def points(self) -> float:
        return float(self)


def sanitizer_points(summaries: Iterable, points: float) -> PointsScore:
    """Memory-safety points: each compute-sanitizer tool that ran to the end and reported
    no errors earns an equal share. `summaries` are sanitizer.SanitizerSummary records, one
    per tool. The result is a float with `.status`, `.reason` and `.details`
    (tool -> errors, None where the tool did not finish)."""
    summaries = list(summaries)
    if not summaries:
        return PointsScore(0.0, NOT_MEASURED, "compute-sanitizer was not run, so memory "
                           "safety was not measured (no points either way).")
    share = points / len(summaries)
    earned = 0.0
    problems = []
    details: dict = {}
    for s in summaries:
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
        tools = ", ".join(s.tool for s in summaries)
        return PointsScore(_round(earned), GRADED, f"No errors reported by {tools}.", details)
    return PointsScore(_round(earned), GRADED, "; ".join(problems) + ".", details)


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
        return PointsScore(_round(points), GRADED, f"{shown}: full points ({wanted} needed).")
    return PointsScore(0.0, GRADED, f"{shown}; full points need {wanted}. {explain}".strip())


def metric_explanation(entry: "Metric") -> str:
    """What a metric's lost points mean in the student's terms: the rubric's `explain` (what
    the number means, what usually makes it bad) and its handout's section that fixes it."""
    said = entry.explain.strip()
    if entry.handout_section:
        said += (f' The handout\'s section "{entry.handout_section}" shows how to fix it.')
    return said.strip()


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"a value between {lo:g} and {hi:g}"
    if hi is not None:
        return f"a value of at most {hi:g}"
    if lo is not None:
        return f"a value of at least {lo:g}"
    return "any value"


def lab_totals(lab_result: LabResult) -> tuple[float, float]:
    """(points, max_points) of a lab: the sum over its parts, stored on the lab too.

    Parts not graded (no GPU) count towards max_points with 0 points, so a grade without a
    GPU reads "40 / 100", never "40 / 40". Parts not measured have been taken out of the
    maximum by leave_out_unmeasured() first."""
    points = _round(sum(p.points for p in lab_result.parts))
    max_points = _round(sum(p.max_points for p in lab_result.parts))
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
    grade_result.points, grade_result.max_points = _round(points), _round(max_points)
    return grade_result.points, grade_result.max_points


def not_graded_reason(kind: str) -> str:
    """The standard sentence for a GPU part graded without a CUDA device."""
    return f"Not graded: no CUDA device, so this {kind.replace('_', ' ')} part was not run."


def missing_groups(requires: Iterable[str], full_groups: set[str]) -> list[str]:
    """The `requires` gate: the required correctness groups not at full marks."""
    return [g for g in requires if g not in full_groups]


# ------------------------------------------------------------------------------- correctness

@dataclass
class Correctness:
    """The correctness groups scored: their parts, every case as graded, and the names of
    the groups at full marks (what the `requires` gates read)."""

    parts: list[PartResult] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    full_groups: set[str] = field(default_factory=set)


def _status(run) -> str | None:
    return getattr(run, "status", None)


def correctness(rubric: "Rubric", canonical: "list[Case]", runs: dict, has_gpu: bool,
                why_no_gpu: str) -> Correctness:
    """Groups scored from the case results (`runs`: case name -> testrun.CaseRun). Each case
    counts in the first group that matches it; its share is the group's points over the
    group's cases."""
    out = Correctness()
    assigned: set[str] = set()
    for group in rubric.correctness:
        cases = [c for c in canonical if c.matches(group.tests)]
        gpu_cases = [c for c in cases if "gpu" in c.tags]
        passed = [c for c in cases if _status(runs.get(c.name)) == PASSED]
        share = group.points / len(cases) if cases else 0.0
        for c in cases:
            if c.name in assigned:
                continue
            assigned.add(c.name)
            run = runs.get(c.name)
            if run is None:
                status = NOT_RUN
                msgs = ["not run: no CUDA device" if "gpu" in c.tags and not has_gpu
                        else "this case did not report a result"]
            else:
                status, msgs = run.status, list(run.messages)
            if status == FAILED and group.hint:
                msgs.append(f"hint: {group.hint}")
            out.tests.append(TestResult(
                c.name, group.name, "gpu" if "gpu" in c.tags else "host", c.hidden, status,
                round(share, 4) if status == PASSED else 0.0, round(share, 4), msgs,
                getattr(run, "seconds", None)))
        details = {"passed": len(passed), "total": len(cases), "spec": group.tests}
        if not cases:
            out.parts.append(PartResult("correctness", group.name, GRADED, 0.0, group.points,
                                        f"No test case matches '{group.tests}' (a rubric "
                                        "problem).", details))
            continue
        if gpu_cases and not has_gpu:
            out.parts.append(_pending_gpu_part(group, cases, gpu_cases, passed, share,
                                               details, why_no_gpu))
            continue
        points = group_points(len(passed), len(cases), group.points)
        if len(passed) == len(cases):
            out.full_groups.add(group.name)
        reason = ""
        if points < group.points:
            bad = [c.name for c in cases if c not in passed]
            reason = (f"{len(passed)} of {len(cases)} test cases pass; failing: "
                      + "; ".join(bad[:4]) + ("…" if len(bad) > 4 else ""))
            if group.hint:
                reason += f". Hint: {group.hint}"
        out.parts.append(PartResult("correctness", group.name, GRADED, points, group.points,
                                    reason, details))
    for group, part in zip(rubric.correctness, out.parts):
        if group.bonus:
            as_bonus(part)
    return out


def as_bonus(part: PartResult) -> PartResult:
    """A bonus part: what it earns comes on top of the lab's maximum, so its maximum is 0
    and the points it offers are kept in details["bonus"]."""
    part.details = {**part.details, "bonus": part.max_points}
    part.max_points = 0.0
    return part


def _pending_gpu_part(group, cases: list, gpu_cases: list, passed: list, share: float,
                      details: dict, why_no_gpu: str) -> PartResult:
    """A group graded without a CUDA device. The rule (grader/README.md, "Scoring"): its
    host cases earn their share here; its GPU cases are pending, so the part stays "not
    graded" with the host points earned and the GPU share waiting for a GPU."""
    host = [c for c in cases if c not in gpu_cases]
    host_passed = [c for c in passed if c in host]
    host_points = _round(share * len(host_passed))
    host_max, gpu_max = _round(share * len(host)), _round(share * len(gpu_cases))
    details = {**details, "host_passed": len(host_passed), "host_total": len(host),
               "host_points": host_points, "host_max": host_max, "gpu_max": gpu_max,
               "why": why_no_gpu}
    reason = not_graded_reason("correctness")
    if host:
        reason = (f"Host cases: {len(host_passed)} of {len(host)} pass ({host_points:g} of "
                  f"{host_max:g} points, graded here). Not graded: no CUDA device, so its "
                  f"{len(gpu_cases)} GPU case(s) ({gpu_max:g} points) were not run.")
        if len(host_passed) < len(host) and group.hint:
            reason += f" Hint: {group.hint}"
    return PartResult("correctness", group.name, NOT_GRADED, host_points, group.points,
                      reason, details)


# ------------------------------------------------------------------ the GPU parts, measured

def memory_safety_gate(canonical: "list[Case]", runs: dict, spec: str) -> str:
    """Why memory safety earns nothing before the sanitizer runs, or "" when it may: a
    kernel that does nothing is trivially clean, so the checked cases must pass first."""
    cases = [c for c in canonical if c.matches(spec)]
    failing = [c.name for c in cases if _status(runs.get(c.name)) != PASSED]
    if not cases:
        return f"No test case matches '{spec}' (a rubric problem)."
    if failing:
        return ("No memory-safety points: the cases checked under compute-sanitizer must "
                "pass first (a kernel that writes nothing is trivially clean); failing: "
                + "; ".join(failing[:3]) + ".")
    return ""


def memory_safety_part(ms: "MemorySafety", runs: "SanitizerRuns | None",
                       gate: str = "") -> PartResult:
    """The memory-safety part: zero with `gate` when the checked cases do not pass (the
    sanitizer was not run), else sanitizer_points over the tools' summaries."""
    name = "Memory safety"
    if gate:
        return PartResult("memory_safety", name, GRADED, 0.0, ms.points, gate)
    assert runs is not None
    if runs.unmeasured:
        return PartResult("memory_safety", name, NOT_MEASURED, 0.0, ms.points, runs.unmeasured)
    score = sanitizer_points(runs.summaries, ms.points)
    details = {**runs.details, "errors": score.details,
               "messages": {s.tool: s.messages[:3] for s in runs.summaries if s.messages}}
    return PartResult("memory_safety", name, score.status, score.points, ms.points,
                      score.reason if score.points < ms.points else "", details)


def performance_part(perf: "Performance", runs: "BenchRuns",
                     full_groups: set[str]) -> PartResult:
    """Speed points: a bench document that agrees with its own samples first (else nothing in
    it is believed), correctness (the timed output verified, a kernel launched in every
    timed call, the `requires` groups at full marks), then the harness's review flag and the
    physical floor, then speed_points on the two speedups, recomputed from the samples."""
    part = PartResult("performance", "Performance", NOT_MEASURED, 0.0, perf.points)
    if runs.unmeasured:
        part.reason = f"{runs.unmeasured} {runs.note}".strip()
        if (runs.no_reference and not runs.altered and runs.timing is not None
                and runs.timing.student_speedup):
            part.details = {"student_speedup": runs.timing.student_speedup,
                            **speed_of_light(perf.comparison, runs)}
        return part
    part.status = GRADED
    if runs.failed:
        part.reason = f"No speed points: {runs.failed}"
        return part
    if runs.altered:
        return altered_part(part, runs)
    timing = runs.timing
    assert timing is not None
    s_speed, r_speed = timing.student_speedup, timing.reference_speedup
    missing = missing_groups(perf.requires, full_groups)
    if runs.output_problem or runs.launch_problem or missing:
        part.reason = ("No speed points: "
                       + (f"correctness comes first: {runs.output_problem}"
                          if runs.output_problem else runs.launch_problem
                          if runs.launch_problem else
                          "correctness comes first: these groups need full marks: "
                          + ", ".join(missing)) + ".")
        comp = runs.student_comparison
        launches = comp.candidate.launches if comp is not None else None
        part.details = {"student_speedup": s_speed, "reference_speedup": r_speed,
                        "launches": launches.to_dict() if launches is not None else None,
                        **speed_of_light(perf.comparison, runs)}
        return part
    if runs.review_problem:
        part.status = REVIEW
        part.reason = ("Flagged for review: the bench's host-time cross-check says your timing "
                       f"cannot be trusted ({runs.review_problem}); no speed points until a "
                       "person has looked at it.")
        comp = runs.student_comparison
        review = comp.review if comp is not None else None
        part.details = {"student_speedup": s_speed, "reference_speedup": r_speed,
                        "review": review.to_dict() if review is not None else None}
        return part
    too_fast, floor = floor_check(perf.comparison, runs.student_doc, runs.reference_doc,
                                           perf.floor_margin)
    if too_fast:
        return below_floor_part(part, too_fast, floor,
                                {"student_speedup": s_speed, "reference_speedup": r_speed,
                                 **speed_of_light(perf.comparison, runs)})
    score = speed_points(s_speed or 0.0, r_speed or 0.0, perf.points, perf.full_credit_ratio,
                         perf.review_ratio)
    part.points, part.status = score.points, score.status
    part.reason = " ".join(filter(None, [score.reason if score.points < perf.points else "",
                                         runs.clock_note]))
    part.details = {"student_speedup": s_speed, "reference_speedup": r_speed,
                    "time_ratio": score.time_ratio, "summary": score.reason, "floor": floor,
                    **speed_of_light(perf.comparison, runs)}
    return part


def speed_of_light(comparison: str, runs: "BenchRuns") -> dict[str, Any]:
    """{"speed_of_light": floor.speed_of_light's record} for a performance part's
    details, or {}: only for a student's document that agreed with its own samples and
    whose timed kernel did the work (its output verified, a kernel launched in every timed
    call, no review flag from the host-time cross-check). A figure, never points."""
    if (runs.altered or runs.failed or (runs.unmeasured and not runs.no_reference)
            or runs.output_problem or runs.launch_problem or runs.review_problem):
        return {}
    record = sol_record(comparison, runs.student_doc, runs.reference_doc)
    return {"speed_of_light": record.to_dict()} if record is not None else {}


def altered_part(part: PartResult, runs: "BenchRuns") -> PartResult:
    """A speed part whose bench document disagrees with its own samples: nothing in it is
    believed, so no points, flagged for a person to look at."""
    part.status, part.points = REVIEW, 0.0
    part.reason = (f"Flagged for review: {runs.altered}. No speed points until a person has "
                   "looked at it.")
    part.details = {**part.details, "disagreements": list(runs.disagreements)}
    return part


def below_floor_part(part: PartResult, too_fast: str, floor: dict,
                     details: dict | None = None) -> PartResult:
    """A speed part whose candidate time is below the physical floor (floor.floor_check):
    impossible on this GPU, so flagged for review and not awarded."""
    part.status, part.points = REVIEW, 0.0
    part.reason = (f"Flagged for review: your kernel's median time, {too_fast}, which is not "
                   "possible on this GPU; no speed points until a person has looked at it.")
    part.details = {**part.details, **(details or {}), "floor": floor}
    return part


def metric_part(entry: "Metric", run: "MetricRun", full_groups: set[str]) -> PartResult:
    """One [[metrics]] entry: always reported; scored by metric_points when measured. Points
    it would earn while a kernel too small to decide lies outside the range (run.review) are
    flagged for review instead."""
    part = PartResult("metric", entry.name, NOT_MEASURED, 0.0, entry.points,
                      run.unmeasured, run.details)
    if run.unmeasured:
        return part
    part.details["value"] = run.value
    score = metric_points(run.value, entry.points, entry.expect_min, entry.expect_max,
                          missing_groups(entry.requires, full_groups), run.problem, run.source,
                          metric_explanation(entry))
    part.status, part.points = score.status, score.points
    part.reason = score.reason if score.points < entry.points or entry.points <= 0 else ""
    if run.review and score.points > 0:
        part.status, part.points = REVIEW, 0.0
        shown = f"{run.value:.4g}" + (f" in {run.source}" if run.source else "")
        part.reason = (f"Flagged for review: measured {shown}, inside the range, but "
                       f"{run.review}; no points for this metric until a person has looked "
                       "at it.")
    return part


# ------------------------------------------------------------- parts not graded, cut short

def stretch_name(stretch: "Stretch") -> str:
    """The name of the [stretch] speed part."""
    return "Bonus speed" if stretch.bonus else "Stretch speed"


def rubric_parts(rubric: "Rubric") -> list[tuple[str, str, float]]:
    """(kind, name, maximum) of every part the rubric scores, in report order. A bonus part's
    maximum is 0: its points come on top of the lab's maximum."""
    parts = [("correctness", g.name, 0.0 if g.bonus else g.points) for g in rubric.correctness]
    if rubric.memory_safety:
        parts.append(("memory_safety", "Memory safety", rubric.memory_safety.points))
    if rubric.performance:
        parts.append(("performance", "Performance", rubric.performance.points))
    if rubric.stretch:
        parts.append(("performance", stretch_name(rubric.stretch),
                      0.0 if rubric.stretch.bonus else rubric.stretch.points))
    parts += [("metric", m.name, m.points) for m in rubric.metrics]
    return parts


def bonus_offers(rubric: "Rubric") -> dict[tuple[str, str], float]:
    """(kind, name) -> points offered, for the rubric's bonus parts."""
    out = {("correctness", g.name): g.points for g in rubric.correctness if g.bonus}
    if rubric.stretch and rubric.stretch.bonus:
        out[("performance", stretch_name(rubric.stretch))] = rubric.stretch.points
    return out


def _marked(part: PartResult, offers: dict[tuple[str, str], float]) -> PartResult:
    if (part.kind, part.name) in offers:
        part.details = {**part.details, "bonus": offers[(part.kind, part.name)]}
    return part


def finish_unfinished(lab_result: LabResult, rubric: "Rubric", reason: str) -> None:
    """Every rubric part not yet in the result, at zero points with `reason` (the lab
    stopped before it: no submission, a build failure, a static check, a grader failure)."""
    have = {(p.kind, p.name) for p in lab_result.parts}
    offers = bonus_offers(rubric)
    for kind, name, points in rubric_parts(rubric):
        if (kind, name) not in have:
            lab_result.parts.append(_marked(PartResult(kind, name, GRADED, 0.0, points, reason),
                                            offers))


def not_graded_parts(rubric: "Rubric", why_no_gpu: str) -> list[PartResult]:
    """The GPU parts (all but correctness) of a lab graded without a CUDA device."""
    offers = bonus_offers(rubric)
    return [_marked(PartResult(kind, name, NOT_GRADED, 0.0, points, not_graded_reason(kind),
                               {"why": why_no_gpu}), offers)
            for kind, name, points in rubric_parts(rubric) if kind != "correctness"]


def stretch_part(stretch: "Stretch", runs: "BenchRuns", full_groups: set[str],
                 sanitizer: "SanitizerRuns | None") -> PartResult:
    """The [stretch] speed part: the student's bench comparison `stretch.comparison`, whose
    baseline is the yardstick (lab 04: cuBLAS SGEMM) timed in the same run, so its median
    speedup is the fraction of the yardstick reached. Correctness first: the `requires`
    groups at full marks, the timed output verified and a kernel launched in every timed
    call, and the `sanitizer_tests` cases clean under every tool."""
    offered = stretch.points
    part = PartResult("performance", stretch_name(stretch), NOT_MEASURED, 0.0, offered)
    if stretch.bonus:
        as_bonus(part)
    if runs.unmeasured:
        part.reason = runs.unmeasured
        return part
    part.status = GRADED
    if runs.failed or runs.student_doc is None:
        part.reason = f"No points: {runs.failed or 'your bench gave no timing.'}"
        return part
    if runs.altered:
        return altered_part(part, runs)
    comp = runs.student_doc.comparison(stretch.comparison)
    why_not_timed = runs.student_doc.not_timed.get(stretch.comparison)
    if comp is None and why_not_timed:
        # The bench says why (lab 04 without the bonus: "... the optional bonus is not
        # attempted"): that, not the correctness groups it also fails, is the reason.
        part.reason = (f"No points: the bench did not time '{stretch.comparison}': "
                       f"{why_not_timed.rstrip('.')}.")
        return part
    missing = missing_groups(stretch.requires, full_groups)
    if missing:
        part.reason = ("No points: correctness comes first: these groups need full marks: "
                       + ", ".join(missing) + ".")
        return part
    if comp is None:
        part.reason = f"No points: the bench reported no comparison '{stretch.comparison}'."
        return part
    problem = bench.timed_output_problem(comp) or bench.launch_problem(comp)
    if problem:
        part.reason = f"No points: correctness comes first: {problem}."
        return part
    if stretch.sanitizer_tests:
        if sanitizer is None or sanitizer.unmeasured:
            part.status = NOT_MEASURED
            part.reason = (sanitizer.unmeasured if sanitizer else "Not measured: "
                           "compute-sanitizer did not run the bonus cases.")
            return part
        dirty = sanitizer_points(sanitizer.summaries, 1.0)
        if dirty.points < 1.0:
            part.reason = f"No points: the sanitizer cases are not clean: {dirty.reason}"
            return part
    review = bench.review_problem(comp)
    if review:
        part.status = REVIEW
        part.reason = ("Flagged for review: the bench's host-time cross-check says your timing "
                       f"cannot be trusted ({review}).")
        return part
    too_fast, floor = floor_check(stretch.comparison, runs.student_doc,
                                           runs.reference_doc, stretch.floor_margin)
    if too_fast:
        return below_floor_part(part, too_fast, floor)
    fraction = comp.speedup.median
    score = fraction_points(fraction or 0.0, stretch.target_fraction, stretch.floor_fraction,
                            offered)
    part.points, part.status = score.points, score.status
    part.reason = score.reason if score.points < offered else ""
    part.details = {**part.details, "fraction": fraction, "summary": score.reason,
                    "floor": floor}
    return part


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
        return SpeedScore(_round(points), GRADED, f"Full points: {shown} (full points from "
                          f"{target:g}).", ratio)
    if fraction <= floor or target <= floor:
        return SpeedScore(0.0, GRADED, f"{shown}; points start above {floor:g} and are full "
                          f"at {target:g}.", ratio)
    earned = _round(points * (fraction - floor) / (target - floor))
    return SpeedScore(earned, GRADED, f"{earned:g} of {points:g} points: {shown}; points "
                      f"rise linearly from {floor:g} to full at {target:g}.", ratio)


__all__ = ["GRADED", "NOT_GRADED", "NOT_MEASURED", "REVIEW", "SpeedScore", "PointsScore",
           "group_points", "speed_points", "sanitizer_points", "metric_points", "lab_totals",
           "grade_totals", "leave_out_unmeasured", "not_graded_reason", "missing_groups",
           "Correctness", "correctness", "memory_safety_gate", "memory_safety_part",
           "performance_part", "metric_part", "rubric_parts", "finish_unfinished",
           "altered_part", "below_floor_part", "speed_of_light",
           "not_graded_parts",
           "fraction_points", "stretch_part", "as_bonus", "bonus_offers", "stretch_name"]
