"""Grading a class: many submissions, one result folder (grader/README.md, "Grading a class";
the modules: docs/architecture.md, "Batch").

A batch is a plan (`batch.json` in the output folder: the submissions in order, the labs,
the seed, the limits) and one task per submission. A task grades one submission with the
ordinary pipeline and writes `<student>/result.json`, the exports and `<student>/stamp.json`
(what was graded: the student files' hashes and the grader's fingerprint). The local batch
runs tasks as parallel processes; a Slurm job array runs the same task command, one array
index per submission, so the output folder looks the same either way. `collect` turns the
stamps and results into `gradebook.csv`, `summary.md` and `manifest.json`.

GPU stages (GPU tests, compute-sanitizer, the bench, ncu) of all tasks on one machine run
one at a time under an exclusive `flock` on a shared lock file (grader/gpu.py), so two
submissions (or two batches) never time each other. Builds and host tests run in parallel.

    plan.py         the plan, the roster, the stamps (the batch's files)
    fingerprint.py  what a grade depends on: file hashes, the grader's fingerprint, the key
    task.py         one task: one submission graded, its result, exports and stamp written
    schedule.py     the local batch: tasks as processes, a few at a time
    collect.py      the gradebook, the summary and the manifest
    slurm.py        the same tasks as a Slurm job array
    deadlines.py    which commit of a git submission is graded; the late policy
    regrade_rules.py  whom to grade again, rescoring, overrides, the grade history
    integrity.py    the integrity report: identical files and similarity leads
"""

from __future__ import annotations

from ..gpu import DEFAULT_LOCK, GpuLock
from ..pipeline import new_seed
from .collect import FAILURE_KINDS, collect, failure_kind, histogram, summary_markdown
from .fingerprint import (grader_fingerprint, grading_key, grading_modules, submission_hashes,
                          submission_key)
from .plan import (DEFAULT_TIMEOUT, GRADED, GRADER_ERROR, INTERRUPTED, KEEP_ON_RESUME,
                   PLAN_FILE, PLAN_SCHEMA, STAMP_FILE, TIMED_OUT, BatchError, BatchProblems, Plan, Stamp,
                   Submission, is_current, load_result, read_stamp, read_submissions)
from .schedule import Outcome, listen, restore, run_local, task_command, work_root
from .slurm import write_slurm
from .task import run_task

__all__ = ["Plan", "Submission", "Stamp", "BatchError", "BatchProblems", "Outcome", "read_submissions",
           "run_task", "run_local", "listen", "restore", "collect", "write_slurm", "GpuLock",
           "failure_kind", "grader_fingerprint", "grading_key", "grading_modules",
           "submission_hashes", "submission_key", "histogram", "summary_markdown",
           "is_current", "load_result", "read_stamp", "task_command", "work_root", "new_seed",
           "DEFAULT_LOCK", "DEFAULT_TIMEOUT", "PLAN_FILE", "PLAN_SCHEMA", "STAMP_FILE",
           "GRADED", "GRADER_ERROR", "INTERRUPTED", "TIMED_OUT", "KEEP_ON_RESUME",
           "FAILURE_KINDS"]
