"""The GPU measurements of a lab: memory safety (compute-sanitizer), profiler metrics (ncu)
and speed (the bench, student and reference). Each returns a PartResult; a tool that is
missing or refuses to run gives "not measured", with no points either way.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import parsers, sandbox, scoring
from .result import GRADED, NOT_MEASURED, REVIEW, PartResult
from .rubric import Metric, Rubric
from .tools import find_tool

SANITIZER_OPTIONS = {
    "memcheck": ["--tool", "memcheck", "--padding", "32"],
    "racecheck": ["--tool", "racecheck"],
    "synccheck": ["--tool", "synccheck"],
    "initcheck": ["--tool", "initcheck"],
}
REFUSED_RE = re.compile(r"ERR_NVGPUCTRPERM|permission|not supported on this|"
                        r"Insufficient privilege|not allowed", re.IGNORECASE)


@dataclass
class Context:
    """What a measurement needs to run the student's binaries."""

    run_dir: Path
    env: dict[str, str]
    identity: sandbox.Identity | None
    seed: int
    timeout: float
    binary: Callable[[str], Path | None]  # "tests_student" -> path, None if not built
    counter: list[int]
    jail: sandbox.Jail | None = None  # where the student's binaries run (grader/sandbox.py)
    # time.monotonic() after which no more GPU work of this lab may start: one submission
    # can never hold the GPU (and a batch's GPU lock) past the lab's GPU time limit
    deadline: float = math.inf

    def next_file(self, stem: str, suffix: str) -> Path:
        self.counter[0] += 1
        return self.run_dir / f"{stem}-{self.counter[0]}{suffix}"

    def limit(self, seconds: float) -> float:
        """A stage's time limit, cut to what is left of the lab's GPU time (at least 1 s, so
        a run that starts after the deadline ends at once as timed out)."""
        return max(1.0, min(seconds, self.deadline - time.monotonic()))


def memory_safety(rubric: Rubric, ctx: Context, case_binaries: list[tuple[str, str]]) -> PartResult:
    """Each tool runs every binary that has cases in [memory_safety].tests."""
    ms = rubric.memory_safety
    assert ms is not None
    sanitizer = find_tool("compute-sanitizer")
    if not sanitizer:
        return PartResult("memory_safety", "Memory safety", NOT_MEASURED, 0.0, ms.points,
                          "Not measured: compute-sanitizer is not installed here, so memory "
                          "safety earns no points either way.")
    summaries = []
    details: dict[str, Any] = {"tests": ms.tests}
    for tool in ms.tools:
        combined: parsers.SanitizerSummary | None = None
        for kind, spec in case_binaries:
            binary = ctx.binary(kind)
            if binary is None:
                continue
            log = ctx.next_file(f"sanitizer-{tool}", ".log")
            report = ctx.next_file(f"sanitizer-{tool}", ".xml")
            cmd = [sanitizer, *SANITIZER_OPTIONS.get(tool, ["--tool", tool]),
                   "--error-exitcode", "99", "--log-file", str(log), str(binary), spec,
                   "-r", "xml", "-o", str(report), "--rng-seed", str(ctx.seed)]
            out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 3),
                              env=ctx.env, identity=ctx.identity, jail=ctx.jail)
            try:
                text = log.read_text(errors="replace")
            except OSError:
                text = ""
            if not text.strip() and REFUSED_RE.search(out.output_tail):
                return PartResult("memory_safety", "Memory safety", NOT_MEASURED, 0.0,
                                  ms.points, "Not measured: compute-sanitizer refused to run "
                                  f"here ({_first(out.output_tail)}); no points either way.")
            summary = parsers.parse_sanitizer_output(text, tool)
            if out.timed_out or (out.signal and summary.complete):
                summary.complete = False
                summary.ok = False
            combined = summary if combined is None else _merge(combined, summary)
            details[f"{tool}:{kind}"] = out.describe()
        if combined is not None:
            summaries.append(combined)
    if not summaries:
        return PartResult("memory_safety", "Memory safety", NOT_MEASURED, 0.0, ms.points,
                          "Not measured: no test binary with the sanitizer cases was built.")
    score = scoring.sanitizer_points(summaries, ms.points)
    details.update({"errors": score.details,
                    "messages": {s.tool: s.messages[:3] for s in summaries if s.messages}})
    return PartResult("memory_safety", "Memory safety", score.status, score.points, ms.points,
                      score.reason if score.points < ms.points else "", details)


