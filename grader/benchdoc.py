"""What a bench's JSON document (schema cml-bench/2, common/include/cml/timing.hpp) says about
its scored comparison: the summary kept in result.json, and the harness's verdicts on the
timed runs, each as the sentence a reason quotes (None when all is well). The protocol
behind those verdicts: docs/architecture.md, "The timing protocol".

The grader believes a document's samples, never its summaries: `recompute` derives every
summary the scoring reads from the raw samples and lists where the document disagrees with
them, and `floor_check` holds the candidate's time against the least time the GPU needs to
do the comparison's work (grader/README.md, "Scoring"); `speed_of_light` says how near the
kernels come to that limit (a fraction shown beside the score, worth no points)."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from .result import BenchSummary


def number(d: Any, *keys: str) -> float | None:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return float(d) if isinstance(d, (int, float)) else None


def summary(comp: dict, doc: dict) -> BenchSummary:
    """The scored comparison, plus the bench's other cases, derived metrics and the plots it
    declares (drawn by the HTML report)."""
    return BenchSummary(
        baseline_ms=(comp.get("baseline") or {}).get("ms"),
        candidate_ms=(comp.get("candidate") or {}).get("ms"),
        speedup=comp.get("speedup"),
        converged=comp.get("converged"),
        verification=(comp.get("candidate") or {}).get("verification"),
        baseline_verification=(comp.get("baseline") or {}).get("verification"),
        launches=(comp.get("candidate") or {}).get("launches"),
        baseline_launches=(comp.get("baseline") or {}).get("launches"),
        determinism=comp.get("determinism"),
        review=comp.get("review"),
        host_margin_ms={side: (comp.get(side) or {}).get("host_margin_ms")
                        for side in ("baseline", "candidate")},
        cases=doc.get("cases") or [],
        metrics=doc.get("metrics") or {},
        plots=doc.get("plots") or [],
    )

def timed_output_problem(comp: dict, whose: str = "your") -> str | None:
    """The candidate's output wrong in some run (which pair and sample, where, got and
    expected), the baseline's wrong in the same process, or a required determinism check
    failed."""
    cand = (comp.get("candidate") or {}).get("verification") or {}
    if not cand.get("checked"):
        return f"the output of {whose} timed kernel was not checked"
    if not cand.get("passed"):
        return f"the output of {whose} timed kernel was wrong: {_failure_text(cand)}"
    base = (comp.get("baseline") or {}).get("verification") or {}
    if base.get("checked") and not base.get("passed"):
        return (f"the baseline's output was wrong in the same run as {whose} code (does it "
                f"write outside its own output?): {_failure_text(base)}")
    det = comp.get("determinism") or {}
    if det.get("checked") and det.get("required") and det.get("identical") is False:
        return (f"{whose} kernel is not deterministic: "
                + (det.get("message") or "a second run on the same inputs gave other bits"))
    return None


def _failure_text(v: dict) -> str:
    if v.get("message"):
        return str(v["message"])
    f = v.get("first_failure")
    if not isinstance(f, dict):
        return "no run matched the expected result"
    return (f"{f.get('phase', 'timed')} pair {f.get('pair')} (sample {f.get('sample')}): "
            f"{f.get('mismatches')} of {f.get('elements')} elements wrong, the first "
            f"{f.get('where')} = {f.get('got')}, expected {f.get('expected')}")


def launch_problem(comp: dict) -> str | None:
    """A candidate call that launched no kernel (only where the bench counted launches)."""
    launches = (comp.get("candidate") or {}).get("launches")
    if not isinstance(launches, dict) or not launches.get("counted"):
        return None
    low, high = launches.get("min"), launches.get("max")
    if high == 0:
        return "your code launched no kernel (0 kernel launches in every timed call)"
    if low == 0:
        return (f"your code launched no kernel in some timed calls (0 to {high} launches per "
                "call): the output cannot have come from the timed work")
    return None


def review_problem(comp: dict) -> str | None:
    """The harness's review flag (work escaped the timing events), with its reasons."""
    review = comp.get("review")
    if not isinstance(review, dict) or not review.get("flagged"):
        return None
    reasons = [str(r) for r in review.get("reasons") or [] if r]
    return "; ".join(reasons) or "the host-time cross-check flagged the timing"


# --- recomputing the summaries --------------------------------------------------------------

