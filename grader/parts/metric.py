"""Profiler metrics ([[metrics]]): every entry of a lab measured in one ncu pass
(grader/measure/profiler.py), each scored by scoring.metric_points against its expected
range once its `requires` groups are at full marks; an entry with no points is reported
beside the score. A value inside the range from a kernel too small to decide is flagged
for review, not awarded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, cast

from .. import scoring
from ..measure import profiler
from ..measure.metric_rules import CALLS, TARGETS, Metric
from ..paths import LabPaths
from ..result import REVIEW, NOT_MEASURED, Kind, LabResult, PartResult
from ..rubric_schema import BOOLEAN, DERIVED, NUMBER, STRING, STRINGS, STRINGS_OR_STRING, \
    WHOLE_NUMBER, AtLeast, Filled, OneOf, Optional, Read, Required, Table, type_name
from . import performance
from .base import Entry, PartContext, RubricTables
from .correctness import required_groups

if TYPE_CHECKING:  # the measurement's type only
    from ..measure.profiler import MetricRun

KIND = Kind("metric")
_KERNEL_REGEX_GONE = ("a metric measures every kernel of the profiled call, whatever its name "
                      "(use `call` and `per_baseline`; grader/README.md)")

SCHEMA = Table("[[metrics]]", Metric, (
    Required("name", STRING),
    Optional("target", STRING, OneOf(TARGETS)),
    Optional("args", STRINGS_OR_STRING),  # one string: a Catch2 spec, target "tests" only
    Required("metric", STRING, Filled("must name an ncu metric")),
    Optional("per", STRING),
    Optional("call", STRING, OneOf(CALLS)),
    Optional("per_baseline", BOOLEAN),
    Optional("expect_min", NUMBER),
    Optional("expect_max", NUMBER),
    Optional("points", NUMBER, AtLeast(0)),
    Optional("requires", STRINGS, default=DERIVED),  # [performance].requires
    Optional("max_kernels", WHOLE_NUMBER, AtLeast(1)),
    Optional("explain", STRING),
    Optional("handout_section", STRING),
), named_by="name", gone={"kernel_regex": _KERNEL_REGEX_GONE,
                          "baseline_kernel_regex": _KERNEL_REGEX_GONE})


def entries_of(rubric: RubricTables) -> list[Metric]:
    """The rubric's [[metrics]] entries, in its order."""
    return cast(list[Metric], rubric.tables.get(PART.table, []))


class MetricPart:
    """Its measurement is each entry with its run, in the rubric's order."""

    kind = KIND
    label = "Profiler metric"
    table = "metrics"
    schema = SCHEMA
    many = True
    gpu = True

    def read(self, found: Read, lab: LabPaths, tables: Mapping[str, Any]) -> Metric:
        return read_metric(found, tables)

    def entries(self, rubric: RubricTables) -> list[Entry]:
        return [Entry(self.kind, m.name, m.points, None, m.metric) for m in entries_of(rubric)]

    def measure(self, ctx: PartContext) -> "list[tuple[Metric, MetricRun]] | None":
        entries = entries_of(ctx.rubric)
        if not entries or ctx.gpu is None:
            return None
        ctx.say(f"{ctx.folder}: profiling ({len(entries)} metric(s), one pass)")
        with ctx.section("profiler"):
            return list(zip(entries, profiler.metrics(entries, ctx.gpu)))

    def score(self, measured: "list[tuple[Metric, MetricRun]]",
              full_groups: set[str]) -> list[PartResult]:
        return [metric_part(entry, run, full_groups) for entry, run in measured]

    def record(self, measured: "list[tuple[Metric, MetricRun]]", ctx: PartContext,
               out: LabResult) -> None:
        pass  # the parts say it all


PART = MetricPart()


def read_metric(c: Read, tables: Mapping[str, Any]) -> Metric:
    """One [[metrics]] entry, with what one key alone cannot say checked."""
    target, call, per_baseline = c["target"], c["call"], c["per_baseline"]
    args = c["args"]
    if isinstance(args, str):
        if target != "tests":
            raise c.fail(f"{c.where}.args must be an array of strings, not {type_name(args)} "
                         "(one Catch2 spec string is for target = \"tests\")")
        args = [args]
    if target == "tests" and (call != "candidate" or per_baseline):
        raise c.fail(f"{c.where}: `call` and `per_baseline` need target = \"bench\" (only "
                     "the bench marks the student's and the baseline's calls)")
    if call == "baseline" and per_baseline:
        raise c.fail(f"{c.where}: per_baseline divides the candidate's value by the "
                     "baseline's; it needs call = \"candidate\"")
    lo, hi = c["expect_min"], c["expect_max"]
    if lo is not None and hi is not None and lo > hi:
        raise c.fail(f"{c.where}: expect_min ({lo:g}) is greater than expect_max ({hi:g})")
    if c["points"] > 0 and lo is None and hi is None:
        raise c.fail(f"{c.where} earns points but has neither expect_min nor expect_max")
    if c["points"] > 0 and call == "baseline":
        raise c.fail(f"{c.where} earns points for the baseline's call, which is not the "
                     "student's work")
    # Like speed, metric points wait for correctness: by default the groups speed needs.
    speed = tables.get(performance.PART.table)
    requires = (required_groups(c, tables) if "requires" in c.given
                else list(speed.requires) if speed else [])
    return c.build(Metric, args=args, requires=requires)


def metric_part(entry: Metric, run: "MetricRun", full_groups: set[str]) -> PartResult:
    """One [[metrics]] entry: always reported; scored by metric_points when measured. Points
    it would earn while a kernel too small to decide lies outside the range (run.review) are
    flagged for review instead."""
    part = PartResult(KIND, entry.name, NOT_MEASURED, 0.0, entry.points,
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


def metric_explanation(entry: Metric) -> str:
    """What a metric's lost points mean in the student's terms: the rubric's `explain` (what
    the number means, what usually makes it bad) and its handout's section that fixes it."""
    said = entry.explain.strip()
    if entry.handout_section:
        said += (f' The handout\'s section "{entry.handout_section}" shows how to fix it.')
    return said.strip()
