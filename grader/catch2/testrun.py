"""Runs Catch2 test binaries the way grading needs: reports read from a pipe the grader
holds, which the binary is told to write its XML report to (never from its output, never
from a file its code could rewrite), each process in a fresh folder of its own, a timeout
per process, and, after a crash, hang or GPU fault, the cases that did not report re-run
one per process so that one fault costs one case. A report written to besides Catch2 (not
well-formed, or anything after its end) is not believed: the run's cases fail.
"""

from __future__ import annotations

import math
import re
import signal
import subprocess
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .. import bwrap, channel, pairs, parallel, sandbox, seccomp
from .report import (ALTERED, ALTERED_MESSAGE, CaseResult, close_cut_report, parse_catch_xml,
                     parse_tags, report_state)
from .spec import name_spec, spec_matches
from ..result import CRASHED, FAILED, PASSED, TIMEOUT

SKIP = 77  # the test main's "no CUDA device" exit status


# The student's test binaries, public then hidden: Case.runs_in says which runs a case.
TEST_KINDS = ("tests_student", "hidden_student")


@dataclass(frozen=True)
class Case:
    """A test case as the trusted reference binary lists it."""

    name: str
    tags: tuple[str, ...]

    @property
    def hidden(self) -> bool:
        return "hidden" in self.tags

    def runs_in(self, kind: str) -> bool:
        """Whether the test executable of `kind` (tests_student, hidden_student) runs it:
        the hidden binary runs the hidden cases, the public one the others."""
        return self.hidden == (kind == "hidden_student")

    def matches(self, spec: str) -> bool:
        return spec_matches(spec, self.name, self.tags)


# Catch2 2's console listing: a header, the cases, then "N test cases" (or "N matching test
# cases") and an empty line, all at indent 0.
_LISTING_FOOTER = re.compile(r"\d+ (matching )?test cases?")


def parse_listing(text: str) -> list[Case]:
    """The test cases a binary lists, with their tags: Catch2 3's XML listing (`--list-tests
    -r xml`), or what Catch2 2 prints for `--list-tests --list-test-names-only`: its console
    listing (names at indent 2, tags at indent 6) and then every name again, raw, one a line.

    The console listing wraps a long name onto lines at indent 4, breaking at a space (which
    it drops), after a hyphen or before a bracket (which it keeps), so its lines cannot be
    glued back into the name. The names are taken from the raw list; each takes the tags of
    the console entry that is the same text once whitespace is ignored (the two lists come
    from one process, in one order). Raises ValueError when the text is not a listing or
    the two lists do not pair up."""
    start = text.find("<MatchingTests")
    if start >= 0:
        end = text.find("</MatchingTests>", start)
        if end < 0:
            raise ValueError("the XML listing of test cases is cut short")
        try:
            root = ET.fromstring(text[start:end + len("</MatchingTests>")])
        except ET.ParseError as err:
            raise ValueError(f"the XML listing of test cases is not well-formed: {err}") \
                from err
        return [Case((tc.findtext("Name") or "").strip(), parse_tags(tc.findtext("Tags") or ""))
                for tc in root.iter("TestCase")]

    lines = text.splitlines()
    footer = next((i for i, line in enumerate(lines) if _LISTING_FOOTER.fullmatch(line)), None)
    if footer is None:
        raise ValueError("not a Catch2 test listing (no \"N test cases\" line)")
    entries = _console_entries(lines[:footer])
    raw_names = [line.strip() for line in lines[footer + 1:] if line.strip()]
    used = [False] * len(entries)
    cases: list[Case] = []
    for raw in raw_names:
        # Catch2 2 quotes a name that starts with "#" (a tag alias otherwise).
        candidates = [raw[1:-1], raw] if raw.startswith('"#') and raw.endswith('"') else [raw]
        hit = next(((i, name) for name in candidates for i, (wrapped, _) in enumerate(entries)
                    if not used[i] and _wrapped_as(name, wrapped)), None)
        if hit is None:
            raise ValueError(f"the test case {raw!r} is not in the console listing")
        i, name = hit
        used[i] = True
        cases.append(Case(name, parse_tags(entries[i][1])))
    left = [" ".join(wrapped) for (wrapped, _), u in zip(entries, used) if not u]
    if left:
        raise ValueError(f"{len(left)} listed test case(s) have no raw name (was "
                         f"--list-test-names-only given?), e.g. {left[0]!r}")
    return cases