# The bench prints numbers with 9 significant digits (common/src/json.cpp): a summary that
# the harness computed from its samples agrees with their recomputation far within this.
AGREE_REL = 1e-6
STATS_KEYS = ("median", "min", "max", "mean", "stdev", "rse")
ALTERED = ("the bench document's figures disagree with its own samples: it was altered; "
           "not believed")


def sample_stats(samples: list[float]) -> dict[str, Any]:
    """What the harness's summarize() (common/src/timing.cpp) makes of `samples`: median,
    min, max, mean, stdev (over n - 1), rse (the standard error over the mean; 1 for one
    sample) and n; all 0 for no samples."""
    n = len(samples)
    if n == 0:
        return {**{k: 0.0 for k in STATS_KEYS}, "n": 0}
    ordered = sorted(samples)
    half = n // 2
    median = ordered[half] if n % 2 else 0.5 * (ordered[half - 1] + ordered[half])
    mean = math.fsum(samples) / n
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in samples) / (n - 1)) if n > 1 else 0.0
    rse = stdev / math.sqrt(n) / mean if n > 1 and mean > 0 else 1.0
    return {"median": median, "min": ordered[0], "max": ordered[-1], "mean": mean,
            "stdev": stdev, "rse": rse, "n": n}


def pair_ratios(baseline: list[float], candidate: list[float]) -> list[float]:
    """The per-pair speedups as the harness takes them: baseline time / candidate time of
    the same pair (0 where the candidate's time is 0)."""
    return [b / c if c > 0 else 0.0 for b, c in zip(baseline, candidate)]


def _agree(claimed: Any, computed: float, scale: float = 0.0) -> bool:
    if isinstance(claimed, bool) or not isinstance(claimed, (int, float)):
        return False
    return abs(claimed - computed) <= AGREE_REL * max(abs(claimed), abs(computed), scale)


def _samples(stats: Any, where: str, problems: list[str]) -> list[float] | None:
    raw = stats.get("samples") if isinstance(stats, dict) else None
    if not isinstance(raw, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            and x >= 0 for x in raw):
        problems.append(f"{where} has no list of samples (non-negative numbers)")
        return None
    return [float(x) for x in raw]


def _restated(stats: dict, samples: list[float], where: str, problems: list[str]) -> dict:
    """`stats` with every summary recomputed from `samples`; each claimed figure that
    disagrees is a problem."""
    fresh = sample_stats(samples)
    scales = {"stdev": abs(fresh["mean"]), "rse": 1.0}
    for key in STATS_KEYS:
        if key in stats and not _agree(stats[key], fresh[key], scales.get(key, 0.0)):
            problems.append(f"{where} {key} is {stats[key]!r}, its samples give {fresh[key]:.9g}")
    if "n" in stats and stats["n"] != len(samples):
        problems.append(f"{where} n is {stats['n']!r} with {len(samples)} samples")
    return {**stats, **fresh, "samples": samples}


def _side(holder: dict, where: str, problems: list[str]) -> list[float] | None:
    """One timed side (a comparison's baseline or candidate, or a case) restated in place:
    its times, host times and work rates. Its time samples, or None when it has none."""
    times = None
    for key in ("ms", "host_ms"):
        if key not in holder:
            continue
        samples = _samples(holder[key], f"{where} {key}", problems)
        if samples is None:
            continue
        holder[key] = _restated(holder[key], samples, f"{where} {key}", problems)
        if key == "ms":
            times = samples
    median = holder["ms"].get("median") if isinstance(holder.get("ms"), dict) else None
    for rate, work in (("gflops", "flop"), ("gbytes_per_s", "bytes")):
        amount = holder.get(work)
        if rate not in holder or not isinstance(amount, (int, float)) or times is None:
            continue
        fresh = amount / median * 1e-6 if amount > 0 and median and median > 0 else None
        claimed = holder[rate]
        if (fresh is None) != (claimed is None) or (
                fresh is not None and not _agree(claimed, fresh)):
            problems.append(f"{where} {rate} is {claimed!r}, its work and median time give "
                            + ("none" if fresh is None else f"{fresh:.9g}"))
        holder[rate] = fresh
    return times


