"""The one results schema ("cml-result/1") every export is made from.

Built in memory while grading and written once as result.json; Gradescope, PrairieLearn,
JUnit, Markdown, the terminal table and the batch gradebook all read a GradeResult.
The fields: grader/README.md, "result.json"; who fills which record:
docs/architecture.md, "Stages and the data they pass".
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar

from .benchdoc import (CaseTiming, Determinism, LaunchStats, Plot, Review,
                               SampleStats, Verification)
from .benchfields import BenchError

SCHEMA = "cml-result/1"

# TestResult.status
PASSED, FAILED, ERROR, TIMEOUT, CRASHED, NOT_RUN = (
    "passed", "failed", "error", "timeout", "crashed", "not_run")
class Kind(str):
    """PartResult.kind: what a part grades, a name of its own type. Each kind is declared by
    its module in grader/parts/ (`KIND`, a gate's in gates.py), whose rules it names;
    grader/parts/kinds.py lists them in report order. result.json writes it as its string,
    and a kind compares and hashes as that string."""

    __slots__ = ()


# PartResult.status
GRADED, NOT_GRADED, NOT_MEASURED, REVIEW = "graded", "not_graded", "not_measured", "review"
# LabResult.failure: why a lab stopped before its code was run (None: it was run)
NO_SUBMISSION, COMPILE_ERROR, BUILD_TIMEOUT, STATIC_VIOLATION, NOT_CONFIGURED, GRADER_ERROR, \
    INTERRUPTED = ("no_submission", "compile_error", "build_timeout", "static_violation",
                   "not_configured", "grader_error", "interrupted")
FAILURES = (NO_SUBMISSION, COMPILE_ERROR, BUILD_TIMEOUT, STATIC_VIOLATION, NOT_CONFIGURED,
            GRADER_ERROR, INTERRUPTED)


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

    kind: Kind
    name: str
    status: str  # GRADED, NOT_GRADED (e.g. no GPU), NOT_MEASURED (tool missing), REVIEW
    points: float
    max_points: float
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:  # a kind given as its string (result.json, a test)
        self.kind = Kind(self.kind)


class _Record:
    """A typed record that code written against the earlier plain dicts can still read and
    set by key (record["ok"], record.get("errors")); new code uses the fields."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # set by @dataclass on each record

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None) if key in self.__dataclass_fields__ else None
        return default if value is None else value

    def __getitem__(self, key: str) -> Any:
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        setattr(self, key, value)


@dataclass
class BuildRecord(_Record):
    """The student's build of one lab: compiled and linked with the grader's tests."""

    ok: bool
    seconds: float
    errors: list[str] = field(default_factory=list)  # compiler errors, paths as submitted
    timed_out: bool | None = None  # None: nothing was built (no submission)
    test_runs: list[str] = field(default_factory=list)  # binaries that crashed, re-run case by case
    # The compiler's output when the student's own compile failed (its last 16 KiB, paths as
    # submitted); "" when it compiled.
    output: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "seconds": self.seconds}
        if self.timed_out is not None:
            out["timed_out"] = self.timed_out
        out["errors"] = list(self.errors)
        if self.test_runs:
            out["test_runs"] = list(self.test_runs)
        if self.output:
            out["output"] = self.output
        return out

    @staticmethod
    def from_dict(data: dict[str, Any] | None) -> "BuildRecord | None":
        if not data:
            return None
        return BuildRecord(bool(data.get("ok")), float(data.get("seconds") or 0.0),
                           list(data.get("errors") or []), data.get("timed_out"),
                           list(data.get("test_runs") or []), str(data.get("output") or ""))


