"""The GPU measurements of a lab: memory safety (compute-sanitizer), profiler metrics (ncu)
and speed (the bench, student and reference). Each returns a typed measurement; the points
are given by grader/scoring.py. A tool that is missing or refuses to run leaves the
measurement's `unmeasured` reason set ("not measured": no points either way).
(docs/architecture.md, "Stages and the data they pass")
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import benchdoc, parallel, parsers, sandbox, seccomp
from .result import Timing
from .rubric import MemorySafety, Metric, Performance
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

    run_dir: Path  # the grader's folder; each process gets a new one of its own in it
    env: dict[str, str]
    identity: sandbox.Identity | None
    seed: int
    timeout: float
    binary: Callable[[str], Path | None]  # "tests_student" -> path, None if not built
    jail: sandbox.Jail | None = None  # where the student's binaries run (grader/sandbox.py)
    # time.monotonic() after which no more GPU work of this lab may start: one submission
    # can never hold the GPU (and a batch's GPU lock) past the lab's GPU time limit
    deadline: float = math.inf
    # False where the checkout has no reference solution (a student copy): the speed part
    # times the student's bench alone, for feedback (student_only).
    has_reference: bool = True

    def limit(self, seconds: float) -> float:
        """A stage's time limit, cut to what is left of the lab's GPU time (at least 1 s, so
        a run that starts after the deadline ends at once as timed out)."""
        return max(1.0, min(seconds, self.deadline - time.monotonic()))


@dataclass
class SanitizerRuns:
    """Memory safety as measured: one summary per compute-sanitizer tool (its runs of every
    binary with cases in [memory_safety].tests merged), or why nothing was measured."""

    summaries: list[parsers.SanitizerSummary] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    unmeasured: str = ""  # the reason, when the part is "not measured"


def memory_safety(ms: MemorySafety, ctx: Context,
                  case_binaries: list[tuple[str, str]]) -> SanitizerRuns:
    """Each tool runs every binary that has cases in [memory_safety].tests. The runs do not
    time anything, so they run at the same time (grader/parallel.py); each has its own log
    and report, named before any starts, and they are read in the order tool by tool,
    binary by binary, as if run one after another."""
    sanitizer = find_tool("compute-sanitizer")
    if not sanitizer:
        return SanitizerRuns(unmeasured="Not measured: compute-sanitizer is not installed "
                             "here, so memory safety earns no points either way.")
    runs = SanitizerRuns(details={"tests": ms.tests})
    planned = [_sanitizer_run(sanitizer, tool, kind, spec, binary, ctx)
               for tool in ms.tools for kind, spec in case_binaries
               if (binary := ctx.binary(kind)) is not None]
    outcomes = parallel.run_all([functools.partial(_run_sanitizer, p, ctx) for p in planned])
    for tool in ms.tools:
        combined: parsers.SanitizerSummary | None = None
        for one, (out, text) in zip(planned, outcomes):
            if one.tool != tool:
                continue
            if not text.strip() and REFUSED_RE.search(out.output_tail):
                return SanitizerRuns(unmeasured="Not measured: compute-sanitizer refused to "
                                     f"run here ({_first(out.output_tail)}); no points "
                                     "either way.")
            summary = parsers.parse_sanitizer_output(text, tool)
            if out.timed_out or (out.signal and summary.complete):
                summary.complete = False
                summary.ok = False
            combined = summary if combined is None else _merge(combined, summary)
            runs.details[f"{tool}:{one.kind}"] = out.describe()
        if combined is not None:
            runs.summaries.append(combined)
    if not runs.summaries:
        runs.unmeasured = "Not measured: no test binary with the sanitizer cases was built."
    return runs


@dataclass
class _SanitizerRun:
    """One compute-sanitizer invocation: a tool on one binary."""

    tool: str
    kind: str
    sanitizer: str
    binary: Path
    spec: str

    def command(self, log: str, report: str, seed: int) -> list[str]:
        """Its command line, the tool's log written to `log`, the tests' report to `report`."""
        return [self.sanitizer, *SANITIZER_OPTIONS.get(self.tool, ["--tool", self.tool]),
                "--error-exitcode", "99", "--log-file", log, str(self.binary), self.spec,
                "-r", "xml", "-o", report, "--rng-seed", str(seed)]


def _sanitizer_run(sanitizer: str, tool: str, kind: str, spec: str, binary: Path,
                   ctx: Context) -> _SanitizerRun:
    return _SanitizerRun(tool, kind, sanitizer, binary, spec)


def _run_sanitizer(one: _SanitizerRun, ctx: Context) -> tuple[sandbox.Outcome, str]:
    """(the outcome, the tool's log). The log comes through a pipe the grader holds, in a
    folder of the run's own: the program under test finds no file of the tool's to rewrite
    and no file an earlier run left. The tests' own report goes to a pipe too (the tool's
    log decides, not the report)."""
    # the time limit is taken when the run starts: what is left of the lab's GPU time then
    with sandbox.Channel() as log, sandbox.Channel() as report:
        out = sandbox.run(one.command(log.path, report.path, ctx.seed), cwd=ctx.run_dir,
                          timeout=ctx.limit(ctx.timeout * 3), env=ctx.env,
                          identity=ctx.identity, jail=ctx.jail, fresh=True,
                          channels=[log, report], syscalls=seccomp.TOOL)
    return out, log.text()


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


def metric_names(metric: Metric) -> list[str]:
    """The ncu metrics one [[metrics]] entry needs."""
    names = [metric.metric] + ([metric.per] if metric.per else [])
    if any(not n.endswith(".sum") for n in names):
        names.append(parsers.NCU_DURATION)  # the weights of a non-additive metric's mean
    return names


def ncu_command(ncu: str, metric: Metric, binary: Path, seed: int, log: Path,
                call: str | None = None, names: list[str] | None = None) -> list[str]:
    """The profiling run of one [[metrics]] entry, its raw page written to `log` as CSV;
    `names`: every metric to collect in this run (default: the entry's own).

    target "bench": the bench with the entry's args, only kernels inside the NVTX range of
    `call` (default: the entry's) and not inside the other one; call "any": inside either.
    target "tests": every kernel the test cases matching the spec launch."""
    names = names or metric_names(metric)
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
    """This machine could not measure the metric (the message says why): no points either way.
    `unknown_metric`: this GPU's ncu does not know a metric it was asked for (a group of
    several is then measured one metric at a time)."""

    def __init__(self, message: str, unknown_metric: bool = False) -> None:
        super().__init__(message)
        self.unknown_metric = unknown_metric


@dataclass
class MetricRun:
    """One [[metrics]] entry as measured: the value of the profiled call (its worst
    significant kernel, see judge_kernels), or None and `problem` (why the student's call
    gave it nothing to measure); `unmeasured` set when this machine could not measure it at
    all. `source` names what decided the value ("kernel transpose_padded"), "" when the
    whole call did for a metric that is not judged per kernel."""

    details: dict[str, Any] = field(default_factory=dict)
    value: float | None = None
    problem: str = ""
    unmeasured: str = ""
    source: str = ""
    review: str = ""  # outlier_review: why the value cannot be awarded without a person


class _Pass:
    """The lab's profiler pass: every metric of its rubric that profiles the same run (target
    and arguments) is collected in one ncu process; for the bench, that process profiles the
    kernels of both calls (cml:candidate and cml:baseline) and each entry reads the launches
    of its own call from the shared report, told apart by the NVTX range stack ncu records
    for every launch."""

    def __init__(self, entries: list[Metric]) -> None:
        self.names: dict[tuple, list[str]] = {}
        for e in entries:
            got = self.names.setdefault(self.group(e), [])
            got += [n for n in metric_names(e) if n not in got]
        self.done: dict[tuple, tuple[str, Any]] = {}  # key -> (command, result or error)

    @staticmethod
    def group(metric: Metric) -> tuple:
        return (metric.target, tuple(metric.args))


# The column of ncu's raw page (with --nvtx) that lists the push/pop ranges open around a
# launch, e.g. `4619 "<default domain>:cml:baseline:none:none:none:none:none:none"`.
NVTX_STACK_COLUMN = "thread Domain:Push/Pop_Range"
_QUOTED = re.compile(r'"([^"]*)"')


def nvtx_stack(row: dict[str, Any]) -> list[str] | None:
    """The push/pop ranges open around one profiled launch (each as "domain:name:..."), or
    None when the report has no range column (an ncu without it: then one run per call)."""
    for key, value in row.items():
        if str(key).startswith(NVTX_STACK_COLUMN):
            return _QUOTED.findall(str(value or ""))
    return None


def _in_stack(stack: list[str], name: str) -> bool:
    return any(entry.split(":", 1)[-1] == name or entry.split(":", 1)[-1].startswith(name + ":")
               for entry in stack)


def rows_of_call(rows: list[dict[str, Any]], call: str) -> list[dict[str, Any]] | None:
    """The launches of `call` ("candidate" or "baseline": inside its range and not inside
    the other one, as the include/exclude filters of one run per call select them; "any":
    every launch). None when the rows do not say their ranges."""
    if call == "any":
        return rows
    stacks = [stack for row in rows if (stack := nvtx_stack(row)) is not None]
    if len(stacks) != len(rows):
        return None
    mine = CALL_RANGES[call]
    other = CALL_RANGES["baseline" if call == "candidate" else "candidate"]
    return [row for row, stack in zip(rows, stacks)
            if _in_stack(stack, mine) and not _in_stack(stack, other)]


def metrics(entries: list[Metric], ctx: Context) -> list[MetricRun]:
    """Every [[metrics]] entry of a lab, in one profiler pass (one ncu run per distinct
    profiled run, not one per metric); the runs in the order of `entries`."""
    shared = _Pass(entries)
    return [metric(e, ctx, shared) for e in entries]


def metric(entry: Metric, ctx: Context, shared: _Pass | None = None) -> MetricRun:
    """ncu on the student's bench (or tests), the metric over every kernel of the profiled
    call. "Not measured" only when ncu is missing, refused or cannot measure on this
    machine; a call that gives the metric nothing to measure has `problem` set."""
    ncu = find_tool("ncu")
    if not ncu:
        return MetricRun(unmeasured="Not measured: Nsight Compute (ncu) is not installed here.")
    kind = "bench_student" if entry.target == "bench" else "tests_student"
    binary = ctx.binary(kind)
    if binary is None:
        return MetricRun(unmeasured=f"Not measured: {kind} was not built.")
    run = MetricRun(details={
        "metric": entry.metric, "per": entry.per, "target": entry.target,
        "call": entry.call if entry.target == "bench" else None,
        "per_baseline": entry.per_baseline, "expect_min": entry.expect_min,
        "expect_max": entry.expect_max, "commands": []})
    try:
        run.value, run.problem = _measure(ncu, entry, ctx, binary, run.details,
                                          shared or _Pass([entry]))
    except _NotMeasured as err:
        run.unmeasured = str(err)
    run.source = run.details.pop("decided_by_text", "")
    run.review = outlier_review(run.details)
    return run


def _measure(ncu: str, metric: Metric, ctx: Context, binary: Path,
             details: dict[str, Any], shared: _Pass) -> tuple[float | None, str]:
    """(the value, or None and why the student's code gave it nothing to measure)."""

    def _profile(ncu, metric, ctx, binary, call, details):
        return _shared_profile(ncu, metric, ctx, binary, call, details, shared)

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
    too_many = _too_many_kernels(rows, metric)
    if too_many:
        return None, too_many
    value, problem = _value(rows, metric)
    if value is None:
        return value, problem
    divisor = 1.0
    if metric.per_baseline:
        base_rows, failed = _profile(ncu, metric, ctx, binary, "baseline", details)
        base = _value(base_rows, metric)[0] if base_rows and not failed else None
        details.update(candidate_value=value, baseline_value=base)
        if not base:
            raise _NotMeasured("Not measured: the baseline's call gave no value to divide by "
                               f"({failed or 'its value was 0 or missing'}).")
        divisor = base
    return judge_kernels(rows, metric, value / divisor, divisor, details), ""


def _shared_profile(ncu: str, metric: Metric, ctx: Context, binary: Path, call: str,
                    details: dict[str, Any], shared: _Pass) -> tuple[list[dict[str, Any]], str]:
    """_profile of the lab's pass: one run per (target, args) with every metric of its group
    (for the bench, both calls' kernels), the launches of `call` read from it. A metric this
    GPU cannot measure, in a group of several, is measured alone (so it does not take the
    others with it); an ncu whose report does not say each launch's ranges gets one run per
    call, filtered by ncu as before."""
    bench = metric.target == "bench"
    key = shared.group(metric)
    names = shared.names.get(key) or metric_names(metric)
    if key not in shared.done:
        try:
            found: Any = _profile(ncu, metric, ctx, binary, "any" if bench else call, details,
                                  names)
        except _NotMeasured as err:
            found = err
        shared.done[key] = (details["commands"][-1], found)
    else:
        details["commands"].append(shared.done[key][0])  # one run, read by every entry
    found = shared.done[key][1]
    if isinstance(found, _NotMeasured):
        if len(names) > len(metric_names(metric)) and found.unknown_metric:
            return _profile(ncu, metric, ctx, binary, call, details)
        raise found
    rows, failed = found
    if not bench or failed:
        return rows, failed
    selected = rows_of_call(rows, call)
    if selected is None:
        alone = key + (call,)
        if alone not in shared.done:
            shared.done[alone] = ("", _profile(ncu, metric, ctx, binary, call, details, names))
        return shared.done[alone][1]
    return selected, ""


def _profile(ncu: str, metric: Metric, ctx: Context, binary: Path, call: str,
             details: dict[str, Any],
             names: list[str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """One profiling run: (the launches profiled, why the student's program failed under
    it or ""). Raises _NotMeasured when the machine could not measure."""
    # ncu's log comes through a pipe the grader holds, in a folder of the run's own.
    with sandbox.Channel() as log:
        cmd = ncu_command(ncu, metric, binary, ctx.seed, Path(log.path), call, names)
        details["commands"].append(" ".join(cmd))
        out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 3),
                          env=ctx.env, identity=ctx.identity, jail=ctx.jail, fresh=True,
                          channels=[log], syscalls=seccomp.TOOL)
    if not log.data.strip():
        raise _NotMeasured(f"Not measured: ncu wrote no log ({out.describe()}).")
    found = parsers.parse_ncu_log(log.text())
    # Only ncu's own lines decide: the student's program writes elsewhere.
    refused = next((e for e in found.errors if REFUSED_RE.search(e)), "")
    if refused:
        raise _NotMeasured("Not measured: the profiler was refused access to the GPU's "
                           f"counters ({refused[:200]}).")
    unknown = next((e for e in found.errors if _UNKNOWN_METRIC_RE.search(e)), "")
    if unknown:
        wanted = metric.metric + (f" / {metric.per}" if metric.per else "")
        raise _NotMeasured(f"Not measured: ncu on this GPU cannot measure {wanted} "
                           f"({unknown[:200]}).", unknown_metric=True)
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
    if per == 0 and metric.per:  # per is 1 without metric.per
        return None, (f"No {_counted(metric.per)} was measured in the profiled call "
                      f"({metric.per} = 0), so there is nothing to judge.")
    return total / per, ""


# A kernel that carries less than this share of the call's work (the denominator, or for an
# average its time) does not decide the call's value: a small helper kernel is not the work.
SIGNIFICANT_SHARE = 0.10


def kernel_label(name: str) -> str:
    """A kernel's name as a student wrote it: "transpose_padded" for ncu's
    "(anonymous namespace)::transpose_padded(const float *, float *, int, int)"."""
    short = name.replace("(anonymous namespace)::", "")
    short = short.split("(", 1)[0].strip() if "(" in short else short.strip()
    return short.removeprefix("void ").strip() or name


def _too_many_kernels(rows: list[dict[str, Any]], metric: Metric) -> str:
    """Why the call launched more distinct kernels than the entry's max_kernels, or ""."""
    names = parsers.ncu_kernels(rows)
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
    for name, launches in parsers.ncu_by_kernel(rows):
        value = parsers.ncu_aggregate(launches, metric.metric)
        if metric.per:
            weight = parsers.ncu_aggregate(launches, metric.per)
            value = value / weight if value is not None and weight else None
        else:
            weight = parsers.ncu_duration(launches)
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
    return worst["value"]


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


def _counted(metric: str) -> str:
    """What an ncu counter counts, in words, e.g. "shared-memory load" for
    smsp__inst_executed_op_shared_ld.sum (for "nothing to measure" messages)."""
    space = next((f"{key}-memory" for key in ("shared", "global", "local")
                  if f"_{key}" in metric), "")
    m = _COUNTED_OP.search(metric.replace(".", " "))
    op = {"ld": "load", "st": "store", "atom": "atomic", "red": "reduction"}.get(
        m.group(1) if m else "", "access")
    return f"{space} {op}" if space else f"work counted by {metric}"


BENCH_ALTERED = ("its document was altered after the bench ended (or written twice): not "
                 "believed")


def bench_document_problem(text: str) -> str:
    """Why the text read from the bench's pipe is not one document as the harness writes it
    (BENCH_ALTERED: not well-formed JSON, or anything but whitespace after its end), or ""."""
    body = text.lstrip()
    try:
        _doc, end = json.JSONDecoder().raw_decode(body)
    except ValueError:
        return BENCH_ALTERED
    return BENCH_ALTERED if body[end:].strip() else ""


def run_bench(binary: Path, args: list[str], ctx: Context, trusted: bool) -> tuple[
        dict | None, str, sandbox.Outcome]:
    """One bench run; (document, problem, outcome). The document comes through a pipe the
    grader holds (--json /dev/fd/N), read while the bench runs, in a folder of the run's
    own; a document written to besides the harness has BENCH_ALTERED in its problem."""
    with sandbox.Channel() as doc:
        cmd = [str(binary), *args, "--json", doc.path, "--seed", str(ctx.seed)]
        if trusted:  # the reference's bench: the grader's own code, outside the jail
            out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.timeout * 2, env=ctx.env,
                              fresh=True, channels=[doc])
        else:
            out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 2),
                              env=ctx.env, identity=ctx.identity, jail=ctx.jail, fresh=True,
                              channels=[doc], syscalls=seccomp.PROGRAM)
    if out.timed_out or out.returncode != 0:
        return None, f"{binary.name} {out.describe()}", out
    if doc.oversized:
        return None, (f"{binary.name} wrote a document larger than {doc.limit // 2**20} MiB "
                      "(not read)"), out
    text = doc.text()
    if not text.strip():
        return None, f"{binary.name} wrote no readable result (no JSON document)", out
    altered = bench_document_problem(text)
    if altered:
        return None, f"{binary.name}: {altered}", out
    try:
        return parsers.parse_bench_json(text, binary.name), "", out
    except ValueError as err:
        return None, f"{binary.name} wrote no readable result ({err})", out


