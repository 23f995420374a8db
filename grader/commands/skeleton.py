"""`skeleton --check|--write`: the skeletons in labs/ against the solutions' markers."""

from __future__ import annotations

import argparse

from ..course import skeletonize
from ..paths import discover_labs
from ._common import Subcommands

HELP = "regenerate (--write) or verify (--check) the student skeletons from the solutions"


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("skeleton", help=HELP, description=HELP)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail when a skeleton has drifted")
    mode.add_argument("--write", action="store_true", help="rewrite every skeleton")
    return p


def run(args: argparse.Namespace) -> int:
    labs = discover_labs()
    if args.check:
        problems = skeletonize.check(labs)
        for p in problems:
            print(p)
        if not problems:
            print(f"skeletons in sync for {len(labs)} lab(s)")
        return 1 if problems else 0
    for path in skeletonize.write(labs):
        print(f"wrote {path}")
    return 0
