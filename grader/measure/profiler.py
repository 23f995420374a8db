"""Profiler metrics as Nsight Compute (ncu) measures them: the command of one profiling run,
the lab's one profiler pass over every [[metrics]] entry (one ncu process per profiled run,
each entry reading the launches of its call), and each entry's measurement (MetricRun),
scored by parts/metric.py. What ncu's log says is read by ncu_csv.py; how the
kernels of a call are judged is metric_rules.py's. A machine that cannot measure a metric
(no ncu, counters refused, a metric this GPU's ncu does not know) leaves it not measured."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import channel, confine, sandbox, seccomp
from ..tools import find_tool
from . import REFUSED_RE, Context
from .bench import run_bench
from .metric_rules import Metric, counted, judge_kernels, outlier_review, too_many_kernels
from .ncu_csv import CALL_RANGES, NCU_DURATION, ncu_aggregate, parse_ncu_log, rows_of_call

_UNKNOWN_METRIC_RE = re.compile(r"metric.*(not found|unknown|invalid|not available|not "
                                r"supported)|(failed to find|unknown|invalid) metric",
                                re.IGNORECASE)


def metric_names(metric: Metric) -> list[str]:
    """The ncu metrics one [[metrics]] entry needs."""
    names = [metric.metric] + ([metric.per] if metric.per else [])
    if any(not n.endswith(".sum") for n in names):
        names.append(NCU_DURATION)  # the weights of a non-additive metric's mean
    return names


def ncu_command(ncu: str, metric: Metric, binary: Path, seed: int, log: Path,
                call: str | None = None, names: list[str] | None = None,
                log_fds: tuple[int, ...] = ()) -> list[str]:
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
    program = [str(binary), *args]
    if log_fds:  # the program starts walled off from the log's descriptors (grader/confine.py)
        program = confine.command(program, log_fds)
    return cmd + ["--metrics", ",".join(dict.fromkeys(names)), "--csv", "--page", "raw",
                  "--print-units", "base", "--log-file", str(log), *program]


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
        self.names: dict[tuple[Any, ...], list[str]] = {}
        for e in entries:
            got = self.names.setdefault(self.group(e), [])
            got += [n for n in metric_names(e) if n not in got]
        # key -> (command, result or error)
        self.done: dict[tuple[Any, ...], tuple[str, Any]] = {}

    @staticmethod
    def group(metric: Metric) -> tuple[Any, ...]:
        return (metric.target, tuple(metric.args))


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

    def _profile(ncu: str, metric: Metric, ctx: Context, binary: Path, call: str,
                 details: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
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
    too_many = too_many_kernels(rows, metric)
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
        separate: tuple[list[dict[str, Any]], str] = shared.done[alone][1]
        return separate
    return selected, ""


def _profile(ncu: str, metric: Metric, ctx: Context, binary: Path, call: str,
             details: dict[str, Any],
             names: list[str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """One profiling run: (the launches profiled, why the student's program failed under
    it or ""). Raises _NotMeasured when the machine could not measure."""
    # ncu's log comes through a pipe the grader holds, in a folder of the run's own.
    with channel.Channel() as log:
        cmd = ncu_command(ncu, metric, binary, ctx.seed, Path(log.path), call, names,
                          (log.write_fd,))
        details["commands"].append(" ".join(cmd))
        out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 3),
                          env=sandbox.untimed_env(ctx.env), identity=ctx.identity,
                          jail=ctx.jail, fresh=True, channels=[log], syscalls=seccomp.TOOL)
    if not log.data.strip():
        raise _NotMeasured(f"Not measured: ncu wrote no log ({out.describe()}).")
    if log.oversized:
        return [], ("No metric points, flagged for review: the profiler's log outgrew what "
                    f"the grader keeps ({log.limit // 2**20} MiB): not believed.")
    found = parse_ncu_log(log.text())
    if found.foreign:
        # The program inherits the descriptor ncu logs to: what ncu did not write is the
        # program's, and a log with any of it is not believed.
        return [], ("No metric points, flagged for review: the profiler's log holds what ncu "
                    f"does not write ({found.foreign}): not believed.")
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
    total = ncu_aggregate(rows, metric.metric)
    per = ncu_aggregate(rows, metric.per) if metric.per else 1.0
    if total is None or per is None:
        missing = metric.metric if total is None else metric.per
        raise _NotMeasured(f"Not measured: ncu reported no value of {missing}.")
    if per == 0 and metric.per:  # per is 1 without metric.per
        return None, (f"No {counted(metric.per)} was measured in the profiled call "
                      f"({metric.per} = 0), so there is nothing to judge.")
    return total / per, ""