@dataclass
class BenchRuns:
    """The scored comparison as measured: the reference's bench and the student's, each run
    once (interleaved with the baseline inside), and the harness's verdicts on the student's
    timed runs. `unmeasured`: why the part is "not measured"; `failed`: why the student's
    bench gave no timing. Both documents are kept with every summary recomputed from their
    samples (benchdoc.recompute); `altered` says where the student's disagreed with them."""

    timing: Timing | None = None
    unmeasured: str = ""
    failed: str = ""
    output_problem: str | None = None  # benchdoc.timed_output_problem of the student's run
    launch_problem: str | None = None
    review_problem: str | None = None
    launches: Any = None  # the student's call's launch counts (bench JSON)
    review: Any = None  # the harness's review flag (bench JSON)
    student_doc: dict[str, Any] | None = None  # the student's whole bench JSON ([stretch])
    reference_doc: dict[str, Any] | None = None  # the reference's (its limits and work)
    # Why the student's document is not believed (written to besides the harness, or its
    # figures disagree with its samples): no points, flagged for review.
    altered: str | None = None
    disagreements: list[str] = field(default_factory=list)  # every one found
    # No reference to time against (the student copy has no solutions/): the student's own
    # bench ran for feedback, its figures kept beside a part that is not measured.
    no_reference: bool = False
    note: str = ""  # what the student's bench alone said, added to the speed part's reason


