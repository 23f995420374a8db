"""Every kind of part, once, in report order: the gates (Build, Static checks), then the
parts a rubric scores (correctness groups, memory safety, speed, the stretch speed part,
profiler metrics). A new kind of part is its module in grader/parts/ (its kind, its table
of grading.toml and its record, how it is measured and scored) and its line below: the
rubric reads each part's table through `PARTS` (grader/rubric.py), what the grader derives
from a rubric's parts (their maxima, the bonus offers, what each measures, the parts a lab
did not reach) loops over it, and the lab's stage measures and scores them in this order
(grader/stages/lab.py)."""

from __future__ import annotations

from typing import Any

from ..result import GRADED, NOT_GRADED, Kind, LabResult, PartResult
from . import correctness, memory_safety, metric, performance, stretch
from .base import Entry, Part, RubricTables, not_graded_reason
from .gates import BUILD, STATIC, Gate

GATES: tuple[Gate, ...] = (BUILD, STATIC)
PARTS: tuple[Part[Any], ...] = (
    correctness.PART,
    memory_safety.PART,
    performance.PART,
    stretch.PART,
    metric.PART,
)

GATE_KINDS = frozenset(g.kind for g in GATES)


def label(kind: str) -> str:
    """A kind's name in reports (its part's `label`), the kind itself for one not listed."""
    named: dict[str, str] = {**{g.kind: g.label for g in GATES},
                             **{p.kind: p.label for p in PARTS}}
    return named.get(kind, kind)


def measured_on_gpu(kind: str) -> bool:
    """Whether parts of this kind are measured on a CUDA device only."""
    return any(p.kind == kind and p.gpu for p in PARTS)


def entries(rubric: RubricTables) -> list[Entry]:
    """Every part the rubric scores, in report order."""
    return [e for part in PARTS for e in part.entries(rubric)]


def max_points(rubric: RubricTables) -> float:
    """The lab's maximum: every part's but a bonus part's."""
    return sum(e.max_points for e in entries(rubric))


def maxima(rubric: RubricTables) -> dict[tuple[Kind, str], float]:
    """(kind, name) -> each part's maximum as its result records it (a bonus part's is 0;
    `bonus_offers` has what it offers)."""
    return {e.key: e.max_points for e in entries(rubric)}


def bonus_offers(rubric: RubricTables) -> dict[tuple[Kind, str], float]:
    """(kind, name) -> points offered, for the rubric's bonus parts."""
    return {e.key: e.bonus for e in entries(rubric) if e.bonus is not None}


def _result(entry: Entry, status: str, reason: str,
            details: dict[str, Any] | None = None) -> PartResult:
    part = PartResult(entry.kind, entry.name, status, 0.0, entry.max_points, reason,
                      dict(details or {}))
    if entry.bonus is not None:
        part.details = {**part.details, "bonus": entry.bonus}
    return part


def finish_unfinished(lab_result: LabResult, rubric: RubricTables, reason: str) -> None:
    """Every rubric part not yet in the result, at zero points with `reason` (the lab
    stopped before it: no submission, a build failure, a static check, a grader failure)."""
    have = {(p.kind, p.name) for p in lab_result.parts}
    lab_result.parts += [_result(e, GRADED, reason) for e in entries(rubric)
                         if e.key not in have]


def not_graded(part: Part[Any], rubric: RubricTables, why_no_gpu: str) -> list[PartResult]:
    """A GPU part's entries, graded without a CUDA device: not graded, with the reason."""
    return [_result(e, NOT_GRADED, not_graded_reason(e.kind), {"why": why_no_gpu})
            for e in part.entries(rubric)]
