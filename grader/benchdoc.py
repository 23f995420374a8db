"""A bench's JSON document (schema cml-bench/2, written by common/src/bench.cpp) read once
into frozen records that mirror common/include/cml/timing.hpp and bench.hpp: SampleStats,
Failure, Verification, Determinism, LaunchStats, ActivityStats, Review, a timed Side, a
comparison (PairTiming), a case (CaseTiming), the device's measured Limits, the declared
Plots and the Document itself. `read_document` validates what the grader reads and raises
BenchError naming the field that is wrong; nothing past it walks the document by key.

The summaries read here are the document's claims: grader/measure/samples.py restates
them from the raw samples before anything believes them.

Each record keeps the object as the document wrote it (`written`): `to_dict` lays the
record's own fields over it, so result.json keeps the document's shape, fields the grader
does not read included."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

BENCH_SCHEMA = "cml-bench/2"
STATS_KEYS = ("median", "min", "max", "mean", "stdev", "rse")


class BenchError(ValueError):
    """A bench JSON document that is unreadable or not schema cml-bench/2; the message names
    the field."""


# --- reading one field --------------------------------------------------------------------

def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BenchError(f"{where} must be a JSON object")
    return value


def _optional_object(holder: Mapping[str, Any], key: str, where: str) -> dict[str, Any] | None:
    value = holder.get(key)
    return None if value is None else _object(value, f"{where}.{key}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(holder: Mapping[str, Any], key: str, where: str) -> float | None:
    value = holder.get(key)
    if value is None:
        return None
    if not _is_number(value):
        raise BenchError(f"{where}.{key} must be a number, not {value!r}")
    return float(value)


def _integer(holder: Mapping[str, Any], key: str, where: str) -> int | None:
    value = holder.get(key)
    if value is None:
        return None
    if not _is_number(value) or value != int(value):
        raise BenchError(f"{where}.{key} must be a whole number, not {value!r}")
    return int(value)


def _flag(holder: Mapping[str, Any], key: str, where: str) -> bool | None:
    value = holder.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise BenchError(f"{where}.{key} must be true or false, not {value!r}")


def _text(holder: Mapping[str, Any], key: str, where: str) -> str:
    value = holder.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BenchError(f"{where}.{key} must be a string, not {value!r}")
    return value


def _list(holder: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = holder.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BenchError(f"{where}.{key} must be a JSON array")
    return value


def _overlay(written: Mapping[str, Any], fields: Mapping[str, Any],
             add: bool = False) -> dict[str, Any]:
    """The object as written with `fields` laid over it (a written key keeps its place); a
    field the document did not write is added only with `add`, or to a record made in code
    (nothing written)."""
    out = dict(written)
    out.update((k, v) for k, v in fields.items() if add or not written or k in written)
    return out


# --- the records --------------------------------------------------------------------------

@dataclass(frozen=True)
class SampleStats:
    """Summary of timing samples in ms, or of per-pair ratios (timing.hpp SampleStats).
    `samples` is None when the document held no list of non-negative numbers; the summaries
    are the document's until `recompute` restates them from the samples."""

    samples: tuple[float, ...] | None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    stdev: float | None = None
    rse: float | None = None
    n: int | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "SampleStats":
        obj = _object(value, where)
        raw = obj.get("samples")
        samples = (tuple(float(x) for x in raw) if isinstance(raw, list) and all(
            _is_number(x) and math.isfinite(x) and x >= 0 for x in raw) else None)
        figures = {key: _number(obj, key, where) for key in STATS_KEYS}
        return SampleStats(samples, **figures, n=_integer(obj, "n", where), written=obj)

    def figure(self, key: str) -> float | None:
        """One summary by its document name ("median", "rse", ...)."""
        return {"median": self.median, "min": self.min, "max": self.max, "mean": self.mean,
                "stdev": self.stdev, "rse": self.rse}.get(key)

    def to_dict(self) -> dict[str, Any]:
        figures: dict[str, Any] = {k: self.figure(k) for k in STATS_KEYS
                                   if k in self.written or self.figure(k) is not None}
        if "n" in self.written or self.n is not None:
            figures["n"] = self.n
        if self.samples is not None:
            figures["samples"] = list(self.samples)
        return _overlay(self.written, figures, add=True)


