"""A [[metrics]] entry (`Metric`, the record grader/parts/metric.py reads from the rubric)
and how it judges the kernels of the profiled call: each kernel's value and its share of
the call's work (`kernel_values`), the value the call is judged by, its worst kernel that
carries the work (`judge_kernels`), the smaller kernels outside the range that send it to a
person (`outlier_review`), the limit on distinct kernels (`too_many_kernels`), and the words
a student reads: a kernel's name as written (`kernel_label`), what a counter counts
(`counted`). Pure functions of the launches grader/measure/ncu_csv.py read."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .ncu_csv import ncu_aggregate, ncu_by_kernel, ncu_duration, ncu_kernels

TARGETS = ("bench", "tests")  # what [[metrics]].target names
CALLS = ("candidate", "baseline")  # what [[metrics]].call names


@dataclass
class Metric:
    """A profiler (ncu) metric of the work one call did, read per kernel of the call (every
    kernel it launched, whatever their names) and judged by the worst kernel that carries at
    least a tenth of the call's work (grader/README.md, "Profiler metrics"); `max_kernels`
    caps the distinct kernels the call may launch.

    target "bench": the bench marks each call of an interleaved comparison with an NVTX
    range, `cml:candidate` around the student's call and `cml:baseline` around the given
    baseline's; `call` picks one (`args` pick the comparison). target "tests": every kernel
    the matching test cases launch."""

    name: str
    target: str = "bench"  # "bench": run the bench with `args`; "tests": args is a Catch2 spec
    args: list[str] = field(default_factory=list)
    metric: str = ""
    per: str | None = None  # denominator metric, measured on the same launches
    call: str = "candidate"  # bench only: "candidate" (the student's call) or "baseline"
    per_baseline: bool = False  # divide by the same value measured on the baseline's call
    expect_min: float | None = None
    expect_max: float | None = None
    points: float = 0.0
    requires: list[str] = field(default_factory=list)  # default: [performance].requires
    max_kernels: int | None = None  # more distinct kernels in the call: 0 points for it
    # Said when the value loses the points, in the student's terms: what the number means and
    # what usually makes it bad; and the heading of the lab's handout section that fixes it.
    explain: str = ""
    handout_section: str = ""


# A kernel that carries less than this share of the call's work (the denominator, or for an
# average its time) does not decide the call's value: a small helper kernel is not the work.
SIGNIFICANT_SHARE = 0.10


# The anonymous namespace as ncu's demanglers spell it: a student's file has no name for it.
_ANONYMOUS = ("(anonymous namespace)::", "<unnamed>::")


def _without_parameters(name: str) -> str:
    """`name` without the parameter list it ends with, found by its matching parenthesis
    (a template argument such as "<(int)32>" or a parameter "void (*)(float)" holds some):
    "tiled_kernel<(int)32>" for "tiled_kernel<(int)32>(const float *, int)"."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
    return name  # unbalanced: left as ncu wrote it


def kernel_label(name: str) -> str:
    """A kernel's name as a student wrote it, whole: "transpose_padded" for ncu's
    "(anonymous namespace)::transpose_padded(const float *, float *, int, int)" or
    "void <unnamed>::transpose_padded(...)", "tiled_kernel<(int)32>" for
    "void tiled_kernel<(int)32>(const float *, int)"."""
    short = name.strip()
    for anonymous in _ANONYMOUS:
        short = short.replace(anonymous, "")
    short = _without_parameters(short).strip()
    return short.removeprefix("void ").strip() or name


def too_many_kernels(rows: list[dict[str, Any]], metric: Metric) -> str:
    """Why the call launched more distinct kernels than the entry's max_kernels, or ""."""
    names = ncu_kernels(rows)
    if metric.max_kernels is None or len(names) <= metric.max_kernels:
        return ""
    who = "Your code" if metric.call == "candidate" else "The baseline"
    shown = ", ".join(kernel_label(n) for n in names[:4]) + (", …" if len(names) > 4 else "")
    return (f"{who} launched {len(names)} different kernels in the profiled call ({shown}); "
            f"this metric allows at most {metric.max_kernels}, so it earns nothing.")


