"""Memory safety ([memory_safety]): the checked cases must pass first (a kernel that writes
nothing is trivially clean), then every compute-sanitizer tool runs the binaries with those
cases (grader/measure/sanitizer.py) and each clean tool earns its share
(scoring.sanitizer_points)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from .. import scoring
from ..catch2.testrun import TEST_KINDS
from ..measure import sanitizer
from ..result import GRADED, NOT_MEASURED, PASSED, Kind, LabResult, PartResult
from .base import Entry, PartContext, status_of

if TYPE_CHECKING:  # the rubric's and the test runs' types only
    from ..catch2.testrun import Case, CaseRun
    from ..measure.sanitizer import SanitizerRuns
    from ..rubric import MemorySafety, Rubric

NAME = "Memory safety"


@dataclass(frozen=True)
class Safety:
    """Memory safety as measured against its table: why it earns nothing before the
    sanitizer runs (`gate`, then `runs` is None), else the tools' runs."""

    rules: "MemorySafety"
    gate: str
    runs: "SanitizerRuns | None"


class MemorySafetyPart:
    kind = Kind.MEMORY_SAFETY
    label = "Memory safety"
    table = "[memory_safety]"
    gpu = True

    def entries(self, rubric: "Rubric") -> list[Entry]:
        ms = rubric.memory_safety
        return [Entry(self.kind, NAME, ms.points, None, ", ".join(ms.tools))] if ms else []

    def measure(self, ctx: PartContext) -> Safety | None:
        ms = ctx.rubric.memory_safety
        if ms is None or ctx.gpu is None:
            return None
        ctx.say(f"{ctx.folder}: compute-sanitizer")
        gate = memory_safety_gate(ctx.canonical, ctx.runs, ms.tests)
        if gate:
            return Safety(ms, gate, None)
        with ctx.section("sanitizer"):
            return Safety(ms, "", sanitizer.memory_safety(ms, ctx.gpu,
                                                          case_binaries(ctx, ms.tests)))

    def score(self, measured: Safety, full_groups: set[str]) -> list[PartResult]:
        return [memory_safety_part(measured.rules, measured.runs, measured.gate)]

    def record(self, measured: Safety, ctx: PartContext, out: LabResult) -> None:
        pass  # the part says it all


PART = MemorySafetyPart()


def case_binaries(ctx: PartContext, spec: str) -> list[tuple[str, str]]:
    """(binary kind, spec) for each test binary holding a case `spec` matches."""
    return [(k, spec) for k in TEST_KINDS
            if any(c.matches(spec) and c.runs_in(k) for c in ctx.canonical)]


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
    if gate:
        return PartResult(Kind.MEMORY_SAFETY, NAME, GRADED, 0.0, ms.points, gate)
    assert runs is not None
    if runs.unmeasured:
        return PartResult(Kind.MEMORY_SAFETY, NAME, NOT_MEASURED, 0.0, ms.points,
                          runs.unmeasured)
    score = scoring.sanitizer_points(runs.summaries, ms.points)
    details = {**runs.details, "errors": score.details,
               "messages": {s.tool: s.messages[:3] for s in runs.summaries if s.messages}}
    return PartResult(Kind.MEMORY_SAFETY, NAME, score.status, score.points, ms.points,
                      score.reason if score.points < ms.points else "", details)
