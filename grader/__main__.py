"""Command line: python3 -m grader <command> ...  (`python3 -m grader --help` lists them)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn


def program() -> str:
    """The command as it was run: this interpreter's name, `-m grader`."""
    return f"{os.path.basename(sys.executable) or 'python3'} -m grader"


try:
    from .commands import COMMANDS
except ModuleNotFoundError as err:  # Python 3.10 without tomli: say what to install
    if err.name != "tomli":
        raise
    sys.exit(f"{program()}: {err.msg}")
from .exports.common import fit, fitted_output  # after the guard: it reads tomli


class Parser(argparse.ArgumentParser):
    """argparse's parser, but a bad command line exits with status 1, as grader/README.md
    documents for every command ("Exit status"), not argparse's 2. Its subcommands' parsers
    are of this class too (add_subparsers makes them of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, "\n".join(fit(f"{self.prog}: error: {message}")) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = Parser(
        prog="python3 -m grader",
        description="CUDA Memory Labs grader: check your work, grade submissions, keep the "
                    "skeletons in sync.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


# The commands whose output is plain text for a person, fitted to the terminal's width as a
# whole (ci and pr-queue write Markdown for GitHub; doctor --json is for programs).
FITTED = ("doctor", "list", "check", "grade", "batch", "release", "cache", "skeleton",
          "expect-fail", "new-lab", "integrations")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.command in FITTED and not getattr(args, "json", False):
        with fitted_output():
            return int(COMMANDS[args.command].run(args))
    return int(COMMANDS[args.command].run(args))


if __name__ == "__main__":
    sys.exit(main())
