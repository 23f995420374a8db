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

from ..cluster import job_submit
from ..exports import write_exports
from ._common import (GradingFlags, Subcommands, add_format_flag, add_grading_flags,
                      labs_or_say, grade_submission, table, write_result)

HELP = "grade a submission (instructor): result.json and exports into --out"


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("grade", help=HELP, description=HELP)
    p.add_argument("submission", type=Path,
                   help="a folder laid out like the repository, or a git repository; only "
                        "the student files listed in each lab's grading.toml are taken")
    p.add_argument("--labs", default="", help="comma-separated lab numbers (default: all)")
    p.add_argument("--out", type=Path, default=Path("grade-out"),
                   help="where result.json and the exports go (default: grade-out)")
    add_format_flag(p, "comma-separated exports")
    p.add_argument("--html", action="store_true",
                   help="also write report.html (tables and plots, self-contained)")
    add_grading_flags(p, "seed for test inputs and the bench (default: random, recorded)",
                      "grade as on a machine without a GPU (GPU parts: not graded)")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="keep the build here (reused by later runs) instead of a temporary one")
    p.add_argument("--name", default="",
                   help="the submission's name in the outputs (default: its path)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    job_submit.add_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    labs = labs_or_say("grade", [args.labs] if args.labs else [])
    if labs is None:
        return 1
    formats = list(args.format)
    if args.html and "html" not in formats:
        formats.append("html")
    if not args.submission.exists():
        print(f"grade: {args.submission} does not exist", file=sys.stderr)
        return 1
    if args.slurm:
        return job_submit.run_job("grade", args)
    result, status = grade_submission(args.submission, labs, GradingFlags.of(args),
                                      args.work_dir, args.quiet)
    if args.name:
        result.submission = args.name
    path = write_result(result, args.out)
    written = write_exports(result, args.out, formats) if formats else []
    print(table(result))
    for problem in result.errors:
        print(f"grader: {problem}", file=sys.stderr)
    print(f"wrote {path}" + "".join(f", {p}" for p in written))
    return status