def _merge(a: parsers.SanitizerSummary, b: parsers.SanitizerSummary) -> parsers.SanitizerSummary:
    return parsers.SanitizerSummary(a.tool, a.errors + b.errors, a.ok and b.ok,
                                    a.messages + b.messages, b.raw_tail,
                                    getattr(a, "warnings", 0) + getattr(b, "warnings", 0),
                                    getattr(a, "complete", True) and getattr(b, "complete", True))


def _first(text: str) -> str:
    for line in text.splitlines():
        if REFUSED_RE.search(line):
            return line.strip()[:200]
    return text.strip().splitlines()[-1][:200] if text.strip() else "no output"


# The bench marks each call of an interleaved comparison with an NVTX push/pop range: the
# student's call and the given baseline's. A metric measures the kernels launched inside one
# of them, whatever their names; the other range is excluded, so a range pushed inside the
# student's call cannot pass the student's kernels off as the baseline's.
CALL_RANGES = {"candidate": "cml:candidate", "baseline": "cml:baseline"}
_UNKNOWN_METRIC_RE = re.compile(r"metric.*(not found|unknown|invalid|not available|not "
                                r"supported)|(failed to find|unknown|invalid) metric",
                                re.IGNORECASE)


def ncu_command(ncu: str, metric: Metric, binary: Path, seed: int, log: Path,
                call: str | None = None) -> list[str]:
    """The profiling run of one [[metrics]] entry, its raw page written to `log` as CSV.

    target "bench": the bench with the entry's args, only kernels inside the NVTX range of
    `call` (default: the entry's) and not inside the other one; call "any": inside either.
    target "tests": every kernel the test cases matching the spec launch."""
    names = [metric.metric] + ([metric.per] if metric.per else [])
    if any(not n.endswith(".sum") for n in names):
        names.append(parsers.NCU_DURATION)  # the weights of a non-additive metric's mean
    cmd = [ncu]
    if metric.target == "bench":
        call = call or metric.call
        cmd.append("--nvtx")
        for name, nvtx_range in CALL_RANGES.items():  # "/": a push/pop range, at any depth
            inside = call in (name, "any")
            cmd += ["--nvtx-include" if inside else "--nvtx-exclude", f"{nvtx_range}/"]
        args = [*metric.args, "--seed", str(seed)]
    else:
        args = [*metric.args, "--rng-seed", str(seed)]
    return cmd + ["--metrics", ",".join(dict.fromkeys(names)), "--csv", "--page", "raw",
                  "--print-units", "base", "--log-file", str(log), str(binary), *args]


class _NotMeasured(Exception):
    """This machine could not measure the metric (the message says why): no points either way."""


def metric_part(metric: Metric, ctx: Context, full_groups: set[str]) -> PartResult:
    """One [[metrics]] entry: ncu on the student's bench (or tests), the metric over every
    kernel of the profiled call, reported and, with points, scored (scoring.metric_points).
    "Not measured" only when ncu is missing, refused or cannot measure on this machine; a
    call that gives the metric nothing to measure scores 0 and says why."""
    part = PartResult("metric", metric.name, NOT_MEASURED, 0.0, metric.points)
    ncu = find_tool("ncu")
    if not ncu:
        part.reason = "Not measured: Nsight Compute (ncu) is not installed here."
        return part
    kind = "bench_student" if metric.target == "bench" else "tests_student"
    binary = ctx.binary(kind)
    if binary is None:
        part.reason = f"Not measured: {kind} was not built."
        return part
    part.details = {"metric": metric.metric, "per": metric.per, "target": metric.target,
                    "call": metric.call if metric.target == "bench" else None,
                    "per_baseline": metric.per_baseline, "expect_min": metric.expect_min,
                    "expect_max": metric.expect_max, "commands": []}
    try:
        value, problem = _measure(ncu, metric, ctx, binary, part.details)
    except _NotMeasured as err:
        part.reason = str(err)
        return part
    part.details["value"] = value
    missing = [g for g in metric.requires if g not in full_groups]
    score = scoring.metric_points(value, metric.points, metric.expect_min, metric.expect_max,
                                  missing, problem)
    part.status, part.points = score.status, score.points
    part.reason = score.reason if score.points < metric.points or metric.points <= 0 else ""
    return part