@dataclass(frozen=True)
class Failure:
    """Where a run's output first went wrong (timing.hpp Failure)."""

    phase: str = "timed"  # "timed" or "warmup"
    pair: int | None = None
    sample: int | None = None  # None: the run's time was not kept
    index: int | None = None  # of the first wrong element
    where: str = ""
    got: str = ""
    expected: str = ""
    mismatches: int | None = None
    elements: int | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "Failure":
        obj = _object(value, where)
        return Failure(_text(obj, "phase", where) or "timed", _integer(obj, "pair", where),
                       _integer(obj, "sample", where), _integer(obj, "index", where),
                       _text(obj, "where", where),
                       _text(obj, "got", where), _text(obj, "expected", where),
                       _integer(obj, "mismatches", where), _integer(obj, "elements", where),
                       obj)

    def text(self) -> str:
        return (f"{self.phase} pair {self.pair} (sample {self.sample}): {self.mismatches} of "
                f"{self.elements} elements wrong, the first {self.where} = {self.got}, "
                f"expected {self.expected}")

    def to_dict(self) -> dict[str, Any]:
        return _overlay(self.written, {
            "phase": self.phase, "pair": self.pair, "sample": self.sample, "index": self.index,
            "where": self.where,
            "got": self.got, "expected": self.expected, "mismatches": self.mismatches,
            "elements": self.elements})


def _failure(obj: Mapping[str, Any], where: str) -> Failure | None:
    value = obj.get("first_failure")
    return None if value is None else Failure.read(value, f"{where}.first_failure")


@dataclass(frozen=True)
class Verification:
    """Whether the runs' outputs were right (timing.hpp Verification)."""

    checked: bool = False
    passed: bool = False
    message: str = ""
    samples_total: int | None = None
    samples_verified: int | None = None
    first_failure: Failure | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "Verification":
        obj = _object(value, where)
        return Verification(bool(_flag(obj, "checked", where)), bool(_flag(obj, "passed", where)),
                            _text(obj, "message", where), _integer(obj, "samples_total", where),
                            _integer(obj, "samples_verified", where), _failure(obj, where), obj)

    @property
    def wrong(self) -> bool:
        """Checked and found wrong."""
        return self.checked and not self.passed

    def failure_text(self) -> str:
        """The harness's message, else where the first wrong run went wrong."""
        if self.message:
            return self.message
        if self.first_failure is None:
            return "no run matched the expected result"
        return self.first_failure.text()

    def to_dict(self) -> dict[str, Any]:
        return _overlay(self.written, {
            "checked": self.checked, "passed": self.passed, "message": self.message,
            "samples_total": self.samples_total, "samples_verified": self.samples_verified,
            "first_failure": (self.first_failure.to_dict() if self.first_failure is not None
                              else None)})


@dataclass(frozen=True)
class Determinism:
    """The determinism check (timing.hpp DeterminismResult)."""

    checked: bool = False
    required: bool = False
    identical: bool | None = True
    message: str = ""
    first_failure: Failure | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "Determinism":
        obj = _object(value, where)
        return Determinism(bool(_flag(obj, "checked", where)),
                           bool(_flag(obj, "required", where)), _flag(obj, "identical", where),
                           _text(obj, "message", where), _failure(obj, where), obj)

    def to_dict(self) -> dict[str, Any]:
        return _overlay(self.written, {
            "checked": self.checked, "required": self.required, "identical": self.identical,
            "message": self.message,
            "first_failure": (self.first_failure.to_dict() if self.first_failure is not None
                              else None)})


@dataclass(frozen=True)
class LaunchStats:
    """The kernel launches per timed call (timing.hpp LaunchStats); min, max and median are
    None where the bench did not count them."""

    counted: bool = False
    min: int | None = None
    max: int | None = None
    median: float | None = None
    calls: int | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "LaunchStats":
        obj = _object(value, where)
        return LaunchStats(bool(_flag(obj, "counted", where)), _integer(obj, "min", where),
                           _integer(obj, "max", where), _number(obj, "median", where),
                           _integer(obj, "calls", where), obj)

    def to_dict(self) -> dict[str, Any]:
        median: Any = self.median
        if median is not None and "median" in self.written:
            median = self.written["median"]  # as written: 1, not 1.0
        return _overlay(self.written, {"counted": self.counted, "min": self.min,
                                       "max": self.max, "median": median, "calls": self.calls})


@dataclass(frozen=True)
class ActivityStats:
    """What the activity records said about a side's timed calls (timing.hpp ActivityStats);
    a side timed by the events clock has none."""

    empty_calls: int | None = None
    dropped_calls: int | None = None
    escaped_runs: int | None = None
    runs: int | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "ActivityStats":
        obj = _object(value, where)
        return ActivityStats(_integer(obj, "empty_calls", where),
                             _integer(obj, "dropped_calls", where),
                             _integer(obj, "escaped_runs", where), _integer(obj, "runs", where),
                             obj)

    def to_dict(self) -> dict[str, Any]:
        return _overlay(self.written, {"empty_calls": self.empty_calls,
                                       "dropped_calls": self.dropped_calls,
                                       "escaped_runs": self.escaped_runs, "runs": self.runs})


