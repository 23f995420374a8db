"""The GPU measurements of a lab: memory safety (compute-sanitizer), profiler metrics (ncu)
and speed (the bench, student and reference). Each returns a PartResult; a tool that is
missing or refuses to run gives "not measured", with no points either way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import parsers, sandbox, scoring
from .result import GRADED, NOT_MEASURED, PartResult
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

    def next_file(self, stem: str, suffix: str) -> Path:
        self.counter[0] += 1
        return self.run_dir / f"{stem}-{self.counter[0]}{suffix}"


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
            out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.timeout * 3, env=ctx.env,
                              identity=ctx.identity)
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


def metric_part(metric: Metric, ctx: Context, full_groups: set[str]) -> PartResult:
    """One [[metrics]] entry: ncu on the student's bench (or tests), the value reported and,
    with points, scored inside [expect_min, expect_max]."""
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
    regex = metric.kernel_regex
    if metric.baseline_kernel_regex:
        regex = f"({metric.kernel_regex})|({metric.baseline_kernel_regex})"
    names = [metric.metric] + ([metric.per] if metric.per else [])
    rep = ctx.next_file("ncu", "")
    if metric.target == "bench":
        args = [*metric.args, "--seed", str(ctx.seed)]
    else:
        args = [*(metric.args or []), "--rng-seed", str(ctx.seed)]
    cmd = [ncu, "--metrics", ",".join(names), "-k", f"regex:{regex}", "-f", "-o", str(rep),
           str(binary), *args]
    out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.timeout * 3, env=ctx.env,
                      identity=ctx.identity)
    report = rep.with_suffix(".ncu-rep")
    if not report.exists():
        refused = REFUSED_RE.search(out.output_tail)
        part.reason = ("Not measured: the profiler was refused access to the GPU's counters "
                       f"({_first(out.output_tail)})." if refused else
                       f"Not measured: ncu produced no report ({out.describe()}).")
        return part
    import subprocess
    proc = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "raw", "--metrics",
                           ",".join(names)], capture_output=True, text=True, timeout=300)
    try:
        rows = parsers.parse_ncu_csv(proc.stdout)
    except ValueError as err:
        part.reason = f"Not measured: could not read ncu's table ({err})."
        return part
    value = _ratio(rows, metric.metric, metric.per, metric.kernel_regex)
    if value is not None and metric.baseline_kernel_regex:
        base = _ratio(rows, metric.metric, metric.per, metric.baseline_kernel_regex)
        value = value / base if base else None
    if value is None or not math.isfinite(value):
        part.reason = (f"Not measured: no launch of a kernel matching '{metric.kernel_regex}' "
                       "reported the metric.")
        return part
    part.details = {"value": value, "metric": metric.metric, "per": metric.per,
                    "kernel_regex": metric.kernel_regex,
                    "baseline_kernel_regex": metric.baseline_kernel_regex,
                    "expect_min": metric.expect_min, "expect_max": metric.expect_max}
    part.status = GRADED
    inside = ((metric.expect_min is None or value >= metric.expect_min)
              and (metric.expect_max is None or value <= metric.expect_max))
    missing = [g for g in metric.requires if g not in full_groups]
    if metric.points <= 0:
        part.reason = f"Measured {value:.4g} (reported, not scored)."
    elif missing:
        part.reason = (f"Measured {value:.4g}, but these groups need full marks first: "
                       + ", ".join(missing))
    elif inside:
        part.points = metric.points
    else:
        part.reason = (f"Measured {value:.4g}, outside the expected range "
                       f"[{metric.expect_min}, {metric.expect_max}].")
    return part


def _ratio(rows, metric: str, per: str | None, regex: str) -> float | None:
    values = parsers.ncu_metric(rows, metric, regex)
    if not values:
        return None
    total = sum(values)
    if per:
        denominators = parsers.ncu_metric(rows, per, regex)
        if not denominators or not sum(denominators):
            return None
        return total / sum(denominators)
    return total / len(values)


def run_bench(binary: Path, args: list[str], ctx: Context, trusted: bool) -> tuple[
        dict | None, str, sandbox.Outcome]:
    """One bench run; (document, problem, outcome). Results come from the --json file."""
    path = ctx.next_file("bench-" + binary.name, ".json")
    cmd = [str(binary), *args, "--json", str(path), "--seed", str(ctx.seed)]
    out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.timeout * 2, env=ctx.env,
                      identity=None if trusted else ctx.identity)
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
    problem = parsers.verification_problem(comp)
    missing = [g for g in perf.requires if g not in full_groups]
    if problem or missing:
        part.status = GRADED
        part.reason = ("No speed points: correctness comes first: "
                       + (f"the output of your timed kernel was wrong ({problem})" if problem
                          else "these groups need full marks: " + ", ".join(missing)) + ".")
        part.details = {"student_speedup": s_speed, "reference_speedup": r_speed}
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
    """The scored comparison, plus the bench's other cases and derived metrics (sweeps the
    HTML report plots: bandwidth vs stride, cycles vs stride, throughput vs block size)."""
    return {
        "baseline_ms": (comp.get("baseline") or {}).get("ms"),
        "candidate_ms": (comp.get("candidate") or {}).get("ms"),
        "speedup": comp.get("speedup"),
        "converged": comp.get("converged"),
        "verification": (comp.get("candidate") or {}).get("verification"),
        "cases": doc.get("cases") or [],
        "metrics": doc.get("metrics") or {},
    }
