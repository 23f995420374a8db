"""Memory safety ([memory_safety]): the checked cases must pass first (a kernel that writes
nothing is trivially clean), then every compute-sanitizer tool runs the binaries with those
cases (grader/measure/sanitizer.py) and each clean tool earns its share
(scoring.sanitizer_points)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, cast

from .. import scoring
from ..catch2.testrun import TEST_KINDS
from ..measure import sanitizer
from ..paths import LabPaths
from ..result import GRADED, NOT_MEASURED, PASSED, Kind, LabResult, PartResult
from ..rubric_schema import NUMBER, STRING, STRINGS, AtLeast, Distinct, EachOneOf, Filled, \
    Read, Required, Table
from .base import Entry, PartContext, RubricTables, in_lab, status_of

if TYPE_CHECKING:  # the test runs' and the measurement's types only
    from ..catch2.testrun import Case, CaseRun
    from ..measure.sanitizer import SanitizerRuns

KIND = Kind("memory_safety")
NAME = "Memory safety"


@dataclass
class MemorySafety:
    """Cases matching `tests` run under each compute-sanitizer tool; a clean tool earns
    its share of `points`."""

    points: float
    tests: str
    tools: list[str]


SCHEMA = Table("[memory_safety]", MemorySafety, (
    Required("points", NUMBER, AtLeast(0)),
    Required("tests", STRING),
    Required("tools", STRINGS, Filled("must name at least one tool"),
             EachOneOf(sanitizer.TOOLS, "compute-sanitizer tool"), Distinct()),
))


def rules(rubric: RubricTables) -> MemorySafety | None:
    """The rubric's [memory_safety] table (None: it has none)."""
    return cast("MemorySafety | None", rubric.tables.get(PART.table))


@dataclass(frozen=True)
class Safety:
    """Memory safety as measured against its table: why it earns nothing before the
    sanitizer runs (`gate`, then `runs` is None), else the tools' runs."""

    rules: MemorySafety
    gate: str
    runs: "SanitizerRuns | None"


class MemorySafetyPart:
    kind = KIND
    label = "Memory safety"
    table = "memory_safety"
    schema = SCHEMA
    many = False
    gpu = True

    def read(self, found: Read, lab: LabPaths, tables: Mapping[str, Any]) -> MemorySafety:
        return found.build(MemorySafety, tests=in_lab(found["tests"], lab))

    def entries(self, rubric: RubricTables) -> list[Entry]:
        ms = rules(rubric)
        return [Entry(self.kind, NAME, ms.points, None, ", ".join(ms.tools))] if ms else []

    def measure(self, ctx: PartContext) -> Safety | None:
        ms = rules(ctx.rubric)
        if ms is None or ctx.gpu is None:
            return None
        ctx.say(f"{ctx.folder}: compute-sanitizer")
        gate = memory_safety_gate(ctx.canonical, ctx.runs, ms.tests)
        if gate:
            return Safety(ms, gate, None)
        with ctx.section("sanitizer"):
            return Safety(ms, "", sanitizer.memory_safety(ms.tests, ms.tools, ctx.gpu,
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


def memory_safety_part(ms: MemorySafety, runs: "SanitizerRuns | None",
                       gate: str = "") -> PartResult:
    """The memory-safety part: zero with `gate` when the checked cases do not pass (the
    sanitizer was not run), else sanitizer_points over the tools' summaries."""
    if gate:
        return PartResult(KIND, NAME, GRADED, 0.0, ms.points, gate)
    assert runs is not None
    if runs.unmeasured:
        return PartResult(KIND, NAME, NOT_MEASURED, 0.0, ms.points,
                          runs.unmeasured)
    score = scoring.sanitizer_points(runs.summaries, ms.points)
    details = {**runs.details, "errors": score.details,
               "messages": {s.tool: s.messages[:3] for s in runs.summaries if s.messages}}
    return PartResult(KIND, NAME, score.status, score.points, ms.points,
                      score.reason if score.points < ms.points else "", details)
