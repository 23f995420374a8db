"""The GPU parts of a lab as results, from what grader/measure/ measured: memory safety (its
gate, the checked cases passing first, then the sanitizer's tools), speed (the performance
part and the [stretch] part: a document that agrees with its own samples, correctness, the
review flag and the physical floor before any points), and each [[metrics]] entry. The
points come from scoring.py's formulas; each part says why it earned less than full marks,
and what is flagged for a person to look at."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from . import scoring
from .lab_parts import as_bonus, status_of, stretch_name
from .measure import bench
from .measure.floor import floor_check, speed_of_light as sol_record
from .result import GRADED, NOT_MEASURED, PASSED, REVIEW, PartResult

if TYPE_CHECKING:  # the measurements' types only; scoring runs nothing
    from .benchdoc import Document, PairTiming
    from .catch2.testrun import Case, CaseRun
    from .measure.bench import BenchRuns
    from .measure.profiler import MetricRun
    from .measure.sanitizer import SanitizerRuns
    from .rubric import MemorySafety, Metric, Performance, Stretch


def memory_safety_gate(canonical: "list[Case]", runs: "Mapping[str, CaseRun]",
                       spec: str) -> str:
    """Why memory safety earns nothing before the sanitizer runs, or "" when it may: a
    kernel that does nothing is trivially clean, so the checked cases must pass first."""
    cases = [c for c in canonical if c.matches(spec)]
    failing = [c.name for c in cases if status_of(runs.get(c.name)) != PASSED]
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
    score = scoring.sanitizer_points(runs.summaries, ms.points)
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
    missing = scoring.missing_groups(perf.requires, full_groups)
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
    score = scoring.speed_points(s_speed or 0.0, r_speed or 0.0, perf.points,
                                 perf.full_credit_ratio, perf.review_ratio)
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


def below_floor_part(part: PartResult, too_fast: str, floor: dict[str, Any],
                     details: dict[str, Any] | None = None) -> PartResult:
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
    score = scoring.metric_points(run.value, entry.points, entry.expect_min, entry.expect_max,
                                  scoring.missing_groups(entry.requires, full_groups),
                                  run.problem, run.source, metric_explanation(entry))
    part.status, part.points = score.status, score.points
    part.reason = score.reason if score.points < entry.points or entry.points <= 0 else ""
    if run.review and score.points > 0:
        part.status, part.points = REVIEW, 0.0
        shown = f"{run.value:.4g}" + (f" in {run.source}" if run.source else "")
        part.reason = (f"Flagged for review: measured {shown}, inside the range, but "
                       f"{run.review}; no points for this metric until a person has looked "
                       "at it.")
    return part


def metric_explanation(entry: "Metric") -> str:
    """What a metric's lost points mean in the student's terms: the rubric's `explain` (what
    the number means, what usually makes it bad) and its handout's section that fixes it."""
    said = entry.explain.strip()
    if entry.handout_section:
        said += (f' The handout\'s section "{entry.handout_section}" shows how to fix it.')
    return said.strip()


def stretch_part(stretch: "Stretch", runs: "BenchRuns", full_groups: set[str],
                 sanitizer: "SanitizerRuns | None") -> PartResult:
    """The [stretch] speed part: the student's bench comparison `stretch.comparison`, whose
    baseline is the yardstick (lab 04: cuBLAS SGEMM) timed in the same run, so its median
    speedup is the fraction of the yardstick reached. Correctness first (_stretch_stopped),
    then the review flag and the physical floor, then fraction_points."""
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
    stopped = _stretch_stopped(stretch, runs.student_doc, comp, full_groups, sanitizer)
    if stopped is not None:
        part.status, part.reason = stopped
        return part
    assert comp is not None  # _stretch_stopped says why when there is none
    too_fast, floor = floor_check(stretch.comparison, runs.student_doc,
                                  runs.reference_doc, stretch.floor_margin)
    if too_fast:
        return below_floor_part(part, too_fast, floor)
    fraction = comp.speedup.median
    score = scoring.fraction_points(fraction or 0.0, stretch.target_fraction,
                                    stretch.floor_fraction, offered)
    part.points, part.status = score.points, score.status
    part.reason = score.reason if score.points < offered else ""
    part.details = {**part.details, "fraction": fraction, "summary": score.reason,
                    "floor": floor}
    return part


def _stretch_stopped(stretch: "Stretch", doc: "Document", comp: "PairTiming | None",
                     full_groups: set[str],
                     sanitizer: "SanitizerRuns | None") -> tuple[str, str] | None:
    """(status, reason) of a [stretch] part that earns nothing before its speed is looked
    at, or None: the bench did not time the comparison, the `requires` groups are not at
    full marks, the timed output is wrong or no kernel launched in a timed call, the
    `sanitizer_tests` cases are not clean under every tool, the review flag is up."""
    why_not_timed = doc.not_timed.get(stretch.comparison)
    if comp is None and why_not_timed:
        # The bench says why (lab 04 without the bonus: "... the optional bonus is not
        # attempted"): that, not the correctness groups it also fails, is the reason.
        return GRADED, (f"No points: the bench did not time '{stretch.comparison}': "
                        f"{why_not_timed.rstrip('.')}.")
    missing = scoring.missing_groups(stretch.requires, full_groups)
    if missing:
        return GRADED, ("No points: correctness comes first: these groups need full marks: "
                        + ", ".join(missing) + ".")
    if comp is None:
        return GRADED, f"No points: the bench reported no comparison '{stretch.comparison}'."
    problem = bench.timed_output_problem(comp) or bench.launch_problem(comp)
    if problem:
        return GRADED, f"No points: correctness comes first: {problem}."
    if stretch.sanitizer_tests:
        if sanitizer is None or sanitizer.unmeasured:
            return NOT_MEASURED, (sanitizer.unmeasured if sanitizer else "Not measured: "
                                  "compute-sanitizer did not run the bonus cases.")
        dirty = scoring.sanitizer_points(sanitizer.summaries, 1.0)
        if dirty.points < 1.0:
            return GRADED, f"No points: the sanitizer cases are not clean: {dirty.reason}"
    review = bench.review_problem(comp)
    if review:
        return REVIEW, ("Flagged for review: the bench's host-time cross-check says your "
                        f"timing cannot be trusted ({review}).")
    return None
