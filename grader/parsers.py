"""Readers for what the grader's tools print: compute-sanitizer reports, Nsight Compute
(ncu) CSV and the bench JSON documents (schema "cml-bench/2", common/src/bench.cpp).

All of them take text the student's program may have mixed its own output into, and
fail with a message that says what was expected rather than with a KeyError.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_SCHEMA = "cml-bench/2"

# --- compute-sanitizer -------------------------------------------------------------------

_PREFIX = re.compile(r"^=========(?: |$)")  # "========= " on every line the tool writes
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*([\d,]+)\s+errors?", re.I)
_RACE_SUMMARY = re.compile(
    r"RACECHECK SUMMARY:\s*([\d,]+)\s+hazards?\s+displayed\s*"
    r"\(\s*([\d,]+)\s+errors?,\s*([\d,]+)\s+warnings?\s*\)", re.I)
_NOT_AN_ERROR = re.compile(
    r"^(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Saved host backtrace"
    r"|Host Frame|Target application returned|Internal Sanitizer|Warning: Found \d+ leak)",
    re.I)
MAX_MESSAGES = 5
MAX_BLOCK_LINES = 8
TAIL_CHARS = 4000


@dataclass
class SanitizerSummary:
    """What one compute-sanitizer tool reported for one run."""

    tool: str  # "memcheck", "racecheck", "synccheck" or "initcheck"
    errors: int  # errors counted by the tool's summary (racecheck: its error hazards)
    ok: bool  # the tool finished and reported no errors
    messages: list[str] = field(default_factory=list)  # the first error reports, prefix removed
    raw_tail: str = ""  # the end of the output, for the details
    warnings: int = 0  # racecheck's warning hazards (do not make `ok` false)
    complete: bool = True  # a summary line was found (False: crashed, killed or timed out)


def _tool_lines(text: str) -> list[str]:
    """The lines compute-sanitizer wrote, without the "=========" prefix."""
    out = []
    for line in text.splitlines():
        m = _PREFIX.match(line)
        if m:
            out.append(line[m.end():].rstrip())
    return out


def _blocks(lines: list[str]) -> list[str]:
    """Error reports: a line starting in column 0 and the indented lines under it, ending
    at an empty line; host backtraces are left out."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    in_backtrace = False
    for line in lines:
        if not line.strip():
            current = None
            in_backtrace = False
            continue
        indented = line[:1] in (" ", "\t")
        stripped = line.strip()
        if not indented:
            in_backtrace = False
            if _NOT_AN_ERROR.match(stripped):
                current = None
                continue
            current = [stripped]
            blocks.append(current)
            continue
        if current is None:
            continue
        if stripped.startswith("Saved host backtrace") or stripped.startswith("Host Frame"):
            in_backtrace = True
        if in_backtrace:
            continue
        if len(current) < MAX_BLOCK_LINES:
            current.append(stripped)
    return ["\n".join(b) for b in blocks]


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_sanitizer_output(text: str, tool: str) -> SanitizerSummary:
    """The summary of one compute-sanitizer run (`--tool TOOL`), from its output.

    memcheck, synccheck and initcheck end with "ERROR SUMMARY: N errors"; racecheck with
    "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)" (sometimes also an
    ERROR SUMMARY: the larger count is taken). Without a summary line the run did not finish:
    `complete` and `ok` are False and `errors` is the number of reports seen (at least 1)."""
    lines = _tool_lines(text)
    errors: int | None = None
    warnings = 0
    for line in lines:
        m = _RACE_SUMMARY.search(line)
        if m:
            errors = max(errors or 0, _int(m.group(2)))
            warnings = max(warnings, _int(m.group(3)))
            continue
        m = _ERROR_SUMMARY.search(line)
        if m:
            errors = max(errors or 0, _int(m.group(1)))
    blocks = _blocks(lines)
    if tool == "racecheck":
        # warnings are reported as blocks too; keep the errors first
        blocks = ([b for b in blocks if not b.lower().startswith("warning")]
                  + [b for b in blocks if b.lower().startswith("warning")])
    tail = text[-TAIL_CHARS:]
    if errors is None:
        messages = blocks[:MAX_MESSAGES]
        messages.append(f"compute-sanitizer ({tool}) printed no summary: the program crashed, "
                        "was killed or timed out under it")
        return SanitizerSummary(tool, max(len(blocks), 1), False, messages, tail, warnings,
                                complete=False)
    messages = blocks[:MAX_MESSAGES] if errors > 0 or warnings > 0 else []
    return SanitizerSummary(tool, errors, errors == 0, messages, tail, warnings)


