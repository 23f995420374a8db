"""The stretch speed part ([stretch]): the student's bench comparison `comparison`, whose
baseline is the yardstick (lab 04: cuBLAS SGEMM) timed in the same bench run as
[performance], so its median speedup is the fraction of the yardstick reached
(scoring.fraction_points). Its `sanitizer_tests` cases run under the [memory_safety] tools
once its `requires` groups are at full marks; a bonus stretch offers its points on top."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, cast

from .. import scoring
from ..measure import bench, sanitizer
from ..measure.floor import FLOOR_MARGIN, floor_check
from ..paths import LabPaths
from ..result import GRADED, NOT_MEASURED, REVIEW, LabResult, PartResult
from ..rubric_schema import BOOLEAN, NUMBER, STRING, STRINGS, Above, AtLeast, Optional, Read, \
    Required, Table
from . import memory_safety, performance
from .base import Entry, PartContext, RubricTables, as_bonus
from .correctness import required_groups
from .memory_safety import case_binaries
from .performance import BENCH_COMPARISON, altered_part, below_floor_part

if TYPE_CHECKING:  # the measurements' types only
    from ..benchdoc import Document, PairTiming
    from ..measure.bench import BenchRuns
    from ..measure.sanitizer import SanitizerRuns


@dataclass
class Stretch:
    """A speed part scored as a fraction of a yardstick timed in the same run: the bench
    comparison `comparison` interleaves the yardstick (baseline) with the student's call, so
    its median speedup is the fraction; scoring.fraction_points turns it into points (full
    at `target_fraction`, none at or below `floor_fraction`). Needs the groups in `requires`
    at full marks and, when `sanitizer_tests` is set, those cases clean under the
    [memory_safety] tools."""

    points: float
    comparison: str
    requires: list[str]
    target_fraction: float = 0.6
    floor_fraction: float = 0.0
    sanitizer_tests: str = ""
    bonus: bool = False
    floor_margin: float = FLOOR_MARGIN  # as [performance].floor_margin


SCHEMA = Table("[stretch]", Stretch, (
    Required("points", NUMBER, AtLeast(0)),
    Required("comparison", STRING, BENCH_COMPARISON),
    Optional("requires", STRINGS, default=[]),
    Optional("target_fraction", NUMBER, Above(0)),
    Optional("floor_fraction", NUMBER, AtLeast(0)),
    Optional("sanitizer_tests", STRING),
    Optional("bonus", BOOLEAN),
    Optional("floor_margin", NUMBER, AtLeast(1)),
))


def rules(rubric: RubricTables) -> Stretch | None:
    """The rubric's [stretch] table (None: it has none)."""
    return cast("Stretch | None", rubric.tables.get(PART.table))


@dataclass(frozen=True)
class StretchRun:
    """The stretch part as measured: its table, the bench runs of [performance] and its
    sanitizer cases' runs (None: not run)."""

    rules: Stretch
    timed: "BenchRuns"
    sanitizer: "SanitizerRuns | None"


class StretchPart:
    kind = performance.KIND  # a speed part too
    label = "Performance"
    table = "stretch"
    schema = SCHEMA
    many = False
    gpu = True

    def read(self, found: Read, lab: LabPaths, tables: Mapping[str, Any]) -> Stretch:
        if found["floor_fraction"] >= found["target_fraction"]:
            raise found.fail(f"[stretch].floor_fraction ({found['floor_fraction']:g}) must be "
                             f"below target_fraction ({found['target_fraction']:g})")
        return found.build(Stretch, requires=required_groups(found, tables))

    def entries(self, rubric: RubricTables) -> list[Entry]:
        s = rules(rubric)
        return ([Entry(self.kind, stretch_name(s), 0.0 if s.bonus else s.points,
                       s.points if s.bonus else None, f"comparison '{s.comparison}'")]
                if s else [])

    def measure(self, ctx: PartContext) -> StretchRun | None:
        stretch, ms = rules(ctx.rubric), memory_safety.rules(ctx.rubric)
        timed: performance.Timed | None = ctx.measured.get(performance.PART.table)
        if stretch is None or ctx.gpu is None or timed is None:
            return None  # its speed comes from the [performance] bench run
        found = None
        if stretch.sanitizer_tests and ms and not scoring.missing_groups(stretch.requires,
                                                                         ctx.full_groups):
            spec = stretch.sanitizer_tests
            ctx.say(f"{ctx.folder}: compute-sanitizer ({spec})")
            with ctx.section("sanitizer"):
                found = sanitizer.memory_safety(spec, ms.tools, ctx.gpu,
                                                case_binaries(ctx, spec))
        return StretchRun(stretch, timed.runs, found)

    def score(self, measured: StretchRun, full_groups: set[str]) -> list[PartResult]:
        return [stretch_part(measured.rules, measured.timed, full_groups, measured.sanitizer)]

    def record(self, measured: StretchRun, ctx: PartContext, out: LabResult) -> None:
        pass  # the part says it all


PART = StretchPart()


def stretch_name(stretch: Stretch) -> str:
    """The name of the [stretch] speed part."""
    return "Bonus speed" if stretch.bonus else "Stretch speed"


def stretch_part(stretch: Stretch, runs: "BenchRuns", full_groups: set[str],
                 sanitizer: "SanitizerRuns | None") -> PartResult:
    """The [stretch] speed part: the student's bench comparison `stretch.comparison`, whose
    baseline is the yardstick (lab 04: cuBLAS SGEMM) timed in the same run, so its median
    speedup is the fraction of the yardstick reached. Correctness first (_stretch_stopped),
    then the review flag and the physical floor, then fraction_points."""
    offered = stretch.points
    part = PartResult(performance.KIND, stretch_name(stretch), NOT_MEASURED, 0.0, offered)
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


def _stretch_stopped(stretch: Stretch, doc: "Document", comp: "PairTiming | None",
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
        return GRADED, f"No points: correctness comes first: {problem.said}."
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
                        f"timing cannot be trusted ({review.said}).")
    return None