def _measure(ncu: str, metric: Metric, ctx: Context, binary: Path,
             details: dict[str, Any]) -> tuple[float | None, str]:
    """(the value, or None and why the student's code gave it nothing to measure)."""
    rows, failed = _profile(ncu, metric, ctx, binary, metric.call, details)
    if failed:
        return None, failed
    details["kernels"] = len(rows)
    if not rows:
        if metric.target == "tests":
            return None, ("The profiled test cases launched no kernel, so there was nothing "
                          "to measure.")
        # Tell "this call launched nothing" from "this bench marks no call at all" (any
        # kernel inside either range, so ranges the student's code left open change nothing).
        if not _profile(ncu, metric, ctx, binary, "any", details)[0]:
            raise _NotMeasured("Not measured: the bench marked no call for the profiler (no "
                               f"kernel inside {CALL_RANGES['candidate']} or "
                               f"{CALL_RANGES['baseline']}): a grader problem, not yours.")
        who = "Your code" if metric.call == "candidate" else "The baseline"
        return None, f"{who} launched no kernel in the timed call: there was nothing to measure."
    value, problem = _value(rows, metric)
    if value is None or not metric.per_baseline:
        return value, problem
    base_rows, failed = _profile(ncu, metric, ctx, binary, "baseline", details)
    base = _value(base_rows, metric)[0] if base_rows and not failed else None
    details.update(candidate_value=value, baseline_value=base)
    if not base:
        raise _NotMeasured("Not measured: the baseline's call gave no value to divide by "
                           f"({failed or 'its value was 0 or missing'}).")
    return value / base, ""


def _profile(ncu: str, metric: Metric, ctx: Context, binary: Path, call: str,
             details: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """One profiling run: (the launches profiled, why the student's program failed under
    it or ""). Raises _NotMeasured when the machine could not measure."""
    log = ctx.next_file("ncu", ".csv")
    cmd = ncu_command(ncu, metric, binary, ctx.seed, log, call)
    details["commands"].append(" ".join(cmd))
    out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 3), env=ctx.env,
                      identity=ctx.identity, jail=ctx.jail)
    try:
        found = parsers.parse_ncu_log(log.read_text(errors="replace"))
    except OSError as err:
        raise _NotMeasured(f"Not measured: ncu wrote no log ({out.describe()}).") from err
    # Only ncu's own lines decide: the student's program writes elsewhere.
    refused = next((e for e in found.errors if REFUSED_RE.search(e)), "")
    if refused:
        raise _NotMeasured("Not measured: the profiler was refused access to the GPU's "
                           f"counters ({refused[:200]}).")
    unknown = next((e for e in found.errors if _UNKNOWN_METRIC_RE.search(e)), "")
    if unknown:
        wanted = metric.metric + (f" / {metric.per}" if metric.per else "")
        raise _NotMeasured(f"Not measured: ncu on this GPU cannot measure {wanted} "
                           f"({unknown[:200]}).")
    if out.returncode == 2 and metric.target == "bench" and _rejects_args(metric, ctx):
        raise _NotMeasured("Not measured: the bench does not accept the rubric's arguments "
                           f"({' '.join(metric.args)}): a grader problem, not yours.")
    if out.timed_out or out.returncode != 0:
        said = f"; ncu: {found.errors[0][:200]}" if found.errors else ""
        return [], (f"No metric points: the {metric.target} did not run to the end under the "
                    f"profiler ({out.describe()}{said}).")
    return found.rows, ""