@dataclass
class BenchSummary:
    """One bench run's scored comparison (median times, speedup, the harness's checks of the
    timed output, launches, review flag), plus its other cases and derived metrics (the
    sweeps the HTML report plots): the records of its bench document (cml-bench/2,
    grader/benchdoc.py), restated from the samples; written to result.json as the
    document wrote them (to_dict)."""

    baseline_ms: SampleStats | None = None
    candidate_ms: SampleStats | None = None
    speedup: SampleStats | None = None
    converged: bool | None = None
    verification: Verification | None = None
    baseline_verification: Verification | None = None
    launches: LaunchStats | None = None
    baseline_launches: LaunchStats | None = None
    determinism: Determinism | None = None
    review: Review | None = None
    host_margin_ms: dict[str, float | None] = field(default_factory=dict)
    cases: list[CaseTiming] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    plots: list[Plot] = field(default_factory=list)  # the bench's declared plots (cml-bench/2)

    def to_dict(self) -> dict[str, Any]:
        def record(value: Any) -> Any:
            return value.to_dict() if value is not None else None

        return {"baseline_ms": record(self.baseline_ms),
                "candidate_ms": record(self.candidate_ms), "speedup": record(self.speedup),
                "converged": self.converged, "verification": record(self.verification),
                "baseline_verification": record(self.baseline_verification),
                "launches": record(self.launches),
                "baseline_launches": record(self.baseline_launches),
                "determinism": record(self.determinism), "review": record(self.review),
                "host_margin_ms": dict(self.host_margin_ms),
                "cases": [c.to_dict() for c in self.cases], "metrics": dict(self.metrics),
                "plots": [p.to_dict() for p in self.plots]}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "BenchSummary":
        """The summary kept in result.json; a field that does not read as its record (an
        older grader's, or edited into something else) is left out."""
        def read(reader: Callable[[Any, str], Any], value: Any, where: str) -> Any:
            try:
                return reader(value, where) if value is not None else None
            except BenchError:
                return None

        def each(reader: Callable[[Any, str], Any], key: str) -> list[Any]:
            values = data.get(key) if isinstance(data.get(key), list) else []
            found = (read(reader, v, f"{key}[{i}]") for i, v in enumerate(values or []))
            return [v for v in found if v is not None]

        margins = data.get("host_margin_ms")
        metrics = data.get("metrics")
        converged = data.get("converged")
        return BenchSummary(
            baseline_ms=read(SampleStats.read, data.get("baseline_ms"), "baseline_ms"),
            candidate_ms=read(SampleStats.read, data.get("candidate_ms"), "candidate_ms"),
            speedup=read(SampleStats.read, data.get("speedup"), "speedup"),
            converged=converged if isinstance(converged, bool) else None,
            verification=read(Verification.read, data.get("verification"), "verification"),
            baseline_verification=read(Verification.read, data.get("baseline_verification"),
                                       "baseline_verification"),
            launches=read(LaunchStats.read, data.get("launches"), "launches"),
            baseline_launches=read(LaunchStats.read, data.get("baseline_launches"),
                                   "baseline_launches"),
            determinism=read(Determinism.read, data.get("determinism"), "determinism"),
            review=read(Review.read, data.get("review"), "review"),
            host_margin_ms={str(k): float(v) if _is_number(v) else None
                            for k, v in (margins.items() if isinstance(margins, dict) else [])},
            cases=each(CaseTiming.read, "cases"),
            metrics={str(k): float(v) for k, v in (metrics.items() if isinstance(metrics, dict)
                                                   else []) if _is_number(v)},
            plots=each(Plot.read, "plots"))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class Timing(_Record):
    """The performance measurement of a lab: the student's and the reference's bench runs of
    the scored comparison, and what was derived from them."""

    comparison: str = ""  # the rubric's [performance].comparison
    bench_args: list[str] = field(default_factory=list)
    reference: BenchSummary | None = None
    device: dict[str, Any] | None = None  # the GPU the bench reports
    clocks: dict[str, Any] | None = None
    student: BenchSummary | None = None
    student_speedup: float | None = None
    reference_speedup: float | None = None
    time_ratio: float | None = None  # student time / reference time

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for side in ("reference", "student"):
            if out[side] is not None:
                out[side] = out[side].to_dict()
        out["bench_args"] = list(self.bench_args)
        return {k: v for k, v in out.items() if v is not None}

    @staticmethod
    def from_dict(data: dict[str, Any] | None) -> "Timing | None":
        if not data:
            return None
        data = dict(data)
        for side in ("reference", "student"):
            if isinstance(data.get(side), dict):
                data[side] = BenchSummary.from_dict(data[side])
            else:
                data.pop(side, None)
        return Timing(**{k: v for k, v in data.items() if k in Timing.__dataclass_fields__})


