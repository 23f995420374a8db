"""Static-check stage: the allow-lists (grader/static_checks/) on the student's object
and preprocessed file, before any of it runs."""

from __future__ import annotations

import shutil
from pathlib import Path

from .. import bwrap, sandbox, static_checks, workspace
from ..parts.gates import STATIC
from ..result import PartResult
from .build import harness_tree, reference_object
from .job import LabJob


def check(job: LabJob) -> tuple[PartResult, list[static_checks.Violation]]:
    """(the Static checks part, the violations). The preprocessing runs the compiler on the
    student's source, so it runs in the student's jail. A check the grader cannot make is
    the grader's failure (RuntimeError), never a pass."""
    lab, student = job.lab, job.trees.student
    rules = static_checks.load_rules(lab.folder, job.rubric.static)
    obj = workspace.object_file(student.build, lab)
    reference = reference_object(job)
    jailed = sandbox.isolation().jailed
    inside_src = Path(bwrap.JAIL_ROOT + "/src") if jailed else student.src
    rel = f"labs/{lab.folder}/{lab.topic}.cu"
    cmd = static_checks.compile_command_from_db(student.build, inside_src / rel)
    if obj is None or cmd is None:
        raise RuntimeError("the static check found no object or compile command for "
                           f"{rel} (student build tree incomplete)")

    def run(argv: list[str]) -> tuple[int | None, str]:
        out = sandbox.run(argv, cwd=student.build, timeout=300, env=student.env,
                          identity=student.identity, jail=student.jail)
        return (None if out.timed_out else out.returncode), out.output_tail

    scratch = student.build / "static" / lab.folder
    shutil.rmtree(scratch, ignore_errors=True)
    sandbox.make_shared_dir(scratch.parent, student.identity)
    sandbox.make_shared_dir(scratch, student.identity)
    try:
        text = (student.src / rel).read_text(errors="replace")
        violations = static_checks.check_submission(
            obj, reference, cmd, rules, str(inside_src), rel,
            run, scratch, static_checks.harness_objects(harness_tree(job), lab.folder, lab.tag), text)
    except static_checks.CheckError as err:
        raise RuntimeError(f"the static check could not be made: {err}") from err
    details = {"violations": [v.describe() for v in violations], "allowed": rules.summary}
    reason = ""
    if violations:
        reason = ("Not allowed in this lab, so correctness (and everything that depends on "
                  "it) scores zero: " + "; ".join(v.describe() for v in violations[:5])
                  + (f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""))
    return STATIC.part(reason, details), violations


def stopped_reason(violations: list[static_checks.Violation]) -> str:
    """The reason of every part a static violation stops."""
    text = "; ".join(v.describe() for v in violations[:5])
    return f"Zero: a static check failed, so your code was not run ({text})."
