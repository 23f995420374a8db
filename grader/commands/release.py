"""`release OUTDIR [--labs 01,02]`: writes the student copy of the committed tree (no
solutions, no hidden tests, no grader fixtures made from the solutions; with --labs only
those labs' folders, handouts and figures) into OUTDIR as a fresh git repository with one
commit.

Exit status: 0 when written; 1 when it was not (a solution line or hidden test name in a
file that would go in, a released file modified or untracked, a skeleton that is not the
generated one, a lab released before the lab whose answer its given code holds, OUTDIR
not empty, git missing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..course import course_file, head_tree, releases, student_copy
from ._common import Subcommands

HELP = "write the student copy (no solutions, no hidden tests) as a new git repository"


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("release", help=HELP, description=HELP)
    p.add_argument("outdir", type=Path, nargs="?",
                   help="a new or empty folder outside this repository (not with --list)")
    p.add_argument("--labs", default="",
                   help="release only these labs (comma-separated numbers; default: all)")
    p.add_argument("--earlier", default="",
                   help="labs an earlier release already gave the students (lets a lab whose "
                        "given code holds their answers go out without them)")
    p.add_argument("--force", action="store_true", help="replace OUTDIR if it is not empty")
    p.add_argument("--no-commit", action="store_true",
                   help="write the files only (no git init and commit)")
    p.add_argument("--list", action="store_true",
                   help="print what would go in and what is left out; write nothing")
    return p


def run(args: argparse.Namespace) -> int:
    if args.list and args.outdir is not None:  # as the help says: not with --list
        print("release: --list writes nothing: give OUTDIR or --list, not both",
              file=sys.stderr)
        return 1
    try:
        if args.list:
            plan = releases.plan_release(labs=args.labs, earlier=args.earlier)
            for rel in plan.files:
                print(f"  {rel}")
            for rel in plan.left_out:
                print(f"- {rel}")
            for problem in plan.problems:
                print(f"! {problem}")
            for leak in plan.leaks:
                print(f"! {leak}")
            print(f"labs {', '.join(plan.labs)} of {plan.revision[:12]}: {len(plan.files)} "
                  f"file(s) in, {len(plan.left_out)} left out, {len(plan.leaks)} solution "
                  f"line(s) found, {len(plan.problems)} other problem(s)")
            return 0 if plan.ok else 1
        if args.outdir is None:
            print("release: give OUTDIR (or --list)", file=sys.stderr)
            return 1
        made = releases.make_release(args.outdir, force=args.force, commit=not args.no_commit,
                                     labs=args.labs, earlier=args.earlier)
    except (head_tree.ReleaseError, OSError) as err:
        print(f"release: {err}", file=sys.stderr)
        return 1
    print(f"wrote {len(made.files)} file(s) of {made.revision[:12]} to {args.outdir}, labs "
          f"{', '.join(made.labs)} ({len(made.left_out)} left out: solutions, hidden tests, "
          "the grader's fixtures made from the solutions, other labs)")
    if not args.no_commit:
        print("a git repository with one commit; push it where students clone from")
    try:
        gpu_path = course_file.load().gpu_path
    except course_file.CourseError as err:
        print(f"release: {err}", file=sys.stderr)
        return 1
    for note in student_copy.workflow_notes(gpu_path):
        print(f"- {note}")
    return 0
