"""Memory safety as compute-sanitizer measures it: its runs of the test binaries (one tool
on one binary each, run at the same time), its report read into a SanitizerSummary per tool,
and the part's measurement (SanitizerRuns), scored by parts/memory_safety.py.

The report is text the student's program may have mixed its own output into: only the
lines the tool prefixes with "=========" are read."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import channel, confine, pairs, parallel, sandbox, seccomp
from ..linking import tests_kind
from ..tools import find_tool
from . import REFUSED_RE, Context

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")  # what [memory_safety].tools names
SANITIZER_OPTIONS = {
    "memcheck": ["--tool", "memcheck", "--padding", "32"],
    "racecheck": ["--tool", "racecheck"],
    "synccheck": ["--tool", "synccheck"],
    "initcheck": ["--tool", "initcheck"],
}

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


# A summary line as the tool ends it (not "N errors were not printed", which follows one),
# wherever it starts: a line glued to a partial one the target wrote still counts.
_SUMMARY_ENDS = (re.compile(r"ERROR SUMMARY:\s*[\d,]+\s+errors?\s*$", re.I),
                 re.compile(r"RACECHECK SUMMARY:\s*[\d,]+\s+hazards?\s+displayed", re.I))
FORGED_LOG = ("compute-sanitizer's log holds more than one summary: something besides the "
              "tool wrote into it, so it is not believed")
OVERSIZED_LOG = ("compute-sanitizer's log was larger than the grader reads, so its summary was "
                 "never seen: not believed")
ABNORMAL_END = "compute-sanitizer did not end normally ({}): its log is not believed"


def parse_sanitizer_output(text: str, tool: str) -> SanitizerSummary:
    """The summary of one compute-sanitizer run (`--tool TOOL`), from its output.

    memcheck, synccheck and initcheck end with "ERROR SUMMARY: N errors"; racecheck with
    "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)" (sometimes also an
    ERROR SUMMARY: the larger count is taken). Without a summary line the run did not finish:
    `complete` and `ok` are False and `errors` is the number of reports seen (at least 1)."""
    lines = _tool_lines(text)
    errors: int | None = None
    warnings = 0
    tail = text[-TAIL_CHARS:]
    # The tool prints each summary once, last. Its target may inherit the log's descriptor
    # and write into it: a second summary (a forged one before or after the tool's own, or
    # the tool's own hidden behind a partial line) means the log is not the tool's alone.
    counts = [sum(1 for line in text.splitlines() if pattern.search(line))
              for pattern in _SUMMARY_ENDS]
    if max(counts) > 1:
        return SanitizerSummary(tool, 1, False, [FORGED_LOG], tail, 0, complete=False)
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
    if errors is None:
        messages = blocks[:MAX_MESSAGES]
        messages.append(f"compute-sanitizer ({tool}) printed no summary: the program crashed, "
                        "was killed or timed out under it")
        return SanitizerSummary(tool, max(len(blocks), 1), False, messages, tail, warnings,
                                complete=False)
    messages = blocks[:MAX_MESSAGES] if errors > 0 or warnings > 0 else []
    return SanitizerSummary(tool, errors, errors == 0, messages, tail, warnings)


@dataclass
class SanitizerRuns:
    """Memory safety as measured: one summary per compute-sanitizer tool (its runs of every
    binary with cases in [memory_safety].tests merged), or why nothing was measured."""

    summaries: list[SanitizerSummary] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    unmeasured: str = ""  # the reason, when the part is "not measured"


def memory_safety(tests: str, tools: list[str], ctx: Context,
                  case_binaries: list[tuple[str, str]]) -> SanitizerRuns:
    """Each of `tools` (of TOOLS) runs every binary that has cases `tests` matches. The runs do not
    time anything, so they run at the same time (grader/parallel.py); each has its own log
    and report, named before any starts, and they are read in the order tool by tool,
    binary by binary, as if run one after another."""
    sanitizer = find_tool("compute-sanitizer")
    if not sanitizer:
        return SanitizerRuns(unmeasured="Not measured: compute-sanitizer is not installed "
                             "here, so memory safety earns no points either way.")
    runs = SanitizerRuns(details={"tests": tests})
    planned = [_sanitizer_run(sanitizer, tool, kind, spec, binary, ctx)
               for tool in tools for kind, spec in case_binaries
               if (binary := ctx.binary(tests_kind(kind, ctx.remote is not None))) is not None]
    outcomes = parallel.run_all([functools.partial(_run_sanitizer, p, ctx) for p in planned])
    for tool in tools:
        combined: SanitizerSummary | None = None
        for one, (out, text, oversized) in zip(planned, outcomes):
            if one.tool != tool:
                continue
            if not text.strip() and REFUSED_RE.search(out.output_tail):
                return SanitizerRuns(unmeasured="Not measured: compute-sanitizer refused to "
                                     f"run here ({_first(out.output_tail)}); no points "
                                     "either way.")
            summary = parse_sanitizer_output(text, tool)
            if out.timed_out or (out.signal and summary.complete):
                summary.complete = False
                summary.ok = False
            if one.remote is not None and summary.complete and \
                    (oversized or out.killed_for or out.returncode not in TOOL_EXITS):
                # The tool itself was killed, stopped or flooded: its summary is not its own.
                why = OVERSIZED_LOG if oversized else ABNORMAL_END.format(out.describe())
                summary = SanitizerSummary(tool, max(summary.errors, 1), False, [why],
                                           summary.raw_tail, 0, complete=False)
            combined = summary if combined is None else _merge(combined, summary)
            runs.details[f"{tool}:{one.kind}"] = out.describe()
        if combined is not None:
            runs.summaries.append(combined)
    if not runs.summaries:
        runs.unmeasured = "Not measured: no test binary with the sanitizer cases was built."
    return runs


# How compute-sanitizer ends when it ran the runner to its end: the runner's own status (0;
# 70 after a GPU fault, cml/remote.hpp) or --error-exitcode. Anything else (a signal, 137
# from a SIGKILL its target sent it) means the tool did not finish its log.
TOOL_EXITS = (0, 70, 99)


@dataclass
class _SanitizerRun:
    """One compute-sanitizer invocation: a tool on one binary (or, for a lab whose tests run
    as checker and runner, on the runner that serves the checker `binary`)."""

    tool: str
    kind: str
    sanitizer: str
    binary: Path
    spec: str
    remote: Path | None = None

    def tool_command(self, log: str) -> list[str]:
        return [self.sanitizer, *SANITIZER_OPTIONS.get(self.tool, ["--tool", self.tool]),
                "--error-exitcode", "99", "--log-file", log]

    def tests_args(self, report: str, seed: int) -> list[str]:
        return [self.spec, "-r", "xml", "-o", report, "--rng-seed", str(seed)]

    def command(self, log: channel.Channel, report: str, seed: int) -> list[str]:
        """Its command line, the tool's log written to `log`, the tests' report to `report`;
        the binary starts walled off from the log (grader/confine.py)."""
        return [*self.tool_command(log.path),
                *confine.command([str(self.binary), *self.tests_args(report, seed)],
                                 (log.write_fd,))]

    def runner_command(self, log: channel.Channel) -> list[str]:
        """The tool on the runner, walled off from the log the same way."""
        assert self.remote is not None
        return [*self.tool_command(log.path),
                *confine.command([str(self.remote)], (log.write_fd,))]


def _sanitizer_run(sanitizer: str, tool: str, kind: str, spec: str, binary: Path,
                   ctx: Context) -> _SanitizerRun:
    return _SanitizerRun(tool, kind, sanitizer, binary, spec, ctx.remote)


def _run_sanitizer(one: _SanitizerRun, ctx: Context) -> tuple[sandbox.Outcome, str, bool]:
    """(the outcome, the tool's log). The log comes through a pipe the grader holds, in a
    folder of the run's own: the program under test finds no file of the tool's to rewrite
    and no file an earlier run left. The tests' own report goes to a pipe too (the tool's
    log decides, not the report)."""
    # the time limit is taken when the run starts: what is left of the lab's GPU time then
    env = sandbox.untimed_env(ctx.env)  # nothing is timed under the tool
    with channel.Channel() as log, channel.Channel() as report:
        if one.remote is not None:
            # The tool watches the runner alone; the checker (the tests) runs outside the jail.
            pair = pairs.run_pair([str(one.binary), *one.tests_args(report.path, ctx.seed)],
                                  one.runner_command(log),
                                  cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 3),
                                  env=env, identity=ctx.identity, jail=ctx.jail,
                                  channels=[report], runner_channels=[log],
                                  syscalls=seccomp.TOOL)
            out = pair.runner
            if pair.checker.timed_out and not out.timed_out:
                out = sandbox.Outcome(out.cmd, None, True, pair.checker.seconds,
                                      out.output_tail)
        else:
            out = sandbox.run(one.command(log, report.path, ctx.seed), cwd=ctx.run_dir,
                              timeout=ctx.limit(ctx.timeout * 3), env=env,
                              identity=ctx.identity, jail=ctx.jail, fresh=True,
                              channels=[log, report], syscalls=seccomp.TOOL)
    return out, log.text(), log.oversized


def _merge(a: SanitizerSummary, b: SanitizerSummary) -> SanitizerSummary:
    return SanitizerSummary(a.tool, a.errors + b.errors, a.ok and b.ok,
                                    a.messages + b.messages, b.raw_tail,
                                    getattr(a, "warnings", 0) + getattr(b, "warnings", 0),
                                    getattr(a, "complete", True) and getattr(b, "complete", True))


def _first(text: str) -> str:
    for line in text.splitlines():
        if REFUSED_RE.search(line):
            return line.strip()[:200]
    return text.strip().splitlines()[-1][:200] if text.strip() else "no output"
