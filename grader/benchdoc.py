"""A bench's JSON document (schema cml-bench/2, written by common/src/bench.cpp) read once
into frozen records that mirror common/include/cml/timing.hpp and bench.hpp: SampleStats,
Failure, Verification, Determinism, LaunchStats, ActivityStats, Review, a timed Side, a
comparison (PairTiming), a case (CaseTiming), the device's measured Limits, the declared
Plots and the Document itself. `read_document` validates what the grader reads and raises
BenchError naming the field that is wrong; nothing past it walks the document by key.

The summaries read here are the document's claims: grader/measure/samples.py restates
them from the raw samples before anything believes them.

Each record names its fields once, in its dataclass: grader/benchfields.py reads them by
their types and writes them back (`to_dict`) over the object as the document wrote it
(`written`), so result.json keeps the document's shape, fields the grader does not read
included."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from .benchfields import (ALWAYS, AS_WRITTEN, IF_CHANGED, KEPT, SET_OR_WRITTEN, WHEN_SET,
                          BenchError, Record, Written, doc, is_number, object_at)

BENCH_SCHEMA = "cml-bench/2"
STATS_KEYS = ("median", "min", "max", "mean", "stdev", "rse")


def _samples(holder: Mapping[str, Any], key: str, where: str) -> tuple[float, ...] | None:
    """The samples, when the document holds a list of non-negative numbers; else None (not
    an error: grader/measure/samples.py says what is wrong with them)."""
    raw = holder.get(key)
    if isinstance(raw, list) and all(is_number(x) and math.isfinite(x) and x >= 0
                                     for x in raw):
        return tuple(float(x) for x in raw)
    return None


@dataclass(frozen=True)
class SampleStats(Written):
    """Summary of timing samples in ms, or of per-pair ratios (timing.hpp SampleStats).
    `samples` is None when the document held no list of non-negative numbers; the summaries
    are the document's until `recompute` restates them from the samples."""

    WRITE: ClassVar[str] = SET_OR_WRITTEN
    ADD: ClassVar[bool] = True

    samples: tuple[float, ...] | None = doc(read=_samples, write=WHEN_SET, last=True)
    median: float | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    stdev: float | None = None
    rse: float | None = None
    n: int | None = None

    def figure(self, key: str) -> float | None:
        """One summary by its document name ("median", "rse", ...)."""
        value: float | None = getattr(self, key) if key in STATS_KEYS else None
        return value


@dataclass(frozen=True)
class Failure(Written):
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

    def text(self) -> str:
        return (f"{self.phase} pair {self.pair} (sample {self.sample}): {self.mismatches} of "
                f"{self.elements} elements wrong, the first {self.where} = {self.got}, "
                f"expected {self.expected}")


@dataclass(frozen=True)
class Verification(Written):
    """Whether the runs' outputs were right (timing.hpp Verification)."""

    checked: bool = False
    passed: bool = False
    message: str = ""
    samples_total: int | None = None
    samples_verified: int | None = None
    first_failure: Failure | None = None

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


@dataclass(frozen=True)
class Determinism(Written):
    """The determinism check (timing.hpp DeterminismResult)."""

    checked: bool = False
    required: bool = False
    identical: bool | None = True  # None, read from a document that does not say
    message: str = ""
    first_failure: Failure | None = None


@dataclass(frozen=True)
class LaunchStats(Written):
    """The kernel launches per timed call (timing.hpp LaunchStats); min, max and median are
    None where the bench did not count them."""

    counted: bool = False
    min: int | None = None
    max: int | None = None
    median: float | None = doc(None, write=AS_WRITTEN)
    calls: int | None = None


@dataclass(frozen=True)
class ActivityStats(Written):
    """What the activity records said about a side's timed calls (timing.hpp ActivityStats);
    a side timed by the events clock has none."""

    empty_calls: int | None = None
    dropped_calls: int | None = None
    escaped_runs: int | None = None
    runs: int | None = None