@dataclass
class LabResult:
    lab: str  # folder, e.g. "04_tiled_matmul"
    title: str
    points: float
    max_points: float
    parts: list[PartResult] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    timing: Timing | None = None  # None: the bench was not run
    build: BuildRecord | None = None  # None: the lab stopped before the student's build
    binaries: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    wall_seconds: float = 0.0
    failure: str | None = None  # one of FAILURES when the lab stopped early, else None
    # seconds on the GPU per GPU stage (tests, sanitizer, bench, profiler): wall time inside
    # each GPU section, waiting for the GPU lock excluded
    gpu_seconds: dict[str, float] = field(default_factory=dict)
    # seconds spent waiting to enter each GPU stage's section: for another lab's bench or
    # profiler (the labs of a grade run side by side), or for another grade's GPU lock
    gpu_waited: dict[str, float] = field(default_factory=dict)
    # where the lab's time went (grader/costs.py): stage -> {"wall_seconds", "processes",
    # "tool_starts": {tool: count}}, waits for a GPU section included in the wall time
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:  # records given as the plain dicts of result.json
        if isinstance(self.build, dict):
            self.build = BuildRecord.from_dict(self.build)
        if isinstance(self.timing, dict):
            self.timing = Timing.from_dict(self.timing)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["timing"] = self.timing.to_dict() if self.timing is not None else None
        out["build"] = self.build.to_dict() if self.build is not None else {}
        if self.failure is None:
            del out["failure"]  # result.json names a failure only where there was one
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "LabResult":
        lab = dict(data)
        lab["parts"] = [PartResult(**p) for p in lab.get("parts", [])]
        lab["tests"] = [TestResult(**t) for t in lab.get("tests", [])]
        return LabResult(**lab)  # build and timing: made records by __post_init__


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
    # how long any lab of it was on the GPU (the labs' sections overlap: less than their
    # gpu_seconds added up)
    gpu_seconds: float = 0.0
    # the grade's own stages before its labs (grader/costs.py): "prepare" (the trees, the
    # configure) and "build" (every lab's targets in one build), as in LabResult.stages
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A late submission of a batch with a late policy (grader/batch/deadlines.py): {"factor": 0.8,
    # "label": "late 1.20 days (-20%)", "points": the score after the penalty,
    # "unpenalised_points": `points` above, "deadline", "commit_time"}; {} when on time
    # or without a deadline (then left out of result.json). `points` stays the rubric's.
    late: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["labs"] = [lab.to_dict() for lab in self.labs]
        if not self.late:
            del out["late"]
        return out

    @property
    def late_factor(self) -> float:
        return float(self.late.get("factor", 1.0)) if self.late else 1.0

    @property
    def final_points(self) -> float:
        """The score the student gets: `points` times the late factor."""
        return round(self.points * self.late_factor, 4) + 0.0

    def set_late(self, factor: float, label: str, deadline: str | None = None,
                 commit_time: str | None = None, days: float = 0.0) -> None:
        """Records the late policy's factor and label: nothing for a commit on time (`days`
        0) that the policy did not penalise."""
        if factor == 1.0 and days <= 0:
            self.late = {}
            return
        self.late = {"factor": factor, "label": label, "deadline": deadline,
                     "commit_time": commit_time}
        self.refresh_late()

    def refresh_late(self) -> None:
        """The penalised and unpenalised scores again, after `points` changed (an
        override, a rescore)."""
        if self.late:
            self.late.update(points=self.final_points, unpenalised_points=self.points)

    def late_note(self) -> str:
        """"Late penalty: ×0.8 (late 1.20 days (-20%)): 43.2 points, 54 before the
        penalty." or "" when none."""
        if not self.late:
            return ""
        return (f"Late penalty: ×{self.late_factor:g} ({self.late.get('label', 'late')}): "
                f"{self.final_points:g} points, {self.points:g} before the penalty.")

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "GradeResult":
        if data.get("schema") != SCHEMA:
            raise ValueError(f"unsupported result schema {data.get('schema')!r}")
        labs = [LabResult.from_dict(lab) for lab in data.get("labs", [])]
        rest = {k: v for k, v in data.items() if k != "labs"}
        return GradeResult(labs=labs, **rest)

    @staticmethod
    def from_json(text: str) -> "GradeResult":
        return GradeResult.from_dict(json.loads(text))
