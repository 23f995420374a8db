"""What a bench's figures say about the GPU's limits: `floor_check` holds the candidate's time
against the least time the GPU needs to do the comparison's work (grader/README.md,
"Scoring"); `speed_of_light` says how near the kernels come to that limit (a fraction shown
beside the score, worth no points). Both read the documents as samples.recompute restated
them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..benchdoc import Document, Limits, PairTiming, Work

# A candidate time below floor / FLOOR_MARGIN is flagged: the measured limits (a copy
# kernel's bandwidth, an FMA loop's rate) are a few percent under the GPU's true peaks, so a
# fair kernel that matches them is not flagged (a rubric may set its own floor_margin).
FLOOR_MARGIN = 1.1

# --- the physical floor ---------------------------------------------------------------------


def _positive(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value > 0 else None


def physical_floor(work: Work | None, limits: Limits | None) -> dict[str, Any] | None:
    """The least time (ms) the GPU needs for `work` (the flop and bytes of one run) at the
    `limits` the bench measured (its copy bandwidth and FP32 rate): the longer of moving
    the bytes and doing the flop. None when no limit applies to the work (no limits: an
    older bench; or no work that a measured limit bounds)."""
    work, limits = work or Work(), limits or Limits()
    bytes_, flop = _positive(work.bytes), _positive(work.flop)
    copy_rate, flop_rate = _positive(limits.copy_gbytes_per_s), _positive(limits.fp32_gflops)
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


def _named(doc: Document | None, name: str) -> PairTiming | None:
    return doc.comparison(name) if doc is not None else None


def _limits(doc: Document | None) -> Limits | None:
    return doc.limits if doc is not None else None


def _median(comp: PairTiming | None) -> float | None:
    return comp.candidate.median_ms if comp is not None else None


def floor_check(name: str, student: Document | None, reference: Document | None,
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
    floor = physical_floor(source.candidate.work if source is not None else None, limits)
    if floor is None:
        why = ("the bench reported no measured limits" if limits is None
               else "no work of this comparison is bounded by a measured limit")
        return None, {"checked": False, "why": why}
    details: dict[str, Any] = {"checked": True, "margin": margin, **floor,
                               "floor_ms": floor["ms"]}
    del details["ms"]
    ref_ms = _median(ref_comp)
    if ref_ms is not None and ref_ms < floor["ms"] / margin:
        return None, {**details, "checked": False, "reference_ms": ref_ms,
                      "why": "the reference itself measured " + floor_text(ref_ms, floor)
                             + ": the limits do not bound this work here"}
    ms = _median(comp)
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


def speed_of_light(name: str, student: Document | None,
                   reference: Document | None) -> SpeedOfLight | None:
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
    floor = physical_floor(source.candidate.work, limits)
    if floor is None:
        return None
    bound = floor["bound"]
    work = floor[bound]
    limit = floor["copy_gbytes_per_s"] if bound == "bytes" else floor["fp32_gflops"]

    def rate(c: PairTiming | None) -> float | None:
        ms = _finite(_median(c), True)
        return work / ms * 1e-6 if ms is not None else None  # GB/s or GFLOP/s

    student_rate, reference_rate = rate(comp), rate(ref_comp)
    if student_rate is None:
        return None
    return SpeedOfLight(bound, limit, work, student_rate, student_rate / limit, reference_rate,
                        None if reference_rate is None else reference_rate / limit,
                        "reference" if _limits(reference) else "student")