@dataclass(frozen=True)
class RemoteStats(Written):
    """How the runner's calls of a side were timed (timing.hpp RemoteStats): the runner's
    activity spans believed (`agreed`), or the checker's own observations of the exchanges
    in their place. Only a side whose calls ran in the runner has it; written back as the
    document wrote it."""

    KEEP: ClassVar[bool] = True
    WRITE: ClassVar[str] = KEPT

    observed_ms: SampleStats | None = None
    runner_ms: SampleStats | None = None
    agreed: bool | None = None
    runner_complete: bool | None = None
    empty_ms: float | None = None
    gap_ms: float | None = None


@dataclass(frozen=True)
class Review(Written):
    """The harness's review verdict (timing.hpp Review): flagged when work escaped the timing
    events, with its reasons and notes."""

    flagged: bool = False
    reasons: tuple[str, ...] = doc((), write=IF_CHANGED)
    notes: tuple[str, ...] = doc((), write=IF_CHANGED)


@dataclass(frozen=True)
class Work(Record):
    """The work one run does (bench.hpp Work): floating-point operations and the bytes that
    must cross device memory; None where the document does not say."""

    flop: float | None = None
    bytes: float | None = None


@dataclass(frozen=True)
class Side(Written):
    """One timed side: a comparison's baseline or candidate, or a case (bench.cpp's side
    fields): its times, host margin, work and the rates at its median time, its output's
    verification, its launch counts and its activity records."""

    WRITE: ClassVar[str] = SET_OR_WRITTEN

    name: str = doc("", write=KEPT)
    ms: SampleStats | None = None
    host_ms: SampleStats | None = None
    host_margin_ms: float | None = doc(None, write=KEPT)
    work: Work = doc(Work(), inline=True, write=KEPT)  # its flop and bytes are the side's
    gflops: float | None = None
    gbytes_per_s: float | None = None
    verification: Verification | None = None
    launches: LaunchStats | None = None
    activity: ActivityStats | None = None
    remote: RemoteStats | None = doc(None, write=KEPT)  # a side whose calls ran in the runner

    @property
    def median_ms(self) -> float | None:
        return self.ms.median if self.ms is not None else None

    def rate(self, name: str) -> float | None:
        """"gflops" or "gbytes_per_s"."""
        return self.gflops if name == "gflops" else self.gbytes_per_s


def _timed_side(holder: Mapping[str, Any], key: str, where: str) -> Side:
    """A comparison's baseline or candidate, which must have a median time."""
    part = holder.get(key)
    if not isinstance(part, dict) or not isinstance(part.get("ms"), dict):
        raise BenchError(f"{where} has no {key} timing")
    if not is_number(part["ms"].get("median")):
        raise BenchError(f"{where} has no {key} median time")
    return Side.read(part, f"{where}.{key}")


def _speedup(holder: Mapping[str, Any], key: str, where: str) -> SampleStats:
    """A comparison's speedup, which must have a median."""
    speedup = holder.get(key)
    if not isinstance(speedup, dict) or not is_number(speedup.get("median")):
        raise BenchError(f"{where} has no median speedup")
    return SampleStats.read(speedup, f"{where}.{key}")


@dataclass(frozen=True)
class PairTiming(Written):
    """One interleaved comparison, baseline against candidate (timing.hpp PairTiming): the
    grader scores these by name."""

    WRITE: ClassVar[str] = SET_OR_WRITTEN

    name: str = doc(write=KEPT)
    baseline: Side = doc(read=_timed_side)
    candidate: Side = doc(read=_timed_side)
    speedup: SampleStats = doc(read=_speedup)
    converged: bool | None = doc(None, write=KEPT)
    determinism: Determinism | None = None
    review: Review | None = None

    @classmethod
    def read(cls, value: Any, where: str) -> "PairTiming":
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise BenchError(f"{where} has no name")
        return super().read(value, f"{where} ('{value['name']}')")


