"""What every format shows the same way: points, statuses, reasons, the scored rows of a
lab and its timing figures, all read from one GradeResult."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import sys
import textwrap
import threading
from dataclasses import dataclass
from typing import Iterator, TextIO, cast

from ..measure.floor import SpeedOfLight
from ..parts import correctness, performance
from ..parts.kinds import label
from ..result import (CRASHED, ERROR, FAILED, GRADED, NOT_GRADED, NOT_MEASURED, NOT_RUN,
                      PASSED, REVIEW, TIMEOUT, GradeResult, LabResult, PartResult,
                      TestResult)

# Item.outcome
PASS, FAIL, SKIP, FLAG = "pass", "fail", "skip", "review"
EPS = 1e-6

STATUS_WORDS = {
    GRADED: "graded", NOT_GRADED: "not graded", NOT_MEASURED: "not measured",
    REVIEW: "flagged for review",
}
TEST_WORDS = {
    PASSED: "passed", FAILED: "failed", ERROR: "error", TIMEOUT: "timed out",
    CRASHED: "crashed", NOT_RUN: "not run",
}


_ADDRESS = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|[\w.-]+@[\w.-]+:)")


def submission_name(result: GradeResult) -> str:
    """The submission as its student knows it, for every text a student sees: a folder's or
    a file's name, never where it lies on the grader's machine ("/tmp/subs/alice" is
    "alice"); a repository's address ("https://…", "git@host:…") as it was given."""
    given = str(result.submission or "")
    if _ADDRESS.match(given):
        return given
    name = given.rstrip("/").rsplit("/", 1)[-1]
    return name or given


def grader_problems(result: GradeResult) -> list[str]:
    """result.errors as a student is shown them: the submission's path named as
    submission_name names it."""
    given = str(result.submission or "").rstrip("/")
    if not given.startswith("/"):
        return list(result.errors)
    return [e.replace(given, submission_name(result)) for e in result.errors]


def fmt_points(x: float) -> str:
    """Points without noise: 25, 12.5, 8.33."""
    x = round(float(x), 2) + 0.0
    return f"{x:g}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}".rstrip("0").rstrip(".")


def lab_number(lab: LabResult) -> str:
    return lab.lab[:2] if lab.lab[:2].isdigit() else lab.lab


def part_outcome(part: PartResult) -> str:
    if part.status in (NOT_GRADED, NOT_MEASURED):
        return SKIP
    offered = part.details.get("bonus") if isinstance(part.details, dict) else None
    if isinstance(offered, (int, float)):  # a bonus: not doing it costs nothing
        return PASS if part.points >= offered - EPS else SKIP
    if part.status == REVIEW:
        return FLAG
    if part.max_points > 0:
        return PASS if part.points >= part.max_points - EPS else FAIL
    return FAIL if part.reason else PASS  # build, static checks: 0 / 0 points


def test_outcome(test: TestResult) -> str:
    if test.status == PASSED:
        return PASS
    if test.status == NOT_RUN:
        return SKIP
    return FAIL


def part_reason(part: PartResult) -> str:
    """Why a part earned less than full marks (or was not graded); "" when full."""
    if part.reason:
        return part.reason.strip()
    if part.status == NOT_GRADED:
        return "Not graded."
    if part.status == NOT_MEASURED:
        return "Not measured."
    if part.status == REVIEW:
        return "Flagged for review."
    if part.points < part.max_points - EPS:
        return f"{fmt_points(part.points)} of {fmt_points(part.max_points)} points."
    return ""


def part_speed_of_light(part: PartResult) -> SpeedOfLight | None:
    """The speed-of-light record a performance part keeps in its details (grader/scoring.py),
    or None: another part, no timing believed, or a result without one."""
    if part.kind != performance.KIND or not isinstance(part.details, dict):
        return None
    return SpeedOfLight.from_dict(part.details.get("speed_of_light"))


def speed_of_light(lab: LabResult) -> SpeedOfLight | None:
    """The lab's speed-of-light record: its scored comparison's, from the first performance
    part that keeps one."""
    return next((sol for sol in map(part_speed_of_light, lab.parts) if sol is not None), None)


