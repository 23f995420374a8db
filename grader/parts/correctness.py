"""The correctness groups ([[correctness]]): each group's points shared by the test cases
its Catch2 spec matches (scoring.group_points), a group with GPU cases graded without a
device left pending with its host share earned, and the names of the groups at full marks,
which the `requires` gates of the parts after it read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, cast

from ..paths import LabPaths
from ..result import FAILED, GRADED, NOT_GRADED, NOT_RUN, PASSED, Kind, LabResult, PartResult, \
    TestResult
from ..rubric_schema import BOOLEAN, NUMBER, STRING, AtLeast, Filled, Optional, Read, \
    Required, Table
from ..scoring import group_points, rounded
from .base import Entry, PartContext, RubricTables, as_bonus, in_lab, not_graded_reason, \
    status_of

if TYPE_CHECKING:  # the test runs' types only
    from ..catch2.testrun import Case, CaseRun

KIND = Kind("correctness")


@dataclass
class CorrectnessGroup:
    """Test cases matching the Catch2 spec `tests` share `points` evenly."""

    name: str
    tests: str
    points: float
    hint: str = ""
    bonus: bool = False  # points above the lab's maximum: not doing it costs nothing


SCHEMA = Table("[[correctness]]", CorrectnessGroup, (
    Required("name", STRING, Filled()),
    Required("tests", STRING, Filled()),
    Required("points", NUMBER, AtLeast(0)),
    Optional("hint", STRING),
    Optional("bonus", BOOLEAN),
), named_by="name")


def groups(rubric: RubricTables) -> list[CorrectnessGroup]:
    """The rubric's correctness groups, in its order."""
    return cast(list[CorrectnessGroup], rubric.tables.get(PART.table, []))


@dataclass
class Correctness:
    """The correctness groups scored: their parts, every case as graded, and the names of
    the groups at full marks (what the `requires` gates read)."""

    parts: list[PartResult] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    full_groups: set[str] = field(default_factory=set)


class CorrectnessPart:
    """[[correctness]]: its measurement is the cases' results grouped (`correctness`)."""

    kind = KIND
    label = "Correctness"
    table = "correctness"
    schema = SCHEMA
    many = True
    gpu = False

    def read(self, found: Read, lab: LabPaths, tables: Mapping[str, Any]) -> CorrectnessGroup:
        return found.build(CorrectnessGroup, tests=in_lab(found["tests"], lab))

    def entries(self, rubric: RubricTables) -> list[Entry]:
        return [Entry(self.kind, g.name, 0.0 if g.bonus else g.points,
                      g.points if g.bonus else None, g.tests) for g in groups(rubric)]

    def measure(self, ctx: PartContext) -> Correctness:
        return correctness(ctx.rubric, ctx.canonical, ctx.runs, ctx.has_gpu, ctx.why_no_gpu)

    def score(self, measured: Correctness, full_groups: set[str]) -> list[PartResult]:
        return measured.parts

    def record(self, measured: Correctness, ctx: PartContext, out: LabResult) -> None:
        out.tests += measured.tests
        ctx.full_groups |= measured.full_groups


PART = CorrectnessPart()


def required_groups(found: Read, tables: Mapping[str, Any]) -> list[str]:
    """A table's `requires`: each a [[correctness]] group of this rubric (read first)."""
    names = {g.name for g in tables.get(PART.table, [])}
    for name in found["requires"]:
        if name not in names:
            known = ", ".join(repr(n) for n in sorted(names)) or "none"
            raise found.fail(f"{found.where}.requires names '{name}', which is not a "
                             f"[[correctness]] group (groups: {known})")
    return list(found["requires"])


def correctness(rubric: RubricTables, canonical: "list[Case]", runs: "Mapping[str, CaseRun]",
                has_gpu: bool, why_no_gpu: str) -> Correctness:
    """Groups scored from the case results (`runs`: case name -> testrun.CaseRun). Each case
    counts in the first group that matches it; its share is the group's points over the
    group's cases."""
    out = Correctness()
    assigned: set[str] = set()
    for group in groups(rubric):
        cases = [c for c in canonical if c.matches(group.tests)]
        gpu_cases = [c for c in cases if "gpu" in c.tags]
        passed = [c for c in cases if status_of(runs.get(c.name)) == PASSED]
        share = group.points / len(cases) if cases else 0.0
        for c in cases:
            if c.name in assigned:
                continue
            assigned.add(c.name)
            out.tests.append(_test_row(c, group, runs.get(c.name), share, has_gpu))
        details = {"passed": len(passed), "total": len(cases), "spec": group.tests}
        if not cases:
            out.parts.append(PartResult(KIND, group.name, GRADED, 0.0,
                                        group.points, f"No test case matches '{group.tests}' "
                                        "(a rubric problem).", details))
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
        out.parts.append(PartResult(KIND, group.name, GRADED, points, group.points,
                                    reason, details))
    for group, part in zip(groups(rubric), out.parts):
        if group.bonus:
            as_bonus(part)
    return out


def _test_row(case: "Case", group: CorrectnessGroup, run: "CaseRun | None", share: float,
              has_gpu: bool) -> TestResult:
    """One case as graded, in the first group that matches it."""
    if run is None:
        status = NOT_RUN
        msgs = ["not run: no CUDA device" if "gpu" in case.tags and not has_gpu
                else "this case did not report a result"]
    else:
        status, msgs = run.status, list(run.messages)
    if status == FAILED and group.hint:
        msgs.append(f"hint: {group.hint}")
    return TestResult(case.name, group.name, "gpu" if "gpu" in case.tags else "host",
                      case.hidden, status, round(share, 4) if status == PASSED else 0.0,
                      round(share, 4), msgs, getattr(run, "seconds", None))


def _pending_gpu_part(group: CorrectnessGroup, cases: "list[Case]",
                      gpu_cases: "list[Case]", passed: "list[Case]", share: float,
                      details: dict[str, Any], why_no_gpu: str) -> PartResult:
    """A group graded without a CUDA device. The rule (grader/README.md, "Scoring"): its
    host cases earn their share here; its GPU cases are pending, so the part stays "not
    graded" with the host points earned and the GPU share waiting for a GPU."""
    host = [c for c in cases if c not in gpu_cases]
    host_passed = [c for c in passed if c in host]
    host_points = rounded(share * len(host_passed))
    host_max, gpu_max = rounded(share * len(host)), rounded(share * len(gpu_cases))
    details = {**details, "host_passed": len(host_passed), "host_total": len(host),
               "host_points": host_points, "host_max": host_max, "gpu_max": gpu_max,
               "why": why_no_gpu}
    reason = not_graded_reason(KIND)
    if host:
        reason = (f"Host cases: {len(host_passed)} of {len(host)} pass ({host_points:g} of "
                  f"{host_max:g} points, graded here). Not graded: no CUDA device, so its "
                  f"{len(gpu_cases)} GPU case(s) ({gpu_max:g} points) were not run.")
        if len(host_passed) < len(host) and group.hint:
            reason += f" Hint: {group.hint}"
    return PartResult(KIND, group.name, NOT_GRADED, host_points, group.points,
                      reason, details)