@dataclass(frozen=True)
class RemoteStats:
    """How the runner's calls of a side were timed (timing.hpp RemoteStats): the runner's
    activity spans believed (`agreed`), or the checker's own observations of the exchanges
    in their place. Only a side whose calls ran in the runner has it."""

    agreed: bool | None = None
    runner_complete: bool | None = None
    empty_ms: float | None = None
    gap_ms: float | None = None
    observed_ms: SampleStats | None = None
    runner_ms: SampleStats | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "RemoteStats":
        obj = _object(value, where)
        stats = {key: SampleStats.read(obj[key], f"{where}.{key}")
                 for key in ("observed_ms", "runner_ms") if obj.get(key) is not None}
        return RemoteStats(_flag(obj, "agreed", where), _flag(obj, "runner_complete", where),
                           _number(obj, "empty_ms", where), _number(obj, "gap_ms", where),
                           written=obj, **stats)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.written)


@dataclass(frozen=True)
class Review:
    """The harness's review verdict (timing.hpp Review): flagged when work escaped the timing
    events, with its reasons and notes."""

    flagged: bool = False
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "Review":
        obj = _object(value, where)
        return Review(bool(_flag(obj, "flagged", where)),
                      tuple(str(r) for r in _list(obj, "reasons", where) if r),
                      tuple(str(n) for n in _list(obj, "notes", where) if n), obj)

    def to_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"flagged": self.flagged}
        if not ("reasons" in self.written and tuple(self.written["reasons"]) == self.reasons):
            fields["reasons"] = list(self.reasons)
        if not ("notes" in self.written and tuple(self.written["notes"]) == self.notes):
            fields["notes"] = list(self.notes)
        return _overlay(self.written, fields)


@dataclass(frozen=True)
class Work:
    """The work one run does (bench.hpp Work): floating-point operations and the bytes that
    must cross device memory; None where the document does not say."""

    flop: float | None = None
    bytes: float | None = None

    @staticmethod
    def read(holder: Mapping[str, Any], where: str) -> "Work":
        return Work(_number(holder, "flop", where), _number(holder, "bytes", where))


@dataclass(frozen=True)
class Side:
    """One timed side: a comparison's baseline or candidate, or a case (bench.cpp's side
    fields): its times, host margin, work and the rates at its median time, its output's
    verification, its launch counts and its activity records."""

    name: str = ""
    ms: SampleStats | None = None
    host_ms: SampleStats | None = None
    host_margin_ms: float | None = None
    work: Work = Work()
    gflops: float | None = None
    gbytes_per_s: float | None = None
    verification: Verification | None = None
    launches: LaunchStats | None = None
    activity: ActivityStats | None = None
    remote: RemoteStats | None = None  # a side whose calls ran in the runner
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def fields(obj: dict[str, Any], where: str) -> dict[str, Any]:
        """The side's fields read from `obj` (a comparison's side or a case), by name."""
        stats = {key: SampleStats.read(obj[key], f"{where}.{key}")
                 for key in ("ms", "host_ms") if obj.get(key) is not None}
        verification = _optional_object(obj, "verification", where)
        launches = _optional_object(obj, "launches", where)
        activity = _optional_object(obj, "activity", where)
        remote = _optional_object(obj, "remote", where)
        return {"name": _text(obj, "name", where), **stats,
                "host_margin_ms": _number(obj, "host_margin_ms", where),
                "work": Work.read(obj, where), "gflops": _number(obj, "gflops", where),
                "gbytes_per_s": _number(obj, "gbytes_per_s", where),
                "verification": (Verification.read(verification, f"{where}.verification")
                                 if verification is not None else None),
                "launches": (LaunchStats.read(launches, f"{where}.launches")
                             if launches is not None else None),
                "activity": (ActivityStats.read(activity, f"{where}.activity")
                             if activity is not None else None),
                "remote": (RemoteStats.read(remote, f"{where}.remote")
                           if remote is not None else None),
                "written": obj}

    @staticmethod
    def read(value: Any, where: str) -> "Side":
        return Side(**Side.fields(_object(value, where), where))

    @property
    def median_ms(self) -> float | None:
        return self.ms.median if self.ms is not None else None

    def rate(self, name: str) -> float | None:
        """"gflops" or "gbytes_per_s"."""
        return self.gflops if name == "gflops" else self.gbytes_per_s

    def side_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("ms", "host_ms"):
            stats = getattr(self, key)
            if stats is not None:
                out[key] = stats.to_dict()
        for key in ("gflops", "gbytes_per_s"):
            if key in self.written or getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in ("verification", "launches", "activity"):
            record = getattr(self, key)
            if record is not None:
                out[key] = record.to_dict()
        return _overlay(self.written, out)

    def to_dict(self) -> dict[str, Any]:
        return self.side_dict()