def _rejects_args(metric: Metric, ctx: Context) -> bool:
    """Whether the reference bench, too, stops at the metric's arguments (status 2: the
    bench's usage message): then the rubric and the bench disagree, not the student."""
    reference = ctx.binary("bench_solution")
    if reference is None:
        return False
    return run_bench(reference, metric.args, ctx, trusted=True)[2].returncode == 2


def _value(rows: list[dict[str, Any]], metric: Metric) -> tuple[float | None, str]:
    """(the value over `rows`, or None and why the call gave it nothing to measure)."""
    total = parsers.ncu_aggregate(rows, metric.metric)
    per = parsers.ncu_aggregate(rows, metric.per) if metric.per else 1.0
    if total is None or per is None:
        missing = metric.metric if total is None else metric.per
        raise _NotMeasured(f"Not measured: ncu reported no value of {missing}.")
    if per == 0:
        return None, (f"No {_counted(metric.per)} was measured in the profiled call "
                      f"({metric.per} = 0), so there is nothing to judge.")
    return total / per, ""


_COUNTED_OP = re.compile(r"op(?:_(?:shared|global|local))?_(ld|st|atom|red)\b")


def _counted(metric: str) -> str:
    """What an ncu counter counts, in words, e.g. "shared-memory load" for
    smsp__inst_executed_op_shared_ld.sum (for "nothing to measure" messages)."""
    space = next((f"{key}-memory" for key in ("shared", "global", "local")
                  if f"_{key}" in metric), "")
    m = _COUNTED_OP.search(metric.replace(".", " "))
    op = {"ld": "load", "st": "store", "atom": "atomic", "red": "reduction"}.get(
        m.group(1) if m else "", "access")
    return f"{space} {op}" if space else f"work counted by {metric}"


def run_bench(binary: Path, args: list[str], ctx: Context, trusted: bool) -> tuple[
        dict | None, str, sandbox.Outcome]:
    """One bench run; (document, problem, outcome). Results come from the --json file."""
    path = ctx.next_file("bench-" + binary.name, ".json")
    cmd = [str(binary), *args, "--json", str(path), "--seed", str(ctx.seed)]
    if trusted:  # the reference's bench: the grader's own code, outside the jail
        out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.timeout * 2, env=ctx.env)
    else:
        out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 2),
                          env=ctx.env, identity=ctx.identity, jail=ctx.jail)
    if out.timed_out or out.returncode != 0:
        return None, f"{binary.name} {out.describe()}", out
    try:
        return parsers.read_bench_json(path), "", out
    except (OSError, ValueError) as err:
        return None, f"{binary.name} wrote no readable result ({err})", out


