"""The grader's subcommands: each module has `add_parser(subparsers)` and `run(args) -> int`
(docs/architecture.md, "Commands")."""

from . import (cache, check, ci, doctor, expect_fail, grade, grade_class, integrations, list_labs,
               new_lab, pr_queue, release, skeleton)

COMMANDS = {
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