@dataclass(frozen=True)
class PairTiming:
    """One interleaved comparison, baseline against candidate (timing.hpp PairTiming): the
    grader scores these by name."""

    name: str
    baseline: Side
    candidate: Side
    speedup: SampleStats
    converged: bool | None = None
    determinism: Determinism | None = None
    review: Review | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "PairTiming":
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise BenchError(f"{where} has no name")
        where = f"{where} ('{value['name']}')"
        sides = {}
        for side in ("baseline", "candidate"):
            part = value.get(side)
            if not isinstance(part, dict) or not isinstance(part.get("ms"), dict):
                raise BenchError(f"{where} has no {side} timing")
            if not _is_number(part["ms"].get("median")):
                raise BenchError(f"{where} has no {side} median time")
            sides[side] = Side.read(part, f"{where}.{side}")
        speedup = value.get("speedup")
        if not isinstance(speedup, dict) or not _is_number(speedup.get("median")):
            raise BenchError(f"{where} has no median speedup")
        determinism = _optional_object(value, "determinism", where)
        review = _optional_object(value, "review", where)
        return PairTiming(value["name"], sides["baseline"], sides["candidate"],
                          SampleStats.read(speedup, f"{where}.speedup"),
                          _flag(value, "converged", where),
                          (Determinism.read(determinism, f"{where}.determinism")
                           if determinism is not None else None),
                          Review.read(review, f"{where}.review") if review is not None else None,
                          value)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"baseline": self.baseline.to_dict(),
                               "candidate": self.candidate.to_dict(),
                               "speedup": self.speedup.to_dict()}
        if self.determinism is not None:
            out["determinism"] = self.determinism.to_dict()
        if self.review is not None:
            out["review"] = self.review.to_dict()
        return _overlay(self.written, out)


@dataclass(frozen=True)
class CaseTiming(Side):
    """A case timed alone (timing.hpp CaseTiming): a library yardstick, a sweep point."""

    @staticmethod
    def read(value: Any, where: str) -> "CaseTiming":
        obj = _object(value, where)
        return CaseTiming(**Side.fields(obj, f"{where} ('{obj.get('name')}')"))

    def figure(self, name: str) -> float | None:
        """A number of the case by its document name ("gbytes_per_s", "gflops", ...), as a
        plot names it; None when it has none of that name."""
        if name in ("gflops", "gbytes_per_s"):
            return self.rate(name)
        value: Any = self.written.get(name)
        return float(value) if _is_number(value) and math.isfinite(value) else None


@dataclass(frozen=True)
class Limits:
    """What the bench measured of its GPU at the start (bench.cpp "limits"): a copy kernel's
    bandwidth (GB/s) and an FMA loop's FP32 rate (GFLOP/s)."""

    copy_gbytes_per_s: float | None = None
    fp32_gflops: float | None = None
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "Limits":
        obj = _object(value, where)
        return Limits(_number(obj, "copy_gbytes_per_s", where), _number(obj, "fp32_gflops", where),
                      obj)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.written) or {"copy_gbytes_per_s": self.copy_gbytes_per_s,
                                      "fp32_gflops": self.fp32_gflops}


@dataclass(frozen=True)
class PlotRef:
    """Where a plot's point (or ceiling) takes its value: a case's field or a metric."""

    x: float | None = None  # a point's x (a ceiling has none)
    case: str | None = None
    metric: str | None = None
    field: str = ""
    label: str = ""

    @staticmethod
    def read(value: Any, where: str) -> "PlotRef":
        obj = _object(value, where)
        case, metric = obj.get("case"), obj.get("metric")
        return PlotRef(_number(obj, "x", where), case if isinstance(case, str) else None,
                       metric if isinstance(metric, str) else None,
                       str(obj.get("field", "")), _text(obj, "label", where))