def _console_entries(lines: list[str]) -> list[tuple[list[str], str]]:
    """(the lines of the name, the tags) of each case of Catch2 2's console listing."""
    entries: list[tuple[list[str], str]] = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if not body or indent == 0:
            continue
        if indent == 2:
            entries.append(([body], ""))
        elif indent < 6 and entries and not entries[-1][1]:
            entries[-1][0].append(body)
        elif indent >= 6 and entries:
            entries[-1] = (entries[-1][0], entries[-1][1] + body)
    return entries


def _wrapped_as(name: str, wrapped: list[str]) -> bool:
    """Whether `wrapped` (a console entry's lines) is `name` wrapped, whitespace ignored. A
    word too long for a line is split with a "-" that is not in the name; both readings of
    a line's final "-" are tried."""
    target = "".join(name.split())
    pieces = ["".join(line.split()) for line in wrapped]

    def fits(at: int, i: int) -> bool:
        if i == len(pieces):
            return at == len(target)
        piece = pieces[i]
        if target.startswith(piece, at) and fits(at + len(piece), i + 1):
            return True
        return (i + 1 < len(pieces) and piece.endswith("-")
                and target.startswith(piece[:-1], at) and fits(at + len(piece) - 1, i + 1))

    return fits(0, 0)


def _list(binary: Path, env: dict[str, str], timeout: float, *flags: str) -> str:
    try:
        proc = subprocess.run([str(binary), *flags], capture_output=True, text=True,
                              timeout=timeout, env=env, errors="replace")
    except (OSError, subprocess.SubprocessError) as err:
        raise RuntimeError(f"could not list the test cases of {binary.name}: {err}") from err
    # Catch2 2 exits with the number of cases listed, Catch2 3 with 0.
    if not proc.stdout.strip():
        raise RuntimeError(f"could not list the test cases of {binary.name} (exit status "
                           f"{proc.returncode}): {proc.stderr.strip()[-300:]}")
    return proc.stdout


def list_cases(binary: Path, env: dict[str, str], timeout: float = 120) -> list[Case]:
    """Every test case of a trusted binary (the reference's tests), with its tags."""
    text = _list(binary, env, timeout, "--list-tests", "-r", "xml")
    if "<MatchingTests" not in text:
        # Catch2 2 lists on the console whatever the reporter, wrapping long names; it
        # prints them raw too, in the same run, when asked for both lists.
        text = _list(binary, env, timeout, "--list-tests", "--list-test-names-only")
    try:
        return parse_listing(text)
    except ValueError as err:
        raise RuntimeError(f"could not list the test cases of {binary.name}: {err}") from err


def salvage_report(text: str) -> tuple[list[CaseResult], bool]:
    """The cases of a Catch2 XML report, and whether the report was complete. A report cut
    short by a crash or a hang keeps the test cases that finished (Catch2 2 or 3: the cut
    report is closed by the elements it opened)."""
    try:
        return parse_catch_xml(text), True
    except ValueError:
        pass
    closed = close_cut_report(text)
    if closed is None:
        return [], False
    try:
        return parse_catch_xml(closed), False
    except ValueError:
        return [], False


@dataclass
class CaseRun:
    """How one test case went when graded."""

    name: str
    tags: tuple[str, ...]
    status: str  # PASSED, FAILED, CRASHED, TIMEOUT
    messages: list[str] = field(default_factory=list)
    seconds: float | None = None
    binary: str = ""


