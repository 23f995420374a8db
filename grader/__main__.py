"""Command line: python3 -m grader <command> ..."""

from __future__ import annotations

import argparse
import sys

from . import expect_fail, skeleton
from .paths import discover_labs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["expect-fail"]:
        return expect_fail.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python3 -m grader")
    sub = parser.add_subparsers(dest="command", required=True)
    sk = sub.add_parser("skeleton", help="the skeletons in labs/ against the solutions")
    mode = sk.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    for name in ("grade", "check", "list", "doctor"):
        sub.add_parser(name, help="not yet available")
    args, _rest = parser.parse_known_args(argv)
    if args.command == "skeleton":
        labs = discover_labs()
        if args.check:
            problems = skeleton.check(labs)
            for p in problems:
                print(p)
            if not problems:
                print(f"skeletons in sync for {len(labs)} lab(s)")
            return 1 if problems else 0
        for path in skeleton.write(labs):
            print(f"wrote {path}")
        return 0
    print("grader not yet available: only 'skeleton' works so far")
    return 2


if __name__ == "__main__":
    sys.exit(main())