def kernel_values(rows: list[dict[str, Any]], metric: Metric,
                  divisor: float = 1.0) -> list[dict[str, Any]]:
    """The metric of each kernel of the call (its launches grouped by name), as the call's
    value is computed (a ratio: sum(metric) / sum(per) within the kernel; an average: the
    mean over its launches weighted by their time), divided by `divisor`; with its launches,
    its share of the call's work (of the denominator; for an average, of the time) and
    whether that share makes it significant (at least SIGNIFICANT_SHARE)."""
    out: list[dict[str, Any]] = []
    for name, launches in ncu_by_kernel(rows):
        value = ncu_aggregate(launches, metric.metric)
        if metric.per:
            weight = ncu_aggregate(launches, metric.per)
            value = value / weight if value is not None and weight else None
        else:
            weight = ncu_duration(launches)
            if weight is None:  # no times: each launch weighs the same
                weight = float(len(launches))
        out.append({"kernel": name, "launches": len(launches),
                    "value": value / divisor if value is not None else None,
                    "weight": weight or 0.0})
    total = sum(k["weight"] for k in out)
    for k in out:
        k["share"] = k["weight"] / total if total > 0 else 0.0
        k["significant"] = k["share"] >= SIGNIFICANT_SHARE
    return out


def _badness(value: float, lo: float | None, hi: float | None) -> float:
    """How far `value` is on the wrong side of [lo, hi] (negative inside): larger is worse."""
    return max(lo - value if lo is not None else -math.inf,
               value - hi if hi is not None else -math.inf)


def judge_kernels(rows: list[dict[str, Any]], metric: Metric, call_value: float,
                  divisor: float = 1.0, details: dict[str, Any] | None = None) -> float:
    """The value the call is judged by: its worst significant kernel, in the direction the
    rubric grades (expect_max: the largest value; expect_min: the smallest; both: the
    farthest outside the range). A kernel split in two that both do the work keeps its
    value; a kernel added beside the work can only make it worse. A metric with neither
    bound, or a counter summed over the call without `per` (a total, which an extra kernel
    only adds to), is the call's value (`call_value`).

    A kernel too small to decide that lies outside the range is either a small helper or the
    work itself thinned out below SIGNIFICANT_SHARE by an added kernel: it is listed in
    details["outliers"] (the part is then flagged for review). Each kernel's figures go into
    details["by_kernel"], the deciding kernel's name into details["decided_by"]."""
    details = details if details is not None else {}
    kernels = kernel_values(rows, metric, divisor)
    details["by_kernel"] = [{k: v for k, v in kernel.items() if k != "weight"}
                            for kernel in kernels]
    details["decided_by"] = None
    lo, hi = metric.expect_min, metric.expect_max
    if (not metric.per and metric.metric.endswith(".sum")) or (lo is None and hi is None):
        return call_value
    measured = [k for k in kernels if k["value"] is not None]
    significant = [k for k in measured if k["significant"]]
    worst = max(significant, key=lambda k: _badness(k["value"], lo, hi), default=None)
    details["outliers"] = [
        {"kernel": k["kernel"], "value": k["value"], "share": k["share"]}
        for k in measured if not k["significant"] and _badness(k["value"], lo, hi) > 0]
    if worst is None:  # no kernel carries a tenth of the work: the call as a whole
        details["decided_by_text"] = f"all {len(kernels)} kernels of the call together"
        return call_value
    details["decided_by"] = worst["kernel"]
    details["decided_by_text"] = f"kernel {kernel_label(worst['kernel'])}" + (
        "" if len(kernels) == 1 else
        f" ({worst['share']:.1%} of the call's work)" if len(significant) == 1 else
        f", the worst of the {len(significant)} that carry at least {SIGNIFICANT_SHARE:.0%} "
        "of the call's work")
    value: float = worst["value"]
    return value


def outlier_review(details: dict[str, Any]) -> str:
    """Why a metric whose kernels that carry the work are judged is flagged for review: a
    smaller kernel of the call measured outside the range (details["outliers"]), or ""."""
    outliers = details.get("outliers") or []
    if not outliers:
        return ""
    shown = "; ".join(f"kernel {kernel_label(k['kernel'])} measured {k['value']:.4g} with "
                      f"{k['share']:.1%} of the call's work" for k in outliers[:3])
    return (f"{shown}, outside the range. A kernel that small is either a helper or the work "
            "itself thinned out by a kernel added beside it, and an added kernel must never "
            "improve a metric")


_COUNTED_OP = re.compile(r"op(?:_(?:shared|global|local))?_(ld|st|atom|red)\b")


def counted(metric: str) -> str:
    """What an ncu counter counts, in words, e.g. "shared-memory load" for
    smsp__inst_executed_op_shared_ld.sum (for "nothing to measure" messages)."""
    space = next((f"{key}-memory" for key in ("shared", "global", "local")
                  if f"_{key}" in metric), "")
    m = _COUNTED_OP.search(metric.replace(".", " "))
    op = {"ld": "load", "st": "store", "atom": "atomic", "red": "reduction"}.get(
        m.group(1) if m else "", "access")
    return f"{space} {op}" if space else f"work counted by {metric}"
