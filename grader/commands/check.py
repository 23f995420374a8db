"""`check NN [NN...]`: the student's command. Grades this working copy's own files for the
given labs, as the instructor's grader would (private build, hidden tests, static checks,
timing on a GPU), and explains each failure: the test, its size and seed, got vs expected,
and the hint.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import pipeline, workspace
from ..cluster import job_submit
from ..exports import write_exports
from ..parts.base import NOT_SUBMITTED
from ..parts.gates import BUILD
from ..parts.kinds import GATE_KINDS, finish_unfinished, measured_on_gpu
from ..paths import ROOT, LabPaths
from ..result import NO_SUBMISSION, PASSED, BuildRecord, GradeResult, LabResult
from ..rubric import Rubric, RubricError, load_rubric
from ..scoring import grade_totals, lab_totals
from ..exports.common import print_verbatim, wrap
from ..exports.table import needs_gpu
from ._common import (GradingFlags, Subcommands, add_grading_flags, grade_submission,
                      labs_or_say, table, write_result)

HELP = "grade your own work for the given labs and explain what fails"
WORK = ROOT / ".grader" / "work"
LAST = ROOT / ".grader" / "last"
MESSAGES = 6  # of a failing test case's messages, shown before its hint


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("check", help=HELP, description=HELP)
    p.add_argument("labs", nargs="+", help="lab numbers, e.g. 04 (or 4, or 04_tiled_matmul)")
    add_grading_flags(p, "rerun with the seed a failure printed (default: a fresh one)",
                      "skip the GPU parts", show_timeouts=False)
    p.add_argument("--html", action="store_true",
                   help="also write .grader/last/report.html (tables and plots)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    # where a Slurm job (--slurm) writes the results and builds; .grader/last and
    # .grader/work otherwise
    p.add_argument("--results", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--work-dir", type=Path, default=None, help=argparse.SUPPRESS)
    job_submit.add_arguments(p)
    return p


def _wrapped(first: str, text: str, rest: str) -> list[str]:
    """A line of feedback wrapped to the terminal's width, never cutting a word (each line
    of `text`, a compiler's error for one, wrapped on its own)."""
    out: list[str] = []
    for i, line in enumerate(text.strip().splitlines() or [""]):
        out += wrap(line, first if i == 0 else rest, rest)
    return out


def feedback(result: GradeResult, limit: int = 6) -> str:
    """What failed and why, for each lab: the student reads this first; every line wrapped
    to the terminal's width (common.wrap)."""
    out: list[str] = []
    for lab in result.labs:
        problems = []
        for part in lab.parts:
            if part.kind in GATE_KINDS and part.reason:
                problems += _wrapped(f"  {part.name}: ", part.reason, "      ")
        failing = [t for t in lab.tests if t.status != PASSED and t.status != "not_run"]
        for test in failing[:limit]:
            where = " (hidden test)" if test.hidden else ""
            problems += wrap(f"{test.name}{where} — {test.status} [{test.group}]", "  ✗ ",
                             "      ")
            # The first few messages, then the hint whatever their number (scoring.py adds
            # it last).
            said = [m for m in test.messages if not m.startswith("hint: ")]
            hints = [m for m in test.messages if m.startswith("hint: ")]
            for msg in said[:MESSAGES] + ([f"… and {len(said) - MESSAGES} more message(s)"]
                                          if len(said) > MESSAGES else []) + hints:
                for line in msg.strip().splitlines()[:8]:
                    problems += wrap(line, "      ", "        ")
        if len(failing) > limit:
            problems.append(f"  … and {len(failing) - limit} more failing test case(s)")
        for part in lab.parts:
            if measured_on_gpu(part.kind) and part.reason \
                    and not needs_gpu(part):  # the table lists those once
                problems += _wrapped(f"  {part.name}: ", part.reason, "      ")
        if problems:
            out.append(f"{lab.lab}:")
            out.extend(problems)
    return "\n".join(out)


def not_submitted(labs: list[LabPaths]) -> dict[str, tuple[Rubric, list[str]]]:
    """The labs whose student file(s) this working copy lacks: their rubric and, per file,
    what `grade` says of it ("labs/04_tiled_matmul/tiled_matmul.cu is not in the
    submission"). A check builds the working copy itself, so such a lab cannot even be
    configured: it is told here, as `grade` tells it, and the other labs are graded."""
    out = {}
    for lab in labs:
        try:
            rubric = load_rubric(lab)
        except (RubricError, OSError):
            continue  # the pipeline says what is wrong with the rubric
        problems = workspace.missing_student_files(ROOT, rubric.student_files)
        if problems:
            out[lab.folder] = (rubric, problems)
    return out


def no_submission_lab(folder: str, rubric: Rubric, problems: list[str]) -> LabResult:
    """A lab without its file, as a grade records it: every part zero, the reason first."""
    reason = ("No submission for this lab: " + "; ".join(problems) + " (put your file "
              "back there and check again).")
    lab = LabResult(folder, rubric.title, 0.0, rubric.max_points,
                    parts=[BUILD.part(reason)],
                    build=BuildRecord(False, 0.0, list(problems)), failure=NO_SUBMISSION)
    finish_unfinished(lab, rubric, NOT_SUBMITTED)
    lab_totals(lab)
    return lab


def run(args: argparse.Namespace) -> int:
    labs = labs_or_say("check", args.labs)
    if labs is None:
        return 1
    if args.slurm:
        return job_submit.run_job("check", args, ROOT, LAST)
    out, work = args.results or LAST, args.work_dir or WORK
    work.parent.mkdir(parents=True, exist_ok=True)
    lacking = not_submitted(labs)
    present = [lab for lab in labs if lab.folder not in lacking]
    flags = GradingFlags.of(args)
    if present:
        result, status = grade_submission(ROOT, present, flags, work, args.quiet)
    else:
        opts = pipeline.Options(submission=ROOT, labs=[])
        if flags.seed is not None:
            opts.seed = flags.seed
        result, status = pipeline.new_result(opts), 0
    for i, lab in enumerate(labs):
        if lab.folder in lacking:
            result.labs.insert(i, no_submission_lab(lab.folder, *lacking[lab.folder]))
    grade_totals(result)
    for _rubric, problems in lacking.values():
        for problem in problems:
            print(f"check: {problem}", file=sys.stderr)
    write_result(result, out)
    if args.html:  # named where it ends up (a Slurm job's results are copied there)
        print(f"report: {LAST / write_exports(result, out, ['html'])[0].name}")
    text = feedback(result)
    if text:
        print(text)
        print()
    print(table(result))
    print(f"seed {result.seed}; details in {Path(LAST, 'result.json').relative_to(ROOT)}")
    print_verbatim(f"rerun with: python3 -m grader check {' '.join(args.labs)} "
                   f"--seed {result.seed}")
    for problem in result.errors:
        print(f"grader: {problem}", file=sys.stderr)
    return status