@dataclass
class Runner:
    """Runs student test binaries in a sandbox, each process with its own folder and
    report pipe."""

    run_dir: Path
    env: dict[str, str]
    identity: sandbox.Identity | None
    seed: int
    timeout: float
    wrapper: list[str] = field(default_factory=list)  # e.g. compute-sanitizer and its options
    jail: bwrap.Jail | None = None  # what the binaries see (grader/bwrap.py)
    # The runner of the student's object: when set, each binary is a checker, run outside
    # the jail, whose every call into the lab's interface this runner carries out in it
    # (pairs.run_pair); the wrapper then applies to the runner.
    remote: Path | None = None
    deadline: float = math.inf  # time.monotonic() after which nothing more is started
    runs: int = 0
    log: list[str] = field(default_factory=list)
    # One Runner is one thread's; set `stop` to have the next process not start
    # (parallel.Stopped is raised instead)
    stop: threading.Event | None = None

    def run_once(self, binary: Path, spec: str) -> tuple[list[CaseResult], bool,
                                                          sandbox.Outcome, str]:
        """One process: (its cases, whether the report was complete and the process ended
        cleanly, the outcome, why the report is not believed or ""). The report comes
        through a pipe the grader holds (channel.Channel), in a folder of the process's own."""
        parallel.check(self.stop)
        self.runs += 1
        timeout = max(1.0, min(self.timeout, self.deadline - time.monotonic()))
        syscalls = seccomp.TOOL if self.wrapper else seccomp.PROGRAM
        with channel.Channel() as report:
            args = [spec, "-r", "xml", "-o", report.path, "--rng-seed", str(self.seed),
                    "--durations", "yes"]  # each case's time
            if self.remote is not None:
                pair = pairs.run_pair([str(binary), *args], [*self.wrapper, str(self.remote)],
                                      cwd=self.run_dir, timeout=timeout, env=self.env,
                                      identity=self.identity, jail=self.jail,
                                      channels=[report], syscalls=syscalls)
                outcome = pair_outcome(pair)
            else:
                outcome = sandbox.run([*self.wrapper, str(binary), *args], cwd=self.run_dir,
                                      timeout=timeout, env=self.env, identity=self.identity,
                                      jail=self.jail, fresh=True, channels=[report],
                                      syscalls=syscalls)
        if report.oversized:
            return [], False, outcome, (f"the test report was larger than "
                                        f"{report.limit // 2**20} MiB: not read")
        text = report.text()
        if report_state(text) == ALTERED:
            return [], False, outcome, ALTERED_MESSAGE
        cases, complete = salvage_report(text)
        ended_cleanly = not outcome.timed_out and outcome.returncode is not None \
            and outcome.returncode >= 0
        return cases, complete and ended_cleanly, outcome, ""

    def run_layer(self, binary: Path, spec: str, expected: list[Case]) -> tuple[
            dict[str, CaseRun], sandbox.Outcome]:
        """Runs the cases of `binary` matching `spec`; re-runs the expected cases that did
        not report, one per process, after a crash or timeout."""
        cases, clean, outcome, refused = self.run_once(binary, spec)
        if refused:
            # Every case of the run fails: a report that was tampered with is not re-run
            # (the same code would write it again).
            self.log.append(f"{binary.name} {spec}: {refused}")
            return {c.name: CaseRun(c.name, c.tags, FAILED, [refused], None, binary.name)
                    for c in expected}, outcome
        found = {c.name: _case_run(c, binary.name) for c in cases if c.name}
        if clean:
            return found, outcome
        self.log.append(f"{binary.name} {spec}: {outcome.describe()}; re-running the "
                        "remaining cases one per process")
        for case in expected:
            if case.name in found:
                continue
            if time.monotonic() >= self.deadline:
                # A submission that hangs case after case cannot hold the machine (and a
                # batch's GPU lock) for cases x timeout: what is left is not run.
                found[case.name] = CaseRun(case.name, case.tags, TIMEOUT, [
                    "not run: the lab's time limit for running tests ran out (earlier cases "
                    "hung or crashed)"], 0.0, binary.name)
                continue
            found.update(self.run_alone(binary, case))
        return found, outcome

    def run_alone(self, binary: Path, case: Case) -> dict[str, CaseRun]:
        cases, clean, outcome, refused = self.run_once(binary, name_spec(case.name))
        if refused:
            return {case.name: CaseRun(case.name, case.tags, FAILED, [refused],
                                       outcome.seconds, binary.name)}
        mine = [c for c in cases if c.name == case.name]
        if mine and clean:
            return {case.name: _case_run(mine[0], binary.name)}
        if not mine and clean:
            return {}  # not in this binary
        status = TIMEOUT if outcome.timed_out else CRASHED
        messages = [ended_early(outcome)]
        if mine:
            messages += mine[0].messages
        for line in _fault_lines(outcome.output_tail):
            messages.append(line)
        return {case.name: CaseRun(case.name, case.tags, status, messages, outcome.seconds,
                                   binary.name)}


