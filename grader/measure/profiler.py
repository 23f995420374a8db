"""Profiler metrics as Nsight Compute (ncu) measures them: the command of one profiling run,
its CSV log read into launches (rows), the lab's one profiler pass over every [[metrics]]
entry, and each entry's value judged kernel by kernel (MetricRun), scored by
scoring.metric_part.

ncu's log holds only ncu's lines (the profiled program writes elsewhere); values stay the
strings ncu wrote until read with `ncu_number`, in base units."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import confine, sandbox, seccomp
from ..rubric import Metric
from ..tools import find_tool
from . import REFUSED_RE, Context
from .bench import run_bench

# --- reading its CSV -----------------------------------------------------------------------

_KERNEL_COLUMNS = ("Kernel Name", "Function Name", "Demangled Name", "Name")
UNITS_KEY = "_units"  # each row's column -> unit map (shared by the rows of one table)
_SCALE = {
    # unit -> (base unit, factor)
    "byte": ("byte", 1.0), "Kbyte": ("byte", 1e3), "Mbyte": ("byte", 1e6),
    "Gbyte": ("byte", 1e9), "Tbyte": ("byte", 1e12),
    "KB": ("byte", 1e3), "MB": ("byte", 1e6), "GB": ("byte", 1e9),
    "byte/second": ("byte/second", 1.0), "Kbyte/second": ("byte/second", 1e3),
    "Mbyte/second": ("byte/second", 1e6), "Gbyte/second": ("byte/second", 1e9),
    "Tbyte/second": ("byte/second", 1e12),
    "B/s": ("byte/second", 1.0), "KB/s": ("byte/second", 1e3), "MB/s": ("byte/second", 1e6),
    "GB/s": ("byte/second", 1e9), "TB/s": ("byte/second", 1e12),
    "nsecond": ("nsecond", 1.0), "usecond": ("nsecond", 1e3), "msecond": ("nsecond", 1e6),
    "second": ("nsecond", 1e9), "ns": ("nsecond", 1.0), "us": ("nsecond", 1e3),
    "ms": ("nsecond", 1e6), "s": ("nsecond", 1e9),
    "hz": ("hz", 1.0), "Khz": ("hz", 1e3), "Mhz": ("hz", 1e6), "Ghz": ("hz", 1e9),
    "Hz": ("hz", 1.0), "KHz": ("hz", 1e3), "MHz": ("hz", 1e6), "GHz": ("hz", 1e9),
    "cycle/nsecond": ("cycle/nsecond", 1.0), "cycle/usecond": ("cycle/nsecond", 1e-3),
}
_COUNT_PREFIX = re.compile(r"^([KMG])(inst|cycle|request|sector|warp|thread|block|byte)s?$")


class NcuError(ValueError):
    """ncu output that holds no table of results."""


def _csv_rows(lines: list[str]) -> list[list[str]]:
    return list(csv.reader(io.StringIO("\n".join(lines))))


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """The rows of `ncu --csv` output (raw or details page), one dict per CSV row.

    Lines before the header (ncu's "==PROF==" messages, the program's own output) are
    skipped. Values stay strings as ncu wrote them (use `ncu_number` to read one); a units
    row right under the header (raw page, or --print-units) is not a row: each row carries
    the column -> unit map under the key "_units". Raises NcuError when no table is found."""
    lines = text.splitlines()
    header_at = None
    for i, line in enumerate(lines):
        s = line.lstrip()
        if s.startswith('"ID"') or s.startswith("ID,"):
            header_at = i
            break
    if header_at is None:
        problem = next((ln.strip() for ln in lines if "==ERROR==" in ln or "==WARNING==" in ln),
                       "")
        raise NcuError("no ncu CSV table in the output (expected a header row starting with "
                       "\"ID\")" + (f"; ncu said: {problem}" if problem else ""))
    table = [ln for ln in lines[header_at:] if ln.strip() and not ln.startswith("==")]
    rows = _csv_rows(table)
    header = rows[0]
    units: dict[str, str] = {}
    body = rows[1:]
    if body and _is_units_row(header, body[0]):
        units = {h: u for h, u in zip(header, body[0]) if u}
        body = body[1:]
    out = []
    for raw in body:
        if len(raw) != len(header):
            continue  # a line of program output that happens to contain commas
        row: dict[str, Any] = dict(zip(header, raw))
        row[UNITS_KEY] = units
        out.append(row)
    return out


def _is_units_row(header: list[str], row: list[str]) -> bool:
    if len(row) != len(header) or not header:
        return False
    first = row[0].strip()
    if first and not first.isalpha():  # an ID (a number) means it is data
        return False
    return not any(row[i].strip() for i, h in enumerate(header) if h in _KERNEL_COLUMNS)


def ncu_number(text: str, unit: str = "") -> float | None:
    """A value as ncu prints it ("1,234,567", "85.31", "n/a") in base units (bytes,
    nanoseconds, hertz, ...); None when it is not a number."""
    s = str(text).strip().replace(",", "").replace("\u202f", "").replace(" ", "")
    if s.startswith("(!)"):
        s = s[3:]
    try:
        value = float(s)
    except ValueError:
        return None
    unit = (unit or "").strip()
    if unit in _SCALE:
        value *= _SCALE[unit][1]
    else:
        m = _COUNT_PREFIX.match(unit)
        if m:
            value *= {"K": 1e3, "M": 1e6, "G": 1e9}[m.group(1)]
    return value


def _kernel_name(row: dict[str, Any]) -> str:
    for col in _KERNEL_COLUMNS:
        if col in row and row[col]:
            return str(row[col])
    return ""


def _row_value(row: dict[str, Any], metric: str) -> float | None:
    """`metric` of one launch in base units; None when the row does not hold it as a number.
    A raw-page row has one column per metric; a details-page row holds one metric
    ("Metric Name", "Metric Unit", "Metric Value")."""
    if "Metric Name" in row and "Metric Value" in row:
        if row["Metric Name"] != metric:
            return None
        return ncu_number(row["Metric Value"], row.get("Metric Unit", ""))
    if metric in row:
        return ncu_number(row[metric], row.get(UNITS_KEY, {}).get(metric, ""))
    return None


def ncu_kernels(rows: list[dict[str, Any]]) -> list[str]:
    """The distinct kernel names in the rows, in order (for "no kernel matched" messages)."""
    seen: list[str] = []
    for row in rows:
        name = _kernel_name(row)
        if name and name not in seen:
            seen.append(name)
    return seen


NCU_DURATION = "gpu__time_duration.sum"  # the weight of a launch in a non-additive metric


def ncu_by_kernel(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The launches grouped by kernel name: (name, its launches) in the order of each
    kernel's first launch."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(_kernel_name(row), []).append(row)
    return list(groups.items())


def ncu_duration(rows: list[dict[str, Any]]) -> float | None:
    """The launches' summed duration (ns); None unless every launch has one above 0."""
    times = [_row_value(row, NCU_DURATION) for row in rows]
    if not times or any(t is None or t <= 0 for t in times):
        return None
    return sum(t for t in times if t is not None)