@dataclass(frozen=True)
class CaseTiming(Side):
    """A case timed alone (timing.hpp CaseTiming): a library yardstick, a sweep point."""

    @classmethod
    def read(cls, value: Any, where: str) -> "CaseTiming":
        obj = object_at(value, where)
        return super().read(obj, f"{where} ('{obj.get('name')}')")

    def figure(self, name: str) -> float | None:
        """A number of the case by its document name ("gbytes_per_s", "gflops", ...), as a
        plot names it; None when it has none of that name."""
        if name in ("gflops", "gbytes_per_s"):
            return self.rate(name)
        value: Any = self.written.get(name)
        return float(value) if is_number(value) and math.isfinite(value) else None


@dataclass(frozen=True)
class Limits(Written):
    """What the bench measured of its GPU at the start (bench.cpp "limits"): a copy kernel's
    bandwidth (GB/s) and an FMA loop's FP32 rate (GFLOP/s); written back as the document
    wrote them."""

    KEEP: ClassVar[bool] = True

    copy_gbytes_per_s: float | None = None
    fp32_gflops: float | None = None


def _as_text(holder: Mapping[str, Any], key: str, where: str) -> str:
    """Whatever the document holds, as text."""
    return str(holder.get(key, ""))


@dataclass(frozen=True)
class PlotRef(Record):
    """Where a plot's point (or ceiling) takes its value: a case's field or a metric."""

    x: float | None = None  # a point's x (a ceiling has none)
    case: str | None = None
    metric: str | None = None
    field: str = doc("", read=_as_text)
    label: str = ""


@dataclass(frozen=True)
class Plot(Written):
    """A plot the bench declares (bench.hpp Plot), drawn by the HTML report; written back as
    the document wrote it."""

    KEEP: ClassVar[bool] = True
    WRITE: ClassVar[str] = KEPT

    id: str = doc(write=ALWAYS)
    title: str = doc("", write=ALWAYS)
    caption: str = ""
    style: str = "line"  # "line" or "dots"
    x_label: str = doc("", within="x")
    x_scale: str = doc("linear", within="x")  # "linear" or "log2"
    x_min: float | None = doc(None, within="x")
    x_max: float | None = doc(None, within="x")
    y_label: str = doc("", within="y")
    ceiling: PlotRef | None = None
    points: tuple[PlotRef, ...] = ()

    @classmethod
    def read(cls, value: Any, where: str) -> "Plot":
        obj = object_at(value, where)
        if not isinstance(obj.get("id"), str):
            raise BenchError(f"{where} has no id")
        return super().read(obj, f"{where} ('{obj['id']}')")


@dataclass(frozen=True)
class Document(Written):
    """One bench run's document: its comparisons and cases, derived metrics, the comparisons
    it could not time and why, the device, its clocks and limits, and the plots it
    declares. `device`, `clocks` and `params` stay the JSON objects written."""

    WRITE: ClassVar[str] = KEPT

    comparisons: tuple[PairTiming, ...] = doc((), write=ALWAYS)
    cases: tuple[CaseTiming, ...] = doc((), write=ALWAYS)
    metrics: Mapping[str, float] = field(default_factory=dict)
    not_timed: Mapping[str, str] = field(default_factory=dict)
    device: dict[str, Any] | None = None
    clocks: dict[str, Any] | None = None
    limits: Limits | None = doc(None, write=WHEN_SET)
    plots: tuple[Plot, ...] = ()

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
               if is_number(v)}
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
        written=doc)


def parse_document(text: str, source: str = "bench output") -> Document:
    """A bench document from its text (read_document)."""
    try:
        doc = json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as err:
        raise BenchError(f"{source}: not a JSON document ({err})") from err
    return read_document(doc, source)


def _not_json(constant: str) -> Any:
    """Python's reader takes NaN and Infinity, which JSON has not (the bench writes null)."""
    raise json.JSONDecodeError(f"{constant} is not JSON", constant, 0)