@dataclass(frozen=True)
class Plot:
    """A plot the bench declares (bench.hpp Plot), drawn by the HTML report."""

    id: str
    title: str = ""
    caption: str = ""
    style: str = "line"  # "line" or "dots"
    x_label: str = ""
    x_scale: str = "linear"  # "linear" or "log2"
    x_min: float | None = None
    x_max: float | None = None
    y_label: str = ""
    ceiling: PlotRef | None = None
    points: tuple[PlotRef, ...] = ()
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def read(value: Any, where: str) -> "Plot":
        obj = _object(value, where)
        if not isinstance(obj.get("id"), str):
            raise BenchError(f"{where} has no id")
        where = f"{where} ('{obj['id']}')"
        x = _optional_object(obj, "x", where) or {}
        y = _optional_object(obj, "y", where) or {}
        ceiling = obj.get("ceiling")
        return Plot(obj["id"], _text(obj, "title", where), _text(obj, "caption", where),
                    _text(obj, "style", where) or "line", _text(x, "label", f"{where}.x"),
                    _text(x, "scale", f"{where}.x") or "linear", _number(x, "min", f"{where}.x"),
                    _number(x, "max", f"{where}.x"), _text(y, "label", f"{where}.y"),
                    PlotRef.read(ceiling, f"{where}.ceiling") if ceiling is not None else None,
                    tuple(PlotRef.read(p, f"{where}.points[{i}]")
                          for i, p in enumerate(_list(obj, "points", where))), obj)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.written) or {"id": self.id, "title": self.title}


@dataclass(frozen=True)
class Document:
    """One bench run's document: its comparisons and cases, derived metrics, the comparisons
    it could not time and why, the device, its clocks and limits, and the plots it
    declares. `device`, `clocks` and `params` stay the JSON objects written."""

    comparisons: tuple[PairTiming, ...] = ()
    cases: tuple[CaseTiming, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)
    not_timed: Mapping[str, str] = field(default_factory=dict)
    device: dict[str, Any] | None = None
    clocks: dict[str, Any] | None = None
    limits: Limits | None = None
    plots: tuple[Plot, ...] = ()
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def comparison(self, name: str) -> PairTiming | None:
        return next((c for c in self.comparisons if c.name == name), None)

    def named(self, name: str) -> PairTiming:
        """The comparison called `name`; BenchError naming the ones there are when missing."""
        comp = self.comparison(name)
        if comp is None:
            have = ", ".join(repr(c.name) for c in self.comparisons) or "none"
            raise BenchError(f"the bench has no comparison '{name}' (it has: {have}); "
                             "check [performance].comparison in grading.toml")
        return comp

    def case(self, name: str) -> CaseTiming | None:
        return next((c for c in self.cases if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"comparisons": [c.to_dict() for c in self.comparisons],
                               "cases": [c.to_dict() for c in self.cases]}
        if self.limits is not None:
            out["limits"] = self.limits.to_dict()
        return _overlay(self.written, out)


def read_document(doc: Any, source: str = "bench output") -> Document:
    """The records of a parsed bench document; BenchError naming the field the grader reads
    that is missing or of the wrong kind."""
    if not isinstance(doc, dict):
        raise BenchError(f"{source}: expected a JSON object, found {type(doc).__name__}")
    if doc.get("schema") != BENCH_SCHEMA:
        raise BenchError(f"{source}: schema is {doc.get('schema')!r}, expected {BENCH_SCHEMA!r}")
    for key, kind in (("comparisons", list), ("cases", list), ("metrics", dict),
                      ("device", dict), ("params", dict), ("plots", list), ("not_timed", dict)):
        if key in doc and not isinstance(doc[key], kind):
            raise BenchError(f"{source}: '{key}' must be a JSON {kind.__name__}")
    if "comparisons" not in doc:
        raise BenchError(f"{source}: no 'comparisons' array")
    metrics = {str(k): float(v) for k, v in (doc.get("metrics") or {}).items()
               if _is_number(v)}
    not_timed = {str(k): v for k, v in (doc.get("not_timed") or {}).items()
                 if isinstance(v, str)}
    limits, clocks = doc.get("limits"), doc.get("clocks")
    return Document(
        tuple(PairTiming.read(c, f"{source}: comparisons[{i}]")
              for i, c in enumerate(doc["comparisons"])),
        tuple(CaseTiming.read(c, f"{source}: cases[{i}]")
              for i, c in enumerate(doc.get("cases") or [])),
        metrics, not_timed, doc.get("device"), clocks if isinstance(clocks, dict) else None,
        Limits.read(limits, f"{source}: limits") if isinstance(limits, dict) and limits
        else None,
        tuple(Plot.read(p, f"{source}: plots[{i}]") for i, p in enumerate(doc.get("plots") or [])),
        doc)


def parse_document(text: str, source: str = "bench output") -> Document:
    """A bench document from its text (read_document)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise BenchError(f"{source}: not a JSON document ({err})") from err
    return read_document(doc, source)
