"""The grader's subcommands: each module has `add_parser(subparsers)` and `run(args) -> int`
(docs/architecture.md, "Commands")."""

from __future__ import annotations

import argparse
from typing import Protocol

from . import (cache, check, ci, doctor, expect_fail, grade, grade_class, integrations, list_labs,
               new_lab, pr_queue, release, skeleton)
from ._common import Subcommands


class Command(Protocol):
    """What each command's module has, as build_parser and main (grader/__main__.py) use it."""

    def add_parser(self, sub: Subcommands) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: dict[str, Command] = {
    "doctor": doctor,
    "list": list_labs,
    "check": check,
    "grade": grade,
    "skeleton": skeleton,
    "expect-fail": expect_fail,
    "ci": ci,
    "pr-queue": pr_queue,
    "batch": grade_class,
    "cache": cache,
    "release": release,
    "integrations": integrations,
    "new-lab": new_lab,
}
