"""`list`: the labs, the files the student edits in each, and the points per part."""

from __future__ import annotations

import argparse

from ..paths import discover_labs
from ..rubric import RubricError, load_rubric

HELP = "list the labs, the files you edit in each and their points"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("list", help=HELP, description=HELP)
    p.add_argument("-v", "--verbose", action="store_true", help="show every rubric part")
    return p


def run(args: argparse.Namespace) -> int:
    labs = discover_labs()
    if not labs:
        print("no labs found (labs/NN_topic folders)")
        return 1
    status = 0
    total = 0.0
    for lab in labs:
        try:
            rubric = load_rubric(lab)
        except (RubricError, OSError) as err:
            print(f"{lab.folder}: rubric problem: {err}")
            status = 1
            continue
        total += rubric.max_points
        print(f"{lab.number}  {rubric.title}  ({rubric.max_points:g} points)")
        for rel in rubric.student_files:
            print(f"    edit: {rel}")
        parts = [(g.name, g.points, g.tests) for g in rubric.correctness]
        if rubric.memory_safety:
            parts.append(("Memory safety", rubric.memory_safety.points,
                          ", ".join(rubric.memory_safety.tools)))
        if rubric.performance:
            parts.append(("Performance", rubric.performance.points,
                          f"comparison '{rubric.performance.comparison}'"))
        parts += [(m.name, m.points, m.metric) for m in rubric.metrics if m.points or args.verbose]
        for name, points, what in parts:
            line = f"    {points:5g}  {name}"
            print(line + (f"  [{what}]" if args.verbose else ""))
    print(f"{len(labs)} lab(s), {total:g} points in all")
    return status
