"""`grade SUBMISSION`: the instructor's command. Grades a submission (a folder laid out like
the repository, or a git repository) against this checkout's pristine copy and writes
result.json plus the chosen exports into --out.

Exit status: 0 when grading completed, whatever the score; 1 when the grader itself could
not grade (bad arguments, CMake could not configure, an internal failure); 130 when
interrupted (result.json is still written with what was known).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import pipeline
from ..exports import write_exports
from ..result import GradeResult
from ._common import Interrupted, Interrupts, Progress, choose_labs, table, write_result

HELP = "grade a submission (instructor): result.json and exports into --out"
DEFAULT_FORMATS = "gradescope,prairielearn,junit,markdown"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("grade", help=HELP, description=HELP)
    p.add_argument("submission", type=Path,
                   help="a folder laid out like the repository, or a git repository; only "
                        "the student files listed in each lab's grading.toml are taken")
    p.add_argument("--labs", default="", help="comma-separated lab numbers (default: all)")
    p.add_argument("--out", type=Path, default=Path("grade-out"),
                   help="where result.json and the exports go (default: grade-out)")
    p.add_argument("--format", default=DEFAULT_FORMATS,
                   help=f"comma-separated exports (default: {DEFAULT_FORMATS}; '' for none)")
    p.add_argument("--html", action="store_true",
                   help="also write report.html (tables and plots, self-contained)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed for test inputs and the bench (default: random, recorded)")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="keep the build here (reused by later runs) instead of a temporary one")
    p.add_argument("--build-timeout", type=float, default=None,
                   help="seconds per build (default: the rubric's build_timeout_s)")
    p.add_argument("--test-timeout", type=float, default=None,
                   help="seconds per test process (default: the rubric's test_timeout_s)")
    p.add_argument("--no-gpu", action="store_true",
                   help="grade as on a machine without a GPU (GPU parts: not graded)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return p


def grade_with(args: argparse.Namespace, submission: Path, labs, work_dir) -> tuple[
        GradeResult, int]:
    """Runs the pipeline with interrupts handled; (result, exit status)."""
    opts = pipeline.Options(submission=submission.resolve(), labs=labs, work_dir=work_dir,
                            build_timeout=args.build_timeout, test_timeout=args.test_timeout,
                            gpu=False if args.no_gpu else None,
                            progress=Progress(args.quiet))
    if args.seed is not None:
        opts.seed = args.seed
    result = pipeline.new_result(opts)
    status = 0
    with Interrupts():
        try:
            pipeline.grade(opts, result)
        except Interrupted as why:
            result.errors.append(f"interrupted ({why}); the results are incomplete")
            status = 130
        except Exception as err:  # noqa: BLE001  the grader's own failure, recorded
            result.errors.append(f"the grader failed: {type(err).__name__}: {err}")
            status = 1
    if status == 0 and result.errors:  # problems of the grader's, not the student's
        status = 1
    return result, status


def run(args: argparse.Namespace) -> int:
    try:
        labs = choose_labs([args.labs] if args.labs else [])
    except KeyError as err:
        print(f"grade: {err.args[0]}", file=sys.stderr)
        return 1
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    if args.html and "html" not in formats:
        formats.append("html")
    if not args.submission.exists():
        print(f"grade: {args.submission} does not exist", file=sys.stderr)
        return 1
    result, status = grade_with(args, args.submission, labs, args.work_dir)
    path = write_result(result, args.out)
    try:
        written = write_exports(result, args.out, formats) if formats else []
    except ValueError as err:
        print(f"grade: exports not written: {err}", file=sys.stderr)
        written = []
        status = status or 1
    print(table(result))
    for problem in result.errors:
        print(f"grader: {problem}", file=sys.stderr)
    print(f"wrote {path}" + "".join(f", {p}" for p in written))
    return status
