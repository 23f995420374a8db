"""`expect-fail BINARY SPEC`: what the labNN.skeleton.* CTest tests run (see
grader/course/expected_failures.py)."""

from __future__ import annotations

import argparse

from ..course import expected_failures
from ._common import Subcommands

HELP = "check that a skeleton's test binary fails every case that needs the student's work"


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("expect-fail", help=HELP, description=HELP)
    p.add_argument("binary", help="the labNN_tests_student executable built from the skeleton")
    p.add_argument("spec", help="Catch2 test spec, e.g. [host] or [gpu]")
    return p


def run(args: argparse.Namespace) -> int:
    return expected_failures.run(args.binary, args.spec)
