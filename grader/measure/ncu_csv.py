"""Nsight Compute's (ncu's) log read: `ncu --csv --page raw --log-file` output into one row
per profiled launch (`parse_ncu_log`, refusing a log not in the shape ncu writes it), values
in base units (`ncu_number`), a metric over a set of launches (`ncu_aggregate`), the launches
grouped by kernel, and the launches of one call of a comparison told apart by the NVTX ranges
ncu records around each (`rows_of_call`). Functions of text and rows: nothing here runs ncu
(grader/measure/profiler.py does).

ncu's log holds only ncu's lines (the profiled program writes elsewhere); values stay the
strings ncu wrote until read with `ncu_number`, in base units."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Any

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


# The bench marks each call of an interleaved comparison with an NVTX push/pop range: the
# student's call and the given baseline's. A metric measures the kernels launched inside one
# of them, whatever their names; the other range is excluded, so a range pushed inside the
# student's call cannot pass the student's kernels off as the baseline's.
CALL_RANGES = {"candidate": "cml:candidate", "baseline": "cml:baseline"}


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