# The checker's exit status when its runner was gone before a call (cml/remote.hpp): the
# report stops there and the cases after it re-run, each with a runner of its own.
RUNNER_GONE = 75
# The runner's exit status after a call left its GPU context unusable.
CONTEXT_LOST = 70


def pair_outcome(pair: pairs.PairOutcome) -> sandbox.Outcome:
    """One outcome for a checker and its runner, as a student reads it: the checker's while
    the runner ended as it should (at the end of the run), else the runner's (its crash, exit,
    time or memory is what ended the run); the output is both's, the runner's last."""
    checker, runner = pair.checker, pair.runner
    output = (checker.output_tail.rstrip() + "\n" + runner.output_tail).strip()
    runner_failed = runner.timed_out or runner.killed_for is not None or \
        (runner.returncode not in (0, None) and runner.returncode != CONTEXT_LOST)
    if runner_failed and not checker.timed_out:
        return sandbox.Outcome(runner.cmd, runner.returncode, runner.timed_out,
                               checker.seconds, output, runner.killed_for)
    if checker.returncode == RUNNER_GONE:
        # the runner ended after a GPU fault (the case that caused it failed with the error);
        # the checker stopped at the next call so that the rest re-run, each in a new runner
        return sandbox.Outcome(checker.cmd, None, False, checker.seconds, output,
                               "ended after a GPU fault in an earlier case")
    return sandbox.Outcome(checker.cmd, checker.returncode, checker.timed_out,
                           checker.seconds, output, checker.killed_for)


def ended_early(outcome: sandbox.Outcome) -> str:
    """What a student reads when the process ended before the case it ran reported: a
    case that does not finish fails, whatever the exit status (exit(0) mid-case included),
    and only that case (the others run each in a process of their own)."""
    if outcome.timed_out or outcome.killed_for or \
            (outcome.signal and outcome.signal != signal.SIGABRT):
        return f"the test process {outcome.describe()} while running this case"
    if outcome.signal == signal.SIGABRT:
        return ("the process ended (SIGABRT) while this case ran: std::abort, a failed host "
                "assert or an uncaught exception in a destructor or a noexcept function ends "
                "it so; throw an exception or return an error instead, and a failing check "
                "costs only that check")
    return (f"the process ended (exit status {outcome.returncode}) while this case ran, "
            "before the case finished: your code called exit, quick_exit or _Exit; throw "
            "an exception or return an error instead, and a failing check costs only that "
            "check")


def _case_run(c: CaseResult, binary: str) -> CaseRun:
    return CaseRun(c.name, tuple(c.tags), PASSED if c.passed else FAILED, c.messages,
                   c.seconds, binary)


_FAULT_RE = re.compile(r"(illegal (memory )?address|unspecified launch failure|CUDA error|"
                       r"misaligned address|out of memory|Segmentation|FatalErrorCondition)",
                       re.IGNORECASE)


def _fault_lines(tail: str) -> list[str]:
    """Lines that name a GPU or process fault, from the end of a crashed process's output.
    Shown to the student as context only; never used to decide a result."""
    return [ln.strip()[:300] for ln in tail.splitlines() if _FAULT_RE.search(ln)][:3]
