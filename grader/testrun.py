"""Runs Catch2 test binaries the way grading needs: reports read from the XML file the
binary is asked to write (never from its output), a timeout per process, and, after a
crash, hang or GPU fault, the cases that did not report re-run one per process so that one
fault costs one case.
"""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox
from .catch_report import CaseResult, parse_catch_xml
from .catch_spec import name_spec, spec_matches
from .result import CRASHED, FAILED, PASSED, TIMEOUT

SKIP = 77  # the test main's "no CUDA device" exit status


@dataclass(frozen=True)
class Case:
    """A test case as the trusted reference binary lists it."""

    name: str
    tags: tuple[str, ...]

    @property
    def hidden(self) -> bool:
        return "hidden" in self.tags

    def matches(self, spec: str) -> bool:
        return spec_matches(spec, self.name, self.tags)


def _tags(text: str) -> tuple[str, ...]:
    return tuple(t.lower() for t in re.findall(r"\[([^\]]+)\]", text))


def parse_listing(text: str) -> list[Case]:
    """The output of `--list-tests` (with `-r xml`): Catch2 3's XML listing, or Catch2 2's
    console listing (names at indent 2, wrapped at indent 4, tags at indent 6)."""
    start = text.find("<MatchingTests")
    if start >= 0:
        end = text.find("</MatchingTests>", start)
        root = ET.fromstring(text[start:end + len("</MatchingTests>")])
        return [Case((tc.findtext("Name") or "").strip(), _tags(tc.findtext("Tags") or ""))
                for tc in root.iter("TestCase")]
    cases: list[Case] = []
    name: list[str] | None = None
    tags = ""
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if not body:
            continue
        if indent == 2:
            if name is not None:
                cases.append(Case(" ".join(name), _tags(tags)))
            name, tags = [body], ""
        elif indent in (4, 5) and name is not None and not tags:
            name.append(body)
        elif indent >= 6 and name is not None:
            tags += body
    if name is not None:
        cases.append(Case(" ".join(name), _tags(tags)))
    return cases


def list_cases(binary: Path, env: dict[str, str], timeout: float = 120) -> list[Case]:
    """Every test case of a trusted binary (the reference's tests), with its tags."""
    proc = subprocess.run([str(binary), "--list-tests", "-r", "xml"], capture_output=True,
                          text=True, timeout=timeout, env=env, errors="replace")
    if proc.returncode not in (0,) and "<MatchingTests" not in proc.stdout:
        # Catch2 2 returns the number of listed cases as its exit status.
        if not proc.stdout.strip():
            raise RuntimeError(f"could not list the test cases of {binary.name}: "
                               f"{proc.stderr.strip()[-300:]}")
    return parse_listing(proc.stdout)


def salvage_report(text: str) -> tuple[list[CaseResult], bool]:
    """The cases of a Catch2 XML report, and whether the report was complete. A report cut
    short by a crash keeps the test cases that finished."""
    try:
        return parse_catch_xml(text), True
    except ValueError:
        pass
    end = text.rfind("</TestCase>")
    if end < 0:
        return [], False
    try:
        cases = parse_catch_xml(text[:end + len("</TestCase>")] + "</Group></Catch>")
    except ValueError:
        return [], False
    return cases, False


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
    """Runs student test binaries in a sandbox, each report in its own file."""

    run_dir: Path
    env: dict[str, str]
    identity: sandbox.Identity | None
    seed: int
    timeout: float
    wrapper: list[str] = field(default_factory=list)  # e.g. compute-sanitizer and its options
    runs: int = 0
    log: list[str] = field(default_factory=list)

    def run_once(self, binary: Path, spec: str) -> tuple[list[CaseResult], bool, sandbox.Outcome]:
        self.runs += 1
        report = self.run_dir / f"report-{self.runs}.xml"
        cmd = [*self.wrapper, str(binary), spec, "-r", "xml", "-o", str(report),
               "--rng-seed", str(self.seed)]
        outcome = sandbox.run(cmd, cwd=self.run_dir, timeout=self.timeout, env=self.env,
                              identity=self.identity)
        try:
            text = report.read_text(errors="replace")
        except OSError:
            text = ""
        cases, complete = salvage_report(text)
        ended_cleanly = not outcome.timed_out and outcome.returncode is not None \
            and outcome.returncode >= 0
        return cases, complete and ended_cleanly, outcome

    def run_layer(self, binary: Path, spec: str, expected: list[Case]) -> tuple[
            dict[str, CaseRun], sandbox.Outcome]:
        """Runs the cases of `binary` matching `spec`; re-runs the expected cases that did
        not report, one per process, after a crash or timeout."""
        cases, clean, outcome = self.run_once(binary, spec)
        found = {c.name: _case_run(c, binary.name) for c in cases if c.name}
        if clean:
            return found, outcome
        self.log.append(f"{binary.name} {spec}: {outcome.describe()}; re-running the "
                        "remaining cases one per process")
        for case in expected:
            if case.name in found:
                continue
            found.update(self.run_alone(binary, case))
        return found, outcome

    def run_alone(self, binary: Path, case: Case) -> dict[str, CaseRun]:
        cases, clean, outcome = self.run_once(binary, name_spec(case.name))
        mine = [c for c in cases if c.name == case.name]
        if mine and clean:
            return {case.name: _case_run(mine[0], binary.name)}
        if not mine and clean:
            return {}  # not in this binary
        status = TIMEOUT if outcome.timed_out else CRASHED
        messages = [f"the test process {outcome.describe()} while running this case"]
        if mine:
            messages += mine[0].messages
        for line in _fault_lines(outcome.output_tail):
            messages.append(line)
        return {case.name: CaseRun(case.name, case.tags, status, messages, outcome.seconds,
                                   binary.name)}


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