def performance(rubric: Rubric, ctx: Context, full_groups: set[str]) -> tuple[PartResult,
                                                                              dict | None]:
    perf = rubric.performance
    assert perf is not None
    part = PartResult("performance", "Performance", NOT_MEASURED, 0.0, perf.points)
    student_bin, reference_bin = ctx.binary("bench_student"), ctx.binary("bench_solution")
    if student_bin is None or reference_bin is None:
        part.reason = "Not measured: the bench was not built."
        return part, None
    reference, why_ref, _ = run_bench(reference_bin, perf.bench_args, ctx, trusted=True)
    student, why_student, _ = run_bench(student_bin, perf.bench_args, ctx, trusted=False)
    timing: dict[str, Any] = {"comparison": perf.comparison, "bench_args": perf.bench_args}
    if reference is None:
        part.reason = f"Not measured: the reference bench did not run ({why_ref})."
        return part, timing
    try:
        ref_comp = parsers.comparison(reference, perf.comparison)
    except ValueError as err:
        part.reason = f"Not measured: {err}"
        return part, timing
    timing["reference"] = _summary(ref_comp, reference)
    timing["device"] = reference.get("device")
    timing["clocks"] = reference.get("clocks")
    ref_problem = _timed_output_problem(ref_comp, "the reference's") or _review_problem(ref_comp)
    if ref_problem:
        part.reason = ("Not measured: the reference's own timing could not be trusted on this "
                       f"machine ({ref_problem}).")
        return part, timing
    if student is None:
        part.status, part.reason = GRADED, (
            f"No speed points: your bench did not finish ({why_student}).")
        return part, timing
    try:
        comp = parsers.comparison(student, perf.comparison)
    except ValueError as err:
        part.status, part.reason = GRADED, f"No speed points: {err}"
        return part, timing
    timing["student"] = _summary(comp, student)
    s_speed = _num(comp, "speedup", "median")
    r_speed = _num(ref_comp, "speedup", "median")
    timing["student_speedup"], timing["reference_speedup"] = s_speed, r_speed
    if s_speed and r_speed:
        timing["time_ratio"] = r_speed / s_speed
    problem = _timed_output_problem(comp)
    no_kernel = _launch_problem(comp)
    missing = [g for g in perf.requires if g not in full_groups]
    if problem or no_kernel or missing:
        part.status = GRADED
        part.reason = ("No speed points: "
                       + (f"correctness comes first: {problem}" if problem else
                          no_kernel if no_kernel else
                          "correctness comes first: these groups need full marks: "
                          + ", ".join(missing)) + ".")
        part.details = {"student_speedup": s_speed, "reference_speedup": r_speed,
                        "launches": (comp.get("candidate") or {}).get("launches")}
        return part, timing
    review = _review_problem(comp)
    if review:
        part.status = REVIEW
        part.reason = ("Flagged for review: the bench's host-time cross-check says your timing "
                       f"cannot be trusted ({review}); no speed points until a person has "
                       "looked at it.")
        part.details = {"student_speedup": s_speed, "reference_speedup": r_speed,
                        "review": comp.get("review")}
        return part, timing
    score = scoring.speed_points(s_speed or 0.0, r_speed or 0.0, perf.points,
                                 perf.full_credit_ratio, perf.review_ratio)
    part.points, part.status = score.points, score.status
    part.reason = score.reason if score.points < perf.points else ""
    part.details = {"student_speedup": s_speed, "reference_speedup": r_speed,
                    "time_ratio": score.time_ratio, "summary": score.reason}
    return part, timing


def _num(d: dict, *keys: str) -> float | None:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return float(d) if isinstance(d, (int, float)) else None


def _summary(comp: dict, doc: dict) -> dict[str, Any]:
    """The scored comparison, plus the bench's other cases, derived metrics and the plots it
    declares over them (drawn by the HTML report)."""
    return {
        "baseline_ms": (comp.get("baseline") or {}).get("ms"),
        "candidate_ms": (comp.get("candidate") or {}).get("ms"),
        "speedup": comp.get("speedup"),
        "converged": comp.get("converged"),
        "verification": (comp.get("candidate") or {}).get("verification"),
        "baseline_verification": (comp.get("baseline") or {}).get("verification"),
        "launches": (comp.get("candidate") or {}).get("launches"),
        "baseline_launches": (comp.get("baseline") or {}).get("launches"),
        "determinism": comp.get("determinism"),
        "review": comp.get("review"),
        "host_margin_ms": {side: (comp.get(side) or {}).get("host_margin_ms")
                           for side in ("baseline", "candidate")},
        "cases": doc.get("cases") or [],
        "metrics": doc.get("metrics") or {},
        "plots": doc.get("plots") or [],
    }


# What the bench's harness (schema cml-bench/2, common/include/cml/timing.hpp) says about the
# scored comparison's timed runs, as the sentence a reason quotes; None when all is well.

def _timed_output_problem(comp: dict, whose: str = "your") -> str | None:
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


def _launch_problem(comp: dict) -> str | None:
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


def _review_problem(comp: dict) -> str | None:
    """The harness's review flag (work escaped the timing events), with its reasons."""
    review = comp.get("review")
    if not isinstance(review, dict) or not review.get("flagged"):
        return None
    reasons = [str(r) for r in review.get("reasons") or [] if r]
    return "; ".join(reasons) or "the host-time cross-check flagged the timing"
