"""`list`: the labs, the files the student edits in each, and the points per part."""

from __future__ import annotations

import argparse

from ..parts import metric
from ..parts.kinds import bonus_offers, entries
from ..paths import discover_labs
from ..rubric import RubricError, load_rubric, rubric_warnings
from ._common import Subcommands

HELP = "list the labs, the files you edit in each and their points"


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("list", help=HELP, description=HELP)
    p.add_argument("-v", "--verbose", action="store_true", help="show every rubric part")
    return p


def run(args: argparse.Namespace) -> int:
    labs = discover_labs()
    if not labs:
        print("no labs found (labs/NN_topic folders)")
        return 1
    status = 0
    total = bonus_total = 0.0
    for lab in labs:
        try:
            rubric = load_rubric(lab)
        except (RubricError, OSError) as err:
            print(f"{lab.folder}: rubric problem: {err}")
            status = 1
            continue
        total += rubric.max_points
        # A bonus is on top of the lab's maximum (grader/README.md, "[[correctness]] bonus")
        offers = bonus_offers(rubric)
        bonus = sum(offers.values())
        bonus_total += bonus
        print(f"{lab.number}  {rubric.title}  ({rubric.max_points:g} points"
              + (f", +{bonus:g} bonus)" if bonus else ")"))
        for rel in rubric.student_files:
            print(f"    edit: {rel}")
        for warning in rubric_warnings(rubric):  # allowed, but probably not meant
            print(f"    note: {warning}")
        extra = []
        for entry in entries(rubric):
            if entry.bonus is not None:
                extra.append((entry.name, entry.bonus, entry.measures))
            elif entry.kind != metric.KIND or entry.max_points or args.verbose:
                print(f"    {entry.max_points:5g}  {entry.name}"
                      + (f"  [{entry.measures}]" if args.verbose else ""))
        if extra:
            print(f"    bonus, on top of the {rubric.max_points:g} points:")
            for name, points, measured in extra:
                print(f"    {'+' + format(points, 'g'):>5}  {name}"
                      + (f"  [{measured}]" if args.verbose else ""))
    print(f"{len(labs)} lab(s), {total:g} points in all"
          + (f", +{bonus_total:g} bonus" if bonus_total else ""))
    return status