NO_REFERENCE = ("Not measured here: this copy has no reference solution to time your kernel "
                "against, so the speed points are the course grader's to give.")


def read_student(runs: BenchRuns, student: dict[str, Any], comparison: str) -> str | None:
    """The student's bench document into `runs`: its summaries recomputed from the samples
    (only the samples are believed; `altered` says where the document disagreed with them),
    the comparison's timing, and the harness's verdicts on the timed runs. Returns why the
    comparison could not be read, or None."""
    student, runs.disagreements = benchdoc.recompute(student)
    runs.altered = benchdoc.altered_problem(runs.disagreements)
    try:
        comp = parsers.comparison(student, comparison)
    except ValueError as err:
        return str(err)
    timing = runs.timing
    assert timing is not None
    runs.student_doc = student
    timing.student = benchdoc.summary(comp, student)
    timing.student_speedup = benchdoc.number(comp, "speedup", "median")
    runs.output_problem = benchdoc.timed_output_problem(comp)
    runs.launch_problem = benchdoc.launch_problem(comp)
    runs.review_problem = benchdoc.review_problem(comp)
    runs.launches = (comp.get("candidate") or {}).get("launches")
    runs.review = comp.get("review")
    return None


def student_only(perf: Performance, ctx: Context, student_bin: Path) -> BenchRuns:
    """The student's bench alone, where there is no reference (a student copy): never
    points, but the speedup over the baseline and the speed of light on this GPU, in the
    part's reason and details, so a check on a GPU still says how fast the kernel is."""
    runs = BenchRuns(Timing(perf.comparison, perf.bench_args), unmeasured=NO_REFERENCE,
                     no_reference=True)
    student, why, _ = run_bench(student_bin, perf.bench_args, ctx, trusted=False)
    if student is None:
        runs.note = f"Your bench did not finish ({why})."
        return runs
    unreadable = read_student(runs, student, perf.comparison)
    assert runs.timing is not None
    runs.timing.device = student.get("device")
    problem = (unreadable or runs.altered or runs.output_problem or runs.launch_problem
               or runs.review_problem)
    if problem:
        runs.note = f"Your timed run: {problem}"
    elif runs.timing.student_speedup:
        runs.note = (f"On this GPU your kernel ran {runs.timing.student_speedup:.2f}x the "
                     "baseline's speed.")
    return runs