def lab_reason(lab: LabResult, limit: int = 160) -> str:
    """One sentence for a lab row: the first reason among the parts that lost points (cut to
    `limit` characters; 0: whole)."""
    reasons = [part_reason(p) for p in lab.parts
               if part_outcome(p) != PASS and part_reason(p)]
    if not reasons and lab.points < lab.max_points - EPS:
        reasons = ["No part of this lab was graded."]
    if not reasons:
        return ""
    first = one_line(reasons[0], limit)
    return first + (f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else "")


def terminal_width(width: int | None = None) -> int:
    """The columns to wrap to: `width`, else the terminal's (COLUMNS, else the terminal's
    size), else 120 when the output is no terminal."""
    return width or shutil.get_terminal_size((120, 24)).columns


def wrap(text: str, first: str, rest: str, width: int | None = None) -> list[str]:
    """`text` on lines of at most `width` columns (terminal_width), the first after
    `first`, the others after `rest` (both plain text: their widths are counted), broken
    only between words: a word longer than a line (a path) stays whole on a line of its
    own, never cut. A `first` too long to leave 20 columns (a metric's whole name before
    its reason) is wrapped as words of the text, after its own indentation."""
    columns = terminal_width(width)
    text = " ".join(str(text).split())
    if len(first) + 20 > columns and first.strip():
        indent = first[:len(first) - len(first.lstrip())]
        first, text = indent, f"{first.strip()} {text}".strip()
    columns = max(columns, max(len(first), len(rest)) + 20)
    return textwrap.wrap(text, columns, initial_indent=first,
                         subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False) or [first.rstrip()]


# Where a long line of a command's text goes on under itself: after its indentation and a
# leading mark set off by two spaces (doctor's "  ok    ", list's "     10  ") or a bullet.
_HANG = re.compile(r"\s*(?:[-*] |\S{1,8} {2,})?")
_ESCAPES = re.compile("\033\\[[0-9;]*m")  # a terminal's colours (exports/table.py)


def fit(line: str, width: int | None = None) -> list[str]:
    """One line of a command's plain text (doctor, list, release) on lines of at most
    `width` columns (terminal_width), broken between words, each further line indented
    under the text after the line's leading mark (_HANG), or by two columns."""
    columns = terminal_width(width)
    if len(_ESCAPES.sub("", line)) <= columns:  # the table's colours take no columns
        return [line]
    found = _HANG.match(line)
    lead = found.group(0) if found else ""
    if len(lead) + 20 > columns:
        lead = line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line[len(lead):], columns, initial_indent=lead,
                         subsequent_indent=" " * max(len(lead), 2), break_long_words=False,
                         break_on_hyphens=False) or [line]


