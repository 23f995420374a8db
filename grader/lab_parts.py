"""The parts of a lab's rubric as results, before and besides the GPU's: the correctness
groups scored from the test cases (each case's share by scoring.group_points, a group with
GPU cases graded without a device left pending), the bonus parts (their points on top of the
lab's maximum), and every part a lab did not reach (it stopped early, or had no CUDA device)
at zero with the reason. The GPU parts are measured_parts.py's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from .result import (FAILED, GRADED, NOT_GRADED, NOT_RUN, PASSED, LabResult, PartResult,
                     TestResult)
from .scoring import group_points, rounded

if TYPE_CHECKING:  # the rubric's and the test runs' types only
    from .catch2.testrun import Case, CaseRun
    from .rubric import CorrectnessGroup, Rubric, Stretch


@dataclass
class Correctness:
    """The correctness groups scored: their parts, every case as graded, and the names of
    the groups at full marks (what the `requires` gates read)."""

    parts: list[PartResult] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    full_groups: set[str] = field(default_factory=set)


def status_of(run: object) -> str | None:
    """A case's status (testrun.CaseRun), None for a case that did not run."""
    status: str | None = getattr(run, "status", None)
    return status


def correctness(rubric: "Rubric", canonical: "list[Case]", runs: "Mapping[str, CaseRun]",
                has_gpu: bool, why_no_gpu: str) -> Correctness:
    """Groups scored from the case results (`runs`: case name -> testrun.CaseRun). Each case
    counts in the first group that matches it; its share is the group's points over the
    group's cases."""
    out = Correctness()
    assigned: set[str] = set()
    for group in rubric.correctness:
        cases = [c for c in canonical if c.matches(group.tests)]
        gpu_cases = [c for c in cases if "gpu" in c.tags]
        passed = [c for c in cases if status_of(runs.get(c.name)) == PASSED]
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


def _pending_gpu_part(group: "CorrectnessGroup", cases: "list[Case]",
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
    reason = not_graded_reason("correctness")
    if host:
        reason = (f"Host cases: {len(host_passed)} of {len(host)} pass ({host_points:g} of "
                  f"{host_max:g} points, graded here). Not graded: no CUDA device, so its "
                  f"{len(gpu_cases)} GPU case(s) ({gpu_max:g} points) were not run.")
        if len(host_passed) < len(host) and group.hint:
            reason += f" Hint: {group.hint}"
    return PartResult("correctness", group.name, NOT_GRADED, host_points, group.points,
                      reason, details)


def not_graded_reason(kind: str) -> str:
    """The standard sentence for a GPU part graded without a CUDA device."""
    return f"Not graded: no CUDA device, so this {kind.replace('_', ' ')} part was not run."


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


# What each part but Build says of a lab without its file: Build says which file, once.
NOT_SUBMITTED = "No points: there is no submission for this lab (see Build)."


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