# --- Nsight Compute CSV -----------------------------------------------------------------

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


def ncu_metric(rows: list[dict[str, Any]], metric: str, kernel_regex: str) -> list[float]:
    """The values of `metric` for every launch whose kernel name matches `kernel_regex`
    (re.search; an empty regex matches all), in launch order, in base units.

    Works on the raw page (one column per metric) and on the details page (one row per
    metric: "Metric Name", "Metric Unit", "Metric Value"). Launches where the value is
    missing or not a number are left out."""
    pattern = re.compile(kernel_regex or "")
    values = []
    for row in rows:
        if not pattern.search(_kernel_name(row)):
            continue
        value = _row_value(row, metric)
        if value is not None:
            values.append(value)
    return values


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
    launch) and ncu's own error and warning lines. The profiled program's output is not
    in it (it goes to the program's standard output), so nothing here is the student's."""

    rows: list[dict[str, Any]]
    errors: list[str]  # "==ERROR==" lines, prefix removed
    warnings: list[str]  # "==WARNING==" lines, prefix removed


def parse_ncu_log(text: str) -> NcuLog:
    """The launches and messages of `ncu --csv --page raw --log-file FILE` output. A run in
    which no kernel was profiled (ncu warns "No kernels were profiled" and prints no table)
    has no rows; that is a result, not an error."""
    errors = [ln.split("==ERROR==", 1)[1].strip() for ln in text.splitlines()
              if ln.lstrip().startswith("==ERROR==")]
    warnings = [ln.split("==WARNING==", 1)[1].strip() for ln in text.splitlines()
                if ln.lstrip().startswith("==WARNING==")]
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


# --- bench JSON --------------------------------------------------------------------------

class BenchError(ValueError):
    """A bench JSON document that is missing, unreadable or not schema cml-bench/2."""


def parse_bench_json(text: str, source: str = "bench output") -> dict[str, Any]:
    """A bench document from its text; validates the parts the grader reads."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise BenchError(f"{source}: not a JSON document ({err})") from err
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
    for i, comp in enumerate(doc["comparisons"]):
        where = f"{source}: comparisons[{i}]"
        if not isinstance(comp, dict) or not isinstance(comp.get("name"), str):
            raise BenchError(f"{where} has no name")
        for side in ("baseline", "candidate"):
            part = comp.get(side)
            if not isinstance(part, dict) or not isinstance(part.get("ms"), dict):
                raise BenchError(f"{where} ('{comp['name']}') has no {side} timing")
            if not isinstance(part["ms"].get("median"), (int, float)):
                raise BenchError(f"{where} ('{comp['name']}') has no {side} median time")
        if not isinstance(comp.get("speedup"), dict) or not isinstance(
                comp["speedup"].get("median"), (int, float)):
            raise BenchError(f"{where} ('{comp['name']}') has no median speedup")
    return doc


def read_bench_json(path: Path | str) -> dict[str, Any]:
    """The bench document written to `path` (--json PATH), validated; raises BenchError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError as err:
        raise BenchError(f"{path.name}: the bench wrote no JSON document") from err
    except OSError as err:
        raise BenchError(f"{path.name}: cannot be read ({err})") from err
    if not text.strip():
        raise BenchError(f"{path.name}: the bench wrote an empty file")
    return parse_bench_json(text, path.name)


def comparison(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """The comparison called `name`; BenchError naming the ones there are when missing."""
    for comp in doc.get("comparisons", []):
        if isinstance(comp, dict) and comp.get("name") == name:
            return comp
    have = ", ".join(repr(c.get("name")) for c in doc.get("comparisons", [])
                     if isinstance(c, dict)) or "none"
    raise BenchError(f"the bench has no comparison '{name}' (it has: {have}); "
                     "check [performance].comparison in grading.toml")


def verification_problem(comp: dict[str, Any]) -> str | None:
    """Why the candidate's timed output was wrong (or unchecked), or None when it passed."""
    v = comp.get("candidate", {}).get("verification") or {}
    if not v.get("checked", False):
        return "the output of the timed runs was not checked"
    if not v.get("passed", False):
        return v.get("message") or "the output of the timed runs was wrong"
    return None