class FittedText(io.TextIOBase):
    """A text stream that writes each whole line to `out` through `fit`: a command's
    prints, made to fit the terminal without touching each print."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.pending = out, ""
        self.lock = threading.Lock()  # a batch's threads print progress

    def write(self, text: str) -> int:
        with self.lock:
            *lines, self.pending = (self.pending + text).split("\n")
            for line in lines:
                self.out.write("\n".join(fit(line)) + "\n")
        return len(text)

    def flush(self) -> None:
        with self.lock:
            if self.pending:
                self.out.write("\n".join(fit(self.pending)))
                self.pending = ""
        self.out.flush()

    def isatty(self) -> bool:
        return self.out.isatty()


def print_verbatim(line: str) -> None:
    """`line` printed whole on standard output, never wrapped, even in fitted_output: a
    command to copy and paste (a shell line broken in two would run as two)."""
    stream: object = sys.stdout
    if isinstance(stream, FittedText):
        stream.flush()  # what came before it, in order
        stream = stream.out
    print(line, file=cast(TextIO, stream))


@contextlib.contextmanager
def fitted_output() -> Iterator[None]:
    """Standard output and error, while in the block, fitted to the terminal (FittedText)."""
    out, err = (cast(TextIO, FittedText(stream)) for stream in (sys.stdout, sys.stderr))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
    finally:
        out.flush()
        err.flush()


def one_line(text: str, limit: int = 0) -> str:
    """`text` on one line (a compiler error under "does not compile:" stays with it),
    cut to `limit` characters when given."""
    line = " ".join(str(text).split())
    if limit and len(line) > limit:
        line = line[:limit - 1].rstrip() + "…"
    return line


@dataclass
class Item:
    """One row of a per-test report (Gradescope, PrairieLearn): a test case or a part."""

    name: str
    points: float
    max_points: float
    outcome: str  # PASS, FAIL, SKIP, FLAG
    message: str  # one line
    output: str  # the full text
    hidden: bool = False
    seconds: float | None = None
    lab: str = ""
    kind: str = ""  # "test" or the part's kind
    status: str = ""  # the TestResult/PartResult status


def _test_output(test: TestResult) -> str:
    lines = [f"Status: {TEST_WORDS.get(test.status, test.status)}",
             f"Group: {test.group}" if test.group else "",
             f"Layer: {test.layer}" + (" (hidden test)" if test.hidden else "")]
    lines += test.messages
    return "\n".join(x for x in lines if x)


def _part_output(part: PartResult) -> str:
    lines = [f"{label(part.kind)}: {STATUS_WORDS.get(part.status, part.status)}, "
             f"{fmt_points(part.points)} / {fmt_points(part.max_points)} points"]
    reason = part_reason(part)
    if reason:
        lines.append(reason)
    summary = part.details.get("summary") if isinstance(part.details, dict) else None
    if summary and summary != reason:
        lines.append(str(summary))
    sol = part_speed_of_light(part)
    if sol is not None:
        lines.append(sol.text())
    return "\n".join(lines)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _distribute(total: float, weights: list[float]) -> list[float]:
    """Per-test scores (about `weights`) that sum to exactly `total` after rounding."""
    scores = [round(w, 4) for w in weights]
    diff = round(total - sum(scores), 4)
    if diff and scores:
        i = max(range(len(scores)), key=lambda k: weights[k])
        scores[i] = round(scores[i] + diff, 4)
    return scores


def score_items(lab: LabResult) -> list[Item]:
    """The lab as scored rows whose points add up to the lab's points.

    A correctness group is shown as its test cases when their points add up to the
    group's; otherwise (not graded, a test counted in two groups, ...) the group is one
    row with the points and its test cases follow as rows worth nothing, for information."""
    prefix = f"Lab {lab_number(lab)}"
    items: list[Item] = []
    by_group: dict[str, list[TestResult]] = {}
    for t in lab.tests:
        by_group.setdefault(t.group, []).append(t)
    used_groups: set[str] = set()

    def test_item(t: TestResult, points: float, max_points: float) -> Item:
        msg = _first_line("\n".join(t.messages)) if test_outcome(t) != PASS else ""
        return Item(f"{prefix} · {t.name}", points, max_points, test_outcome(t),
                    msg or TEST_WORDS.get(t.status, t.status), _test_output(t), t.hidden,
                    t.seconds, lab.lab, "test", t.status)

    for part in lab.parts:
        outcome = part_outcome(part)
        tests = by_group.get(part.name, []) if part.kind == correctness.KIND else []
        if tests:
            used_groups.add(part.name)
        consistent = (tests and part.status == GRADED
                      and abs(sum(t.points for t in tests) - part.points) < 0.01
                      and abs(sum(t.max_points for t in tests) - part.max_points) < 0.01)
        if consistent:
            points = _distribute(part.points, [t.points for t in tests])
            maxes = _distribute(part.max_points, [t.max_points for t in tests])
            items += [test_item(t, p, m) for t, p, m in zip(tests, points, maxes)]
            continue
        host_max = _graded_host_share(part)
        if host_max:  # a group graded without a GPU: its host cases scored, its GPU cases not
            host_points = round(part.points, 4)
            items.append(Item(f"{prefix} · {part.name} (group, host cases)", host_points,
                              host_max, PASS if host_points >= host_max - EPS else FAIL,
                              _first_line(part_reason(part)), _part_output(part), False, None,
                              lab.lab, part.kind, GRADED))
            items.append(Item(f"{prefix} · {part.name} (group, GPU cases)", 0.0,
                              round(part.max_points - host_max, 4), outcome,
                              STATUS_WORDS[NOT_GRADED], _part_output(part), False, None,
                              lab.lab, part.kind, part.status))
            items += [test_item(t, 0.0, 0.0) for t in tests]
            continue
        label = f"{part.name} (group)" if part.kind == correctness.KIND else part.name
        items.append(Item(f"{prefix} · {label}", round(part.points, 4),
                          round(part.max_points, 4), outcome,
                          _first_line(part_reason(part)) or STATUS_WORDS.get(part.status, ""),
                          _part_output(part), False, None, lab.lab, part.kind, part.status))
        items += [test_item(t, 0.0, 0.0) for t in tests]
    for group, tests in by_group.items():  # tests of groups without a part
        if group not in used_groups:
            items += [test_item(t, 0.0, 0.0) for t in tests]
    missing = round(lab.max_points - sum(p.max_points for p in lab.parts), 4)
    if missing > EPS:
        why = lab_reason(lab) or "This lab could not be graded."
        items.append(Item(f"{prefix} · {lab.title or lab.lab}", 0.0, missing, FAIL,
                          _first_line(why), why, False, None, lab.lab, "lab", ""))
    return items


def _graded_host_share(part: PartResult) -> float:
    """The points of a correctness group's host cases when the group was graded without a
    CUDA device (its GPU cases pending, grader/scoring.py); 0 otherwise."""
    if part.kind != correctness.KIND or part.status != NOT_GRADED:
        return 0.0
    host_max = part.details.get("host_max") if isinstance(part.details, dict) else None
    return round(float(host_max), 4) if isinstance(host_max, (int, float)) else 0.0


def pending_points(lab: LabResult) -> float:
    """The points of `lab` that wait for a CUDA device: its parts not graded, less the host
    cases of a group graded without one."""
    return sum(gpu_share(p) for p in lab.parts if p.status == NOT_GRADED)


def gpu_share(part: PartResult) -> float:
    """The points of a part not graded that wait for a CUDA device: its maximum, less the
    host cases of a group graded without one."""
    return part.max_points - _graded_host_share(part)


def bonus_offered(part: PartResult) -> float | None:
    """The points a bonus part offers on top of the lab's maximum (its own maximum is 0),
    or None for a part that is no bonus."""
    offered = part.details.get("bonus") if isinstance(part.details, dict) else None
    return float(offered) if isinstance(offered, (int, float)) else None


def waiting_label(part: PartResult) -> str:
    """A part waiting for a GPU with what waits of it: "Performance (40)", a group whose host
    cases were graded "Exact calculator (15.28 of 25)", a bonus "Bonus speed (+6 bonus)"."""
    offered = bonus_offered(part)
    if offered is not None and part.max_points <= EPS:
        return f"{part.name} (+{fmt_points(offered)} bonus)"
    share = gpu_share(part)
    if share < part.max_points - EPS:
        return f"{part.name} ({fmt_points(share)} of {fmt_points(part.max_points)})"
    return f"{part.name} ({fmt_points(share)})"


def timing_summary(lab: LabResult) -> dict[str, float | None]:
    """Median kernel time (ms), speedup over the baseline and speed relative to the
    reference, from lab.timing; None where not measured."""
    t = lab.timing
    student = t.student if t is not None else None
    ms = student.candidate_ms.median if student is not None and \
        student.candidate_ms is not None else None
    s_speed = t.student_speedup if t is not None else None
    r_speed = t.reference_speedup if t is not None else None
    check = student.verification if student is not None else None
    # A kernel whose timed output was wrong has no meaningful speed: show none.
    wrong = check is not None and check.wrong
    if wrong:
        s_speed = None
    vs_ref = s_speed / r_speed if isinstance(s_speed, (int, float)) and \
        isinstance(r_speed, (int, float)) and r_speed > 0 else None
    return {"ms": ms if isinstance(ms, (int, float)) and not wrong else None,
            "speedup": s_speed if isinstance(s_speed, (int, float)) else None,
            "reference_speedup": r_speed if isinstance(r_speed, (int, float)) else None,
            "vs_reference": vs_ref,
            "wrong_output": bool(wrong)}


def test_counts(lab: LabResult) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "not_run": 0, "total": len(lab.tests)}
    for t in lab.tests:
        o = test_outcome(t)
        counts["passed" if o == PASS else "not_run" if o == SKIP else "failed"] += 1
    return counts


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Text without the characters XML 1.0 cannot hold (escaping is ElementTree's job)."""
    return _XML_BAD.sub("\ufffd", str(text))