def recompute(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of the bench document with every summary recomputed from the raw samples it
    holds, and where the document disagreed with them (empty: it agrees with itself).

    For each comparison, each side's `ms` and `host_ms` (median, min, max, mean, stdev, rse,
    n), its GFLOP/s and GB/s, and the speedup: its samples must be baseline.samples[i] /
    candidate.samples[i] and its summaries theirs; both sides must hold as many samples. For
    each case, the same of its one side. A summary is believed within a relative AGREE_REL
    (the document's printed precision); the copy holds the recomputed numbers either way."""
    out = copy.deepcopy(doc)
    problems: list[str] = []
    for comp in out.get("comparisons") or []:
        if not isinstance(comp, dict):
            continue
        where = f"comparison '{comp.get('name')}'"
        times = {}
        for side in ("baseline", "candidate"):
            if isinstance(comp.get(side), dict):
                times[side] = _side(comp[side], f"{where} {side}", problems)
        base, cand = times.get("baseline"), times.get("candidate")
        if base is None or cand is None:
            continue
        if len(base) != len(cand):
            problems.append(f"{where}: the baseline has {len(base)} samples and the candidate "
                            f"{len(cand)}")
            continue
        ratios = pair_ratios(base, cand)
        speedup: Any = comp.get("speedup") if isinstance(comp.get("speedup"), dict) else {}
        claimed = speedup.get("samples")
        if not isinstance(claimed, list) or len(claimed) != len(ratios):
            count = len(claimed) if isinstance(claimed, list) else "no"
            problems.append(f"{where} speedup has {count} samples for {len(ratios)} pairs")
        else:
            bad = [i for i, (c, r) in enumerate(zip(claimed, ratios)) if not _agree(c, r)]
            if bad:
                problems.append(f"{where} speedup sample {bad[0]} is {claimed[bad[0]]!r}, the "
                                f"pair's times give {ratios[bad[0]]:.9g}")
        comp["speedup"] = _restated({k: v for k, v in speedup.items() if k != "samples"},
                                    ratios, f"{where} speedup", problems)
    for case in out.get("cases") or []:
        if isinstance(case, dict):
            _side(case, f"case '{case.get('name')}'", problems)
    return out, problems


def altered_problem(problems: list[str], shown: int = 2) -> str | None:
    """The sentence for a document that disagrees with its samples (None when it agrees)."""
    if not problems:
        return None
    more = len(problems) - shown
    return (f"{ALTERED} (" + "; ".join(problems[:shown])
            + (f"; and {more} more" if more > 0 else "") + ")")


# --- the physical floor ---------------------------------------------------------------------

# A candidate time below floor / FLOOR_MARGIN is flagged: the measured limits (a copy
# kernel's bandwidth, an FMA loop's rate) are a few percent under the GPU's true peaks, so a
# fair kernel that matches them is not flagged (a rubric may set its own floor_margin).
FLOOR_MARGIN = 1.1


def _positive(d: Any, key: str) -> float | None:
    value = d.get(key) if isinstance(d, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def physical_floor(work: Any, limits: Any) -> dict[str, Any] | None:
    """The least time (ms) the GPU needs for `work` ({"flop", "bytes"} of one run) at the
    `limits` the bench measured ({"copy_gbytes_per_s", "fp32_gflops"}): the longer of moving
    the bytes and doing the flop. None when no limit applies to the work (no limits: an
    older bench; or no work that a measured limit bounds)."""
    bytes_, flop = _positive(work, "bytes"), _positive(work, "flop")
    copy_rate, flop_rate = _positive(limits, "copy_gbytes_per_s"), _positive(limits,
                                                                           "fp32_gflops")
    bounds = []
    if bytes_ and copy_rate:
        bounds.append((bytes_ / (copy_rate * 1e9) * 1e3, "bytes"))
    if flop and flop_rate:
        bounds.append((flop / (flop_rate * 1e9) * 1e3, "flop"))
    if not bounds:
        return None
    ms, bound = max(bounds)
    return {"ms": ms, "bound": bound, "bytes": bytes_, "flop": flop,
            "copy_gbytes_per_s": copy_rate, "fp32_gflops": flop_rate}


def _digits(value: float) -> str:
    """Three significant digits, never an exponent: "137", "41.9", "2.40"."""
    return f"{value:.0f}" if value >= 99.95 else f"{value:.1f}" if value >= 9.995 \
        else f"{value:.2f}"


def _scaled(value: float, units: list[tuple[float, str]]) -> str:
    factor, unit = next(((f, u) for f, u in units if value >= f), units[-1])
    return f"{_digits(value / factor if factor else value)} {unit}"


def time_text(ms: float) -> str:
    """A time given in ms, as read aloud: "12.0 us", "41.9 ms", "2.50 s"."""
    return _scaled(ms * 1e6, [(1e9, "s"), (1e6, "ms"), (1e3, "us"), (0.0, "ns")])


def floor_text(ms: float, floor: dict[str, Any]) -> str:
    """"12.0 us is below the 41.9 us the GPU needs to move 96.0 MiB at its measured 2.40
    TB/s" (or to do the comparison's flop at its measured FP32 rate)."""
    if floor["bound"] == "bytes":
        size = _scaled(floor["bytes"], [(2.0 ** 30, "GiB"), (2.0 ** 20, "MiB"),
                                        (2.0 ** 10, "KiB"), (0.0, "bytes")])
        rate = _scaled(floor["copy_gbytes_per_s"], [(1e3, "TB/s"), (0.0, "GB/s")])
        need = f"to move {size} at its measured {rate}"
    else:
        size = _scaled(floor["flop"], [(1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"),
                                       (0.0, "FLOP")])
        rate = _scaled(floor["fp32_gflops"], [(1e3, "TFLOP/s"), (0.0, "GFLOP/s")])
        need = f"to do {size} at its measured FP32 rate of {rate}"
    return f"{time_text(ms)} is below the {time_text(floor['ms'])} the GPU needs {need}"


def _named(doc: Any, name: str) -> dict | None:
    return next((c for c in (doc or {}).get("comparisons") or []
                 if isinstance(c, dict) and c.get("name") == name), None) if isinstance(
                     doc, dict) else None


def _limits(doc: Any) -> dict | None:
    limits = doc.get("limits") if isinstance(doc, dict) else None
    return limits if isinstance(limits, dict) else None


def floor_check(name: str, student: dict | None, reference: dict | None,
                margin: float = FLOOR_MARGIN) -> tuple[str | None, dict[str, Any]]:
    """(why the student's candidate time of comparison `name` is impossibly fast, or None;
    the details). The floor is physical_floor of the comparison's work at the measured
    limits, both taken from the reference's run when it has them (the grader's own bench,
    on the same GPU), else from the student's. The time must not be below floor / margin.

    Not checked (never a failure): no limits in either document (an older bench), no work
    that a limit bounds, or the reference's own time below floor / margin (then the limits
    do not hold for this work on this GPU)."""
    comp, ref_comp = _named(student, name), _named(reference, name)
    limits = _limits(reference) or _limits(student)
    source = ref_comp if ref_comp is not None else comp
    work = (source or {}).get("candidate")
    floor = physical_floor(work, limits)
    if floor is None:
        why = ("the bench reported no measured limits" if limits is None
               else "no work of this comparison is bounded by a measured limit")
        return None, {"checked": False, "why": why}
    details: dict[str, Any] = {"checked": True, "margin": margin, **floor,
                               "floor_ms": floor["ms"]}
    del details["ms"]
    ref_ms = number(ref_comp or {}, "candidate", "ms", "median")
    if ref_ms is not None and ref_ms < floor["ms"] / margin:
        return None, {**details, "checked": False, "reference_ms": ref_ms,
                      "why": "the reference itself measured " + floor_text(ref_ms, floor)
                             + ": the limits do not bound this work here"}
    ms = number(comp or {}, "candidate", "ms", "median")
    details["candidate_ms"] = ms
    if ms is None or ms >= floor["ms"] / margin:
        return None, details
    return floor_text(ms, floor), details


# --- the speed of light ---------------------------------------------------------------------

# What each limit is called, its unit, and the verb of a kernel that works at it.
_LIMIT_WORDS = {"bytes": ("copy bandwidth", "moves", [(1e3, "TB/s"), (0.0, "GB/s")]),
                "flop": ("FP32 peak", "does", [(1e3, "TFLOP/s"), (0.0, "GFLOP/s")])}


def rate_text(gigas: float, bound: str) -> str:
    """A rate given in GB/s (bound "bytes") or GFLOP/s ("flop"), in the unit that reads best:
    "812 GB/s", "2.31 TB/s", "9.40 TFLOP/s" (rounded first, so 999.97 GB/s is "1.00 TB/s")."""
    return _scaled(float(f"{gigas:.3g}"), _LIMIT_WORDS[bound][2])


def percent_text(fraction: float) -> str:
    """A fraction as a whole percentage: "82 %"."""
    return f"{fraction * 100:.0f} %"


def _finite(value: Any, positive: bool = False) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        return None
    return float(value)


@dataclass
class SpeedOfLight:
    """How near the scored comparison's kernels come to the GPU's measured limit: the limit
    that binds the work (`bound` "bytes": the copy bandwidth, in GB/s; "flop": the FP32 peak,
    in GFLOP/s), the rate each side's median time achieves on that work, and each rate as a
    fraction of the limit. A figure for the student to read, never a score."""

    bound: str  # "bytes" or "flop": whichever limit's floor is the longer (physical_floor)
    limit: float  # the measured copy bandwidth (GB/s) or FP32 rate (GFLOP/s)
    work: float  # the bytes moved or flop done by one run of the comparison
    student_rate: float  # GB/s or GFLOP/s at the student's median time
    student_fraction: float  # student_rate / limit
    reference_rate: float | None = None  # the same of the reference's run; None without one
    reference_fraction: float | None = None
    limits_from: str = "reference"  # whose bench measured the limits: "reference", "student"

    @property
    def unit(self) -> str:
        return "GB/s" if self.bound == "bytes" else "GFLOP/s"

    def to_dict(self) -> dict[str, Any]:
        return {"bound": self.bound, "unit": self.unit, "limit": self.limit, "work": self.work,
                "student_rate": self.student_rate, "student_fraction": self.student_fraction,
                "reference_rate": self.reference_rate,
                "reference_fraction": self.reference_fraction,
                "limits_from": self.limits_from}

    @staticmethod
    def from_dict(data: Any) -> "SpeedOfLight | None":
        """The record kept in result.json, or None when `data` is not one (absent, from an
        older grader, or edited into something else)."""
        if not isinstance(data, dict) or data.get("bound") not in _LIMIT_WORDS:
            return None
        limit, work = _finite(data.get("limit"), True), _finite(data.get("work"), True)
        rate, fraction = _finite(data.get("student_rate")), _finite(data.get("student_fraction"))
        if limit is None or work is None or rate is None or fraction is None:
            return None
        ref_rate = _finite(data.get("reference_rate"))
        ref_fraction = _finite(data.get("reference_fraction"))
        if ref_rate is None or ref_fraction is None:
            ref_rate = ref_fraction = None
        source = data.get("limits_from")
        return SpeedOfLight(data["bound"], limit, work, rate, fraction, ref_rate, ref_fraction,
                            source if source in ("reference", "student") else "reference")

    def text(self) -> str:
        """"Speed of light: your kernel moves 2.31 TB/s, 82 % of this GPU's measured copy
        bandwidth (2.81 TB/s); the reference 91 %." (the reference's part only with its
        run)."""
        name, verb, _ = _LIMIT_WORDS[self.bound]
        line = (f"Speed of light: your kernel {verb} {rate_text(self.student_rate, self.bound)}, "
                f"{percent_text(self.student_fraction)} of this GPU's measured {name} "
                f"({rate_text(self.limit, self.bound)})")
        if self.reference_fraction is not None:
            line += f"; the reference {percent_text(self.reference_fraction)}"
        return line + "."


def speed_of_light(name: str, student: dict | None,
                   reference: dict | None) -> SpeedOfLight | None:
    """Comparison `name`'s kernels against the GPU's measured limit, from the student's and
    the reference's bench documents, both as `recompute` restated them (the caller gives the
    student's only when it agreed with its samples: a refused document has no figure).

    The limits and the work are taken as floor_check takes them: the limits from the
    reference's document when it has them (the grader's own bench on the same GPU), else
    from the student's; the work from the reference's comparison, else the student's. The
    limit that binds is physical_floor's (the one whose floor is the longer), and each
    side's rate is that work over its candidate's median time. None when there is no
    limit or no work a limit bounds, or no median time of the student's."""
    comp, ref_comp = _named(student, name), _named(reference, name)
    if comp is None:
        return None
    limits = _limits(reference) or _limits(student)
    source = ref_comp if ref_comp is not None else comp
    floor = physical_floor(source.get("candidate"), limits)
    if floor is None:
        return None
    bound = floor["bound"]
    work = floor[bound]
    limit = floor["copy_gbytes_per_s"] if bound == "bytes" else floor["fp32_gflops"]

    def rate(c: dict | None) -> float | None:
        ms = _finite(number(c or {}, "candidate", "ms", "median"), True)
        return work / ms * 1e-6 if ms is not None else None  # GB/s or GFLOP/s

    student_rate, reference_rate = rate(comp), rate(ref_comp)
    if student_rate is None:
        return None
    return SpeedOfLight(bound, limit, work, student_rate, student_rate / limit, reference_rate,
                        None if reference_rate is None else reference_rate / limit,
                        "reference" if _limits(reference) else "student")
