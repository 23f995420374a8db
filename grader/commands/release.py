"""`release OUTDIR`: writes the student copy (no solutions, no hidden tests, no grader
fixtures made from the solutions) into OUTDIR as a fresh git repository with one commit.

Exit status: 0 when written; 1 when it was not (a solution line found in a file that would
go in, OUTDIR not empty, git missing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import release

HELP = "write the student copy (no solutions, no hidden tests) as a new git repository"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("release", help=HELP, description=HELP)
    p.add_argument("outdir", type=Path, help="a new or empty folder outside this repository")
    p.add_argument("--force", action="store_true", help="replace OUTDIR if it is not empty")
    p.add_argument("--no-commit", action="store_true",
                   help="write the files only (no git init and commit)")
    p.add_argument("--list", action="store_true",
                   help="print what would go in and what is left out; write nothing")
    return p


def run(args: argparse.Namespace) -> int:
    if args.list:
        plan = release.plan_release()
        for rel in plan.files:
            print(f"  {rel}")
        for rel in plan.left_out:
            print(f"- {rel}")
        for leak in plan.leaks:
            print(f"! {leak}")
        print(f"{len(plan.files)} file(s) in, {len(plan.left_out)} left out, "
              f"{len(plan.leaks)} solution line(s) found")
        return 1 if plan.leaks else 0
    try:
        made = release.make_release(args.outdir, force=args.force, commit=not args.no_commit)
    except release.ReleaseError as err:
        print(f"release: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"release: {err}", file=sys.stderr)
        return 1
    print(f"wrote {len(made.files)} file(s) to {args.outdir} ({len(made.left_out)} left out: "
          "solutions, hidden tests, the grader's fixtures made from the solutions)")
    if not args.no_commit:
        print("a git repository with one commit; push it where students clone from")
    return 0
