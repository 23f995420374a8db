"""Profiler metrics ([[metrics]]): every entry of a lab measured in one ncu pass
(grader/measure/profiler.py), each scored by scoring.metric_points against its expected
range once its `requires` groups are at full marks; an entry with no points is reported
beside the score. A value inside the range from a kernel too small to decide is flagged
for review, not awarded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import scoring
from ..measure import profiler
from ..result import REVIEW, NOT_MEASURED, Kind, LabResult, PartResult
from .base import Entry, PartContext

if TYPE_CHECKING:  # the rubric's and the measurement's types only
    from ..measure.profiler import MetricRun
    from ..rubric import Metric, Rubric


class MetricPart:
    """Its measurement is each entry with its run, in the rubric's order."""

    kind = Kind.METRIC
    label = "Profiler metric"
    table = "[[metrics]]"
    gpu = True

    def entries(self, rubric: "Rubric") -> list[Entry]:
        return [Entry(self.kind, m.name, m.points, None, m.metric) for m in rubric.metrics]

    def measure(self, ctx: PartContext) -> "list[tuple[Metric, MetricRun]] | None":
        entries = ctx.rubric.metrics
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


def metric_part(entry: "Metric", run: "MetricRun", full_groups: set[str]) -> PartResult:
    """One [[metrics]] entry: always reported; scored by metric_points when measured. Points
    it would earn while a kernel too small to decide lies outside the range (run.review) are
    flagged for review instead."""
    part = PartResult(Kind.METRIC, entry.name, NOT_MEASURED, 0.0, entry.points,
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
