"""The one results schema ("cml-result/1") every export is made from.

Built in memory while grading and written once as result.json; Gradescope, PrairieLearn,
JUnit, Markdown, the terminal table and the batch gradebook all read a GradeResult.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "cml-result/1"

# TestResult.status
PASSED, FAILED, ERROR, TIMEOUT, CRASHED, NOT_RUN = (
    "passed", "failed", "error", "timeout", "crashed", "not_run")
# PartResult.status
GRADED, NOT_GRADED, NOT_MEASURED, REVIEW = "graded", "not_graded", "not_measured", "review"


@dataclass
class TestResult:
    """One Catch2 test case as graded."""

    name: str
    group: str  # the correctness group (grading.toml) it counts towards
    layer: str  # "host" or "gpu"
    hidden: bool
    status: str  # PASSED, FAILED, ERROR, TIMEOUT, CRASHED or NOT_RUN
    points: float
    max_points: float
    messages: list[str] = field(default_factory=list)
    seconds: float | None = None


@dataclass
class PartResult:
    """One scored part of a lab: build, static checks, a correctness group, memory safety,
    performance or a profiler metric. `reason` is set whenever points < max_points."""

    kind: str  # "build", "static", "correctness", "memory_safety", "performance", "metric"
    name: str
    status: str  # GRADED, NOT_GRADED (e.g. no GPU), NOT_MEASURED (tool missing), REVIEW
    points: float
    max_points: float
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class LabResult:
    lab: str  # folder, e.g. "04_tiled_matmul"
    title: str
    points: float
    max_points: float
    parts: list[PartResult] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    # performance summary: student/reference speedups over the baseline, the time ratio,
    # medians in ms and the raw per-pair samples (copied from the bench JSON documents)
    timing: dict[str, Any] | None = None
    build: dict[str, Any] = field(default_factory=dict)  # ok, seconds, errors
    binaries: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    wall_seconds: float = 0.0


@dataclass
class GradeResult:
    submission: str
    seed: int
    created: str  # ISO 8601, UTC
    grader_version: str
    device: dict[str, Any] | None  # None: no CUDA device, GPU parts not graded
    tools: dict[str, str | None]  # tool -> version, None when missing
    labs: list[LabResult] = field(default_factory=list)
    points: float = 0.0
    max_points: float = 0.0
    schema: str = SCHEMA
    errors: list[str] = field(default_factory=list)  # grader-level problems, not the student's
    # How student code was contained: {"tool": "bubblewrap 0.8.0", "jailed": true} or, where
    # no jail could be made, {"jailed": false, "why": ...} (grading went on, less protected)
    sandbox: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "GradeResult":
        if data.get("schema") != SCHEMA:
            raise ValueError(f"unsupported result schema {data.get('schema')!r}")
        labs = []
        for lab in data.get("labs", []):
            lab = dict(lab)
            lab["parts"] = [PartResult(**p) for p in lab.get("parts", [])]
            lab["tests"] = [TestResult(**t) for t in lab.get("tests", [])]
            labs.append(LabResult(**lab))
        rest = {k: v for k, v in data.items() if k != "labs"}
        return GradeResult(labs=labs, **rest)

    @staticmethod
    def from_json(text: str) -> "GradeResult":
        return GradeResult.from_dict(json.loads(text))