@dataclass
class NcuLog:
    """What one profiling run wrote to its --log-file: the raw page (one row per profiled
    launch) and ncu's own error and warning lines. The profiled program's output goes to its
    standard output, not here; but the program inherits the descriptor ncu logs to, so a log
    is believed only in the shape ncu writes it (`foreign` says why not)."""

    rows: list[dict[str, Any]]
    errors: list[str]  # "==ERROR==" lines, prefix removed
    warnings: list[str]  # "==WARNING==" lines, prefix removed
    foreign: str = ""  # why the log holds something ncu does not write ("": nothing)


_NO_KERNELS = "No kernels were profiled"


def _is_header(line: str) -> bool:
    s = line.lstrip()
    return s.startswith('"ID"') or s.startswith("ID,")


def foreign_lines(text: str) -> str:
    """Why `text` is not a log as `ncu --csv --page raw --log-file` writes it, or "": ncu
    writes its "==" lines, then at most one table (one header row, each row one line with
    the header's columns), and no table when it says no kernel was profiled. A table the
    program wrote ahead of ncu's makes two; one glued to ncu's, rows of the wrong width."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    headers = [i for i, ln in enumerate(lines) if _is_header(ln)]
    if len(headers) > 1:
        return f"it holds {len(headers)} tables where ncu writes one"
    start = headers[0] if headers else len(lines)
    stray = next((ln for ln in lines[:start] if not ln.lstrip().startswith("==")), None)
    if stray is not None:
        return f"a line ncu does not write: {stray.strip()[:80]!r}"
    if not headers:
        return ""
    if any(_NO_KERNELS in ln for ln in lines if ln.lstrip().startswith("==")):
        return "a table beside ncu's own word that no kernel was profiled"
    width = len(next(csv.reader([lines[start]])))
    for ln in lines[start + 1:]:
        if ln.lstrip().startswith("=="):
            continue
        records = list(csv.reader(io.StringIO(ln + "\n")))
        if len(records) != 1 or len(records[0]) != width:
            return f"a row that is not one of the table's: {ln.strip()[:80]!r}"
    return ""


def parse_ncu_log(text: str) -> NcuLog:
    """The launches and messages of `ncu --csv --page raw --log-file FILE` output. A run in
    which no kernel was profiled (ncu warns "No kernels were profiled" and prints no table)
    has no rows; that is a result, not an error. A log not in ncu's shape (foreign_lines)
    has no rows and says why in `foreign`."""
    errors = [ln.split("==ERROR==", 1)[1].strip() for ln in text.splitlines()
              if ln.lstrip().startswith("==ERROR==")]
    warnings = [ln.split("==WARNING==", 1)[1].strip() for ln in text.splitlines()
                if ln.lstrip().startswith("==WARNING==")]
    foreign = foreign_lines(text)
    if foreign:
        return NcuLog([], errors, warnings, foreign)
    try:
        rows = parse_ncu_csv(text)
    except NcuError:
        rows = []
    return NcuLog(rows, errors, warnings)


def ncu_aggregate(rows: list[dict[str, Any]], metric: str) -> float | None:
    """`metric` over every launch in `rows`, as one value for all of them together: the sum
    for a counter (a name ending in ".sum"); for anything else (an average, a percentage, a
    ratio) the mean over the launches weighted by their duration (gpu__time_duration.sum,
    when every launch has one), so a short helper kernel weighs little. None when no launch
    reported the metric as a number."""
    pairs = [(v, _row_value(row, NCU_DURATION)) for row in rows
             if (v := _row_value(row, metric)) is not None]
    if not pairs:
        return None
    if metric.endswith(".sum"):
        return sum(v for v, _ in pairs)
    weights = [w for _, w in pairs if w is not None and w > 0]
    if len(weights) == len(pairs):
        return sum(v * w for (v, _), w in zip(pairs, weights)) / sum(weights)
    return sum(v for v, _ in pairs) / len(pairs)


# --- the metric runs ----------------------------------------------------------------------

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
        cmd = ncu_command(ncu, metric, binary, ctx.seed, Path(log.path), call, names,
                          (log.write_fd,))
        details["commands"].append(" ".join(cmd))
        out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 3),
                          env=ctx.env, identity=ctx.identity, jail=ctx.jail, fresh=True,
                          channels=[log], syscalls=seccomp.TOOL)
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
        return None, (f"No {_counted(metric.per)} was measured in the profiled call "
                      f"({metric.per} = 0), so there is nothing to judge.")
    return total / per, ""


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


def _too_many_kernels(rows: list[dict[str, Any]], metric: Metric) -> str:
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