def performance(perf: Performance, ctx: Context) -> BenchRuns:
    """Both benches with [performance].bench_args; the comparison named by the rubric."""
    student_bin, reference_bin = ctx.binary("bench_student"), ctx.binary("bench_solution")
    if student_bin is not None and reference_bin is None and not ctx.has_reference:
        return student_only(perf, ctx, student_bin)
    if student_bin is None or reference_bin is None:
        return BenchRuns(unmeasured="Not measured: the bench was not built.")
    reference, why_ref, _ = run_bench(reference_bin, perf.bench_args, ctx, trusted=True)
    student, why_student, _ = run_bench(student_bin, perf.bench_args, ctx, trusted=False)
    timing = Timing(perf.comparison, perf.bench_args)
    runs = BenchRuns(timing)
    if reference is None:
        runs.unmeasured = f"Not measured: the reference bench did not run ({why_ref})."
        return runs
    reference, ref_disagrees = benchdoc.recompute(reference)
    if ref_disagrees:
        runs.unmeasured = ("Not measured: the reference's own bench document disagrees with "
                           f"its samples ({ref_disagrees[0]}): a grader problem, not yours.")
        return runs
    runs.reference_doc = reference
    try:
        ref_comp = parsers.comparison(reference, perf.comparison)
    except ValueError as err:
        runs.unmeasured = f"Not measured: {err}"
        return runs
    timing.reference = benchdoc.summary(ref_comp, reference)
    timing.device = reference.get("device")
    timing.clocks = reference.get("clocks")
    ref_problem = (benchdoc.timed_output_problem(ref_comp, "the reference's")
                   or benchdoc.review_problem(ref_comp))
    if ref_problem:
        runs.unmeasured = ("Not measured: the reference's own timing could not be trusted on "
                           f"this machine ({ref_problem}).")
        return runs
    if student is None and BENCH_ALTERED in why_student:
        runs.altered = f"your bench's result was not believed: {BENCH_ALTERED}"
        return runs
    if student is None:
        runs.failed = f"your bench did not finish ({why_student})."
        return runs
    unreadable = read_student(runs, student, perf.comparison)
    if unreadable:
        runs.failed = unreadable
        return runs
    timing.reference_speedup = benchdoc.number(ref_comp, "speedup", "median")
    if timing.student_speedup and timing.reference_speedup:
        timing.time_ratio = timing.reference_speedup / timing.student_speedup
    return runs
