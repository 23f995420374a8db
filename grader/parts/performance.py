"""Speed ([performance]): the student's bench and the reference's, each timed against the
lab's baseline (grader/measure/bench.py). A bench document that agrees with its own samples
comes first (else nothing in it is believed), then correctness (the timed output verified, a
kernel launched in every timed call, the `requires` groups at full marks), then the
harness's review flag and the physical floor, then scoring.speed_points on the two
speedups recomputed from the samples. What a speed part shares with [stretch]: a document
that disagrees with its samples, a time below the floor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, cast

from .. import scoring
from ..measure import bench
from ..measure.floor import FLOOR_MARGIN, floor_check, speed_of_light as sol_record
from ..paths import LabPaths
from ..result import GRADED, NOT_MEASURED, REVIEW, Kind, LabResult, PartResult
from ..rubric_schema import NUMBER, STRING, STRINGS, Above, AtLeast, Filled, Optional, Read, \
    Required, Table
from .base import Entry, PartContext, RubricTables
from .correctness import required_groups

if TYPE_CHECKING:  # the measurement's type only
    from ..measure.bench import BenchRuns

KIND = Kind("performance")
NAME = "Performance"


@dataclass
class Performance:
    """The bench comparison `comparison`, scored against the reference (grader/README.md, "Scoring")."""

    points: float
    bench_args: list[str]
    comparison: str
    requires: list[str]
    full_credit_ratio: float = 1.2
    review_ratio: float = 10.0
    # a candidate time below the physical floor / floor_margin is flagged for review
    # (grader/measure/floor.py floor_check)
    floor_margin: float = FLOOR_MARGIN


BENCH_COMPARISON = Filled("must name a comparison of the bench")

SCHEMA = Table("[performance]", Performance, (
    Required("points", NUMBER, AtLeast(0)),
    Optional("bench_args", STRINGS, default=[]),
    Required("comparison", STRING, BENCH_COMPARISON),
    Optional("requires", STRINGS, default=[]),
    Optional("full_credit_ratio", NUMBER, AtLeast(1)),
    Optional("review_ratio", NUMBER, Above(1)),
    Optional("floor_margin", NUMBER, AtLeast(1)),
))


def rules(rubric: RubricTables) -> Performance | None:
    """The rubric's [performance] table (None: it has none)."""
    return cast("Performance | None", rubric.tables.get(PART.table))


@dataclass(frozen=True)
class Timed:
    """The speed part as measured: its table and the bench runs, which [stretch] reads too."""

    rules: Performance
    runs: "BenchRuns"


class PerformancePart:
    kind = KIND
    label = "Performance"
    table = "performance"
    schema = SCHEMA
    many = False
    gpu = True

    def read(self, found: Read, lab: LabPaths, tables: Mapping[str, Any]) -> Performance:
        if (lab.root / "solutions").is_dir() and not lab.solution_file.is_file():
            raise found.fail(f"[performance] is scored against the reference solution, and "
                             f"solutions/{lab.folder}/{lab.topic}.cu does not exist: add it "
                             "(python3 -m grader new-lab makes the pair) or remove "
                             "[performance]")
        return found.build(Performance, requires=required_groups(found, tables))

    def entries(self, rubric: RubricTables) -> list[Entry]:
        perf = rules(rubric)
        return ([Entry(self.kind, NAME, perf.points, None, f"comparison '{perf.comparison}'")]
                if perf else [])

    def measure(self, ctx: PartContext) -> Timed | None:
        perf = rules(ctx.rubric)
        if perf is None or ctx.gpu is None:
            return None
        ctx.say(f"{ctx.folder}: timing the bench (yours and the reference)")
        return Timed(perf, bench.performance(perf.comparison, perf.bench_args, ctx.gpu,
                                             ctx.section))

    def score(self, measured: Timed, full_groups: set[str]) -> list[PartResult]:
        return [performance_part(measured.rules, measured.runs, full_groups)]

    def record(self, measured: Timed, ctx: PartContext, out: LabResult) -> None:
        out.timing = measured.runs.timing


PART = PerformancePart()


def performance_part(perf: Performance, runs: "BenchRuns",
                     full_groups: set[str]) -> PartResult:
    """Speed points: a bench document that agrees with its own samples first (else nothing in
    it is believed), correctness (the timed output verified, a kernel launched in every
    timed call, the `requires` groups at full marks), then the harness's review flag and the
    physical floor, then speed_points on the two speedups, recomputed from the samples."""
    part = PartResult(KIND, NAME, NOT_MEASURED, 0.0, perf.points)
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
                       + (f"correctness comes first: {runs.output_problem.said}"
                          if runs.output_problem else runs.launch_problem.said
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
                       f"cannot be trusted ({runs.review_problem.said}); no speed points until a "
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
